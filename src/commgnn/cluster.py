"""What each pipeline job asks a cluster scheduler for, derived from the config.

The workflow (``workflow/rules/*.smk``) passes these to Snakemake as rule ``resources:``;
the SLURM executor plugin turns them into ``sbatch`` options and a workstation run
(``snakemake --cores N``) ignores everything but the thread counts. Requests follow from
the dataset's size (known from its config before it exists: a generator's parameters or a
public dataset's published shape), the epochs and the model depth, with headroom over
what this project measured:

* memory (``mem_mb``, per node): on products-like (2.0 GB on disk) the dataset job peaked at
  3.7 GB (1.9 x the dataset), METIS partitioning at 15.3 GB (7.7 x), presampling at 1.5 GB
  (0.75 x) and a 4-worker training run at 13.7 GB resident (7.3 GB proportional: the
  workers share the memory-mapped dataset). The factors below cover those peaks.
* runtime (``runtime``, minutes): a 2-core CPU trains SAGE-2 at about 1.4 ms per training
  node per epoch (products-like, 4 workers, evaluation included); a train job asks for
  3 x that per epoch, doubled per layer beyond two, plus 10 minutes for start-up.

A train cell is one SLURM job with one task per worker (``tasks``), launched by ``srun``
(:func:`srun_prefix`); ``cluster.workers_per_node`` spreads the tasks over ``nodes``, and
``training.device: cuda`` asks for one GPU per worker. ``cluster.mem_factor`` and
``cluster.runtime_factor`` scale every request; Snakemake's ``--set-resources`` overrides
any single one.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

#: Published shapes of the public datasets: nodes, directed (symmetrised) edges, feature
#: dimension, training nodes.
PUBLIC_SHAPES: dict[tuple[str, str], tuple[int, int, int, int]] = {
    ("planetoid", "cora"): (2_708, 10_556, 1_433, 140),
    ("planetoid", "citeseer"): (3_327, 9_104, 3_703, 120),
    ("planetoid", "pubmed"): (19_717, 88_648, 500, 60),
    ("ogb", "ogbn-arxiv"): (169_343, 2_332_486, 128, 90_941),
    ("ogb", "ogbn-products"): (2_449_029, 123_718_280, 100, 196_615),
    ("ogb", "ogbn-papers100M"): (111_059_956, 3_231_371_744, 128, 1_207_179),
    ("reddit", "reddit"): (232_965, 114_615_892, 602, 153_431),
}

# Measured factors (module docstring), rounded up; MB of memory per MB of dataset.
DATASET_MEM_FACTOR = 2.5
PARTITION_MEM_FACTOR = 10.0
PRESAMPLE_MEM_FACTOR = 1.0
WORKER_MEM_FACTOR = 1.5
BASE_MEM_MB = 1000  # interpreter, torch and the framework, per process
LIGHT_MEM_MB = 2000  # tables, figures, policy training
SECONDS_PER_TRAIN_NODE = 1.4e-3  # one epoch of SAGE-2 on a 2-core CPU, per training node
RUNTIME_HEADROOM = 3.0
STARTUP_MIN = 10


@dataclass(frozen=True)
class DatasetShape:
    """The size of a dataset, as its config promises."""

    nodes: int
    edges: int  # directed, after symmetrisation
    feature_dim: int
    train_nodes: int

    @property
    def mb(self) -> float:
        """On-disk (and in-memory) size: float32 features, int64 CSR, labels and splits."""
        return (self.nodes * (4 * self.feature_dim + 8 + 8 + 8) + self.edges * 8) / 2**20


def dataset_shape(spec: dict) -> DatasetShape:
    """The shape of the dataset ``spec`` (a validated ``datasets.<name>`` entry)."""
    source = spec["source"]
    if source == "synthetic":
        from commgnn.data.synthetic import resolve_synthetic_spec  # deferred: imports numpy

        p = resolve_synthetic_spec(spec)
        nodes = int(p["nodes"])
        return DatasetShape(nodes, int(nodes * float(p["avg_degree"])), int(p["feature_dim"]),
                            int(nodes * float(p["split"]["train"])))
    if source == "rmat":
        from commgnn.data.rmat import resolve_rmat_spec  # deferred: imports numpy

        p = resolve_rmat_spec(spec)
        nodes = 2 ** int(p["scale"])
        return DatasetShape(nodes, 2 * nodes * int(p["edge_factor"]), int(p["feature_dim"]),
                            int(nodes * float(p["split"]["train"])))
    key = (source, spec.get("name", source))
    if key not in PUBLIC_SHAPES:
        raise ValueError(f"no known shape for dataset source {source!r} name {key[1]!r}")
    return DatasetShape(*PUBLIC_SHAPES[key])


@dataclass(frozen=True)
class ClusterSettings:
    """The config's ``cluster`` section (every key optional)."""

    workers_per_node: int | None = None  # None: all of a run's workers on one node
    cpus_per_worker: int = 4
    mem_factor: float = 1.0
    runtime_factor: float = 1.0

    @classmethod
    def from_config(cls, config: dict) -> ClusterSettings:
        return cls(**config.get("cluster", {}))


def _mem(mb: float, settings: ClusterSettings) -> int:
    return math.ceil(mb * settings.mem_factor)


def _minutes(minutes: float, settings: ClusterSettings) -> int:
    return math.ceil(minutes * settings.runtime_factor)


def epoch_minutes(shape: DatasetShape, layers: int) -> float:
    """Asked-for minutes of one training epoch (headroom included)."""
    depth = 2.0 ** max(0, layers - 2)
    return RUNTIME_HEADROOM * shape.train_nodes * SECONDS_PER_TRAIN_NODE * depth / 60


def dataset_resources(shape: DatasetShape, settings: ClusterSettings) -> dict:
    """Generating or converting the dataset."""
    return {"mem_mb": _mem(BASE_MEM_MB + DATASET_MEM_FACTOR * shape.mb, settings),
            "runtime": _minutes(STARTUP_MIN + shape.mb / 100, settings)}


def partition_resources(shape: DatasetShape, settings: ClusterSettings) -> dict:
    """Partitioning (METIS holds several copies of the graph)."""
    return {"mem_mb": _mem(BASE_MEM_MB + PARTITION_MEM_FACTOR * shape.mb, settings),
            "runtime": _minutes(STARTUP_MIN + shape.mb / 20, settings)}


def presample_resources(shape: DatasetShape, epochs: int, settings: ClusterSettings) -> dict:
    """Presampling every worker's batches for every epoch."""
    return {"mem_mb": _mem(BASE_MEM_MB + PRESAMPLE_MEM_FACTOR * shape.mb, settings),
            "runtime": _minutes(STARTUP_MIN + epochs * shape.mb / 200, settings)}


def light_resources(settings: ClusterSettings, runtime: int = 30) -> dict:
    """Tables, figures and the policy's training: small, whatever the dataset."""
    return {"mem_mb": _mem(LIGHT_MEM_MB, settings), "runtime": _minutes(runtime, settings)}


def _worker_mem(shape: DatasetShape) -> float:
    return BASE_MEM_MB + WORKER_MEM_FACTOR * shape.mb


def train_resources(shape: DatasetShape, workers: int, epochs: int, layers: int,
                    device: str, settings: ClusterSettings, external: bool = False) -> dict:
    """One train cell: a task per worker (``mpi``: launched by ``srun``), spread over
    ``nodes`` when ``workers_per_node`` asks for it; memory is per node. A system that
    starts its own workers on one host (``external``, e.g. ``distdgl``) gets one task with
    every worker's CPUs and memory."""
    if external:
        return {"tasks": 1, "cpus_per_task": workers * settings.cpus_per_worker,
                "mem_mb": _mem(BASE_MEM_MB + workers * _worker_mem(shape), settings),
                "runtime": _minutes(STARTUP_MIN + epochs * epoch_minutes(shape, layers),
                                    settings)}
    per_node = min(workers, settings.workers_per_node or workers)
    nodes = math.ceil(workers / per_node)
    res = {"tasks": workers, "cpus_per_task": settings.cpus_per_worker,
           "mem_mb": _mem(BASE_MEM_MB + per_node * _worker_mem(shape), settings),
           "runtime": _minutes(STARTUP_MIN + epochs * epoch_minutes(shape, layers), settings)}
    if workers > 1:
        res["mpi"] = "srun"
    if nodes > 1:
        res["nodes"] = nodes
    if device == "cuda":
        res.update(gpu=workers, tasks_per_gpu=1)
    return res


def control_resources(shape: DatasetShape, workers: int, runs: int, epochs_per_run: int,
                      layers: int, device: str, settings: ClusterSettings) -> dict:
    """Calibration or validation: ``runs`` short runs whose ``workers`` are spawned inside
    one task (all on one node), plus the RPC measurements."""
    res = {"cpus_per_task": workers * settings.cpus_per_worker,
           "mem_mb": _mem(BASE_MEM_MB + workers * _worker_mem(shape), settings),
           "runtime": _minutes(STARTUP_MIN + runs * (STARTUP_MIN / 2 + epochs_per_run *
                                                     epoch_minutes(shape, layers)), settings)}
    if device == "cuda":
        res["gpu"] = workers
    return res


def srun_prefix(resources: dict, environ: dict | None = None) -> str:
    """The command prefix that starts a train cell's workers, one per SLURM task.

    Inside a SLURM allocation (``SLURM_JOB_ID`` set) a cell with ``mpi`` in its resources
    runs as ``srun --ntasks=<workers>``, which ends the step when any task fails
    (``--kill-on-bad-exit``) and labels each output line with its rank; anywhere else the
    prefix is empty and the local launcher spawns the workers.
    """
    environ = os.environ if environ is None else environ
    if not environ.get("SLURM_JOB_ID") or not resources.get("mpi"):
        return ""
    parts = [str(resources["mpi"]), "--kill-on-bad-exit=1", "--label",
             f"--ntasks={resources['tasks']}", f"--cpus-per-task={resources['cpus_per_task']}"]
    if resources.get("nodes"):
        parts.append(f"--nodes={resources['nodes']}")
    if resources.get("gpu"):
        parts.append("--gpus-per-task=1")
    return " ".join(parts)
