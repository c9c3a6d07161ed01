"""A training workload: what one compute step costs, whichever system runs it.

Time dilation compares this machine's compute-only step with an accelerator's for the
*same work*. Two keys say what "the same" is:

- :class:`StepWorkload` — what one GPU step depends on: the graph (the dataset's
  generating parameters, less its split and seed: they change which nodes seed a batch,
  not the shape of the blocks), the model (architecture, depth, hidden width, heads,
  arguments), the fan-outs and the batch size. Reference step times are keyed by it
  (:mod:`commgnn.train.references`).
- :class:`Workload` — a step workload trained by ``workers`` workers on one host: what
  the dilation factor f depends on (the workers share the host's cores). Every system of
  one workload in a pipeline gets the same f (:mod:`commgnn.train.dilation`).
"""

from __future__ import annotations

import hashlib
import json
import platform
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from commgnn.runtime.launcher import worker_threads  # the loop's rule, not a copy

#: Dataset keys that do not change the blocks a batch samples (which nodes train, and
#: the generator's random draw of a graph of the same shape).
NOT_SHAPE = ("split", "seed")


def dataset_shape(source: dict) -> dict:
    """The parameters that shape a dataset's graph and features: for the synthetic
    generator its full resolved parameters (so ``{preset: arxiv-like}`` equals the preset
    spelt out), for other sources the config entry; without :data:`NOT_SHAPE`."""
    source = dict(source)
    if source.get("source", "synthetic") == "synthetic":
        from commgnn.data.synthetic import resolve_synthetic_spec  # numba: only when used
        source = {"source": "synthetic", **resolve_synthetic_spec(source)}
    return {k: v for k, v in sorted(source.items()) if k not in NOT_SHAPE}


def dataset_shape_of(dataset_dir: str | Path) -> dict:
    """:func:`dataset_shape` of a built dataset, from the config its ``meta.json`` records."""
    meta = json.loads((Path(dataset_dir) / "meta.json").read_text())
    if meta.get("source"):
        return dataset_shape(meta["source"])
    stats = meta.get("stats", {})  # written without its config (a library call): its sizes
    return {"source": "unrecorded", "name": meta["name"], "nodes": stats.get("num_nodes"),
            "edges": stats.get("num_edges"), "feature_dim": stats.get("feature_dim"),
            "classes": stats.get("num_classes")}


def _key(data: dict) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class StepWorkload:
    """What one compute step on a GPU depends on (module doc)."""

    dataset: dict
    architecture: str
    layers: int
    hidden: int
    heads: int
    fanouts: tuple[int, ...]
    batch: int
    model_kwargs: dict = field(default_factory=dict)

    @property
    def key(self) -> str:
        """A short stable hash of everything above."""
        return _key(self.as_dict())

    @property
    def family(self) -> str:
        """Architecture, depth, width and arguments: the workloads a reference may be
        derived from share it (:func:`commgnn.train.references.reference_for`)."""
        data = {"architecture": self.architecture, "layers": self.layers,
                "hidden": self.hidden, "heads": self.heads, "model_kwargs": self.model_kwargs}
        return _key(data)

    def as_dict(self) -> dict:
        data = asdict(self)
        data["fanouts"] = list(self.fanouts)
        return data

    @classmethod
    def from_dict(cls, data: dict) -> StepWorkload:
        data = dict(data)
        data["fanouts"] = tuple(int(f) for f in data["fanouts"])
        return cls(**data)

    def describe(self) -> str:
        """``sage-2 h128 fan-outs 10x15 batch 1024 on arxiv-like (169,343 nodes)``."""
        graph = self.dataset.get("preset") or self.dataset.get("name") or \
            self.dataset.get("source", "?")
        nodes = self.dataset.get("nodes")
        where = f"{graph} ({nodes:,} nodes)" if isinstance(nodes, int) else str(graph)
        heads = f" x{self.heads} heads" if self.architecture == "gat" else ""
        return (f"{self.architecture}-{self.layers} h{self.hidden}{heads} fan-outs "
                f"{'x'.join(map(str, self.fanouts))} batch {self.batch} on {where}")


def step_workload(spec, dataset: dict) -> StepWorkload:
    """The step workload of a run spec (:class:`~commgnn.core.spec.RunSpec`) on the
    dataset whose shape is ``dataset`` (:func:`dataset_shape`)."""
    kwargs = spec.model_kwargs()
    return StepWorkload(dataset=dict(dataset), architecture=spec.architecture,
                        layers=len(spec.get("fanouts")), hidden=int(spec.get("hidden")),
                        heads=int(spec.get("heads")) if spec.architecture == "gat" else 1,
                        fanouts=tuple(int(f) for f in spec.get("fanouts")),
                        batch=int(spec.batch_size), model_kwargs=json.loads(
                            json.dumps(kwargs, sort_keys=True)))


#: The training settings a workload's probe reads (:func:`commgnn.train.dilation.probe_workload`):
#: the model and step, where its workers meet, and how long they wait for one another.
PROBE_TRAINING = ("fanouts", "hidden", "heads", "dropout", "lr", "device", "interface",
                  "master_addr", "master_port", "collective_timeout_s")


def probe_spec(spec):
    """The run spec a workload's probe runs with: ``spec`` (a
    :class:`~commgnn.core.spec.RunSpec`) less what the probe does not read — its system,
    partitioning, network, their options and the other training settings — and with seed
    0, so every run of one workload names the same probe (a config that lists another
    system first, or runs seed 1 alone, finds the probe it made before)."""
    return replace(spec, system="probe", partitioning="none", network="none",
                   network_spec={}, seed=0, system_options={},
                   training={k: spec.training[k] for k in PROBE_TRAINING if k in spec.training})


def host_identity(workers: int) -> dict:
    """What makes two hosts compute a worker's step alike: the CPU model and the threads
    each of ``workers`` workers gets (hostnames differ between identical cluster nodes)."""

    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": model, "threads_per_worker": worker_threads(workers)}


@dataclass(frozen=True)
class Workload:
    """A step workload trained by ``workers`` workers: what f is measured for."""

    step: StepWorkload
    workers: int

    @property
    def key(self) -> str:
        return f"{self.step.key}-w{self.workers}"

    def describe(self) -> str:
        return f"{self.step.describe()}, {self.workers} workers"
