"""Shared fixtures: repository paths and the optional ../shared material."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from commgnn.catalog import system_declarations
from commgnn.core.spec import RunSpec
from commgnn.data.store import write_dataset
from commgnn.data.synthetic import generate_synthetic
from commgnn.partition import partition_graph, write_partition
from commgnn.report.palette import use_declarations
from commgnn.sampling.presample import presample
from commgnn.systems.registry import get_system
from commgnn.train.loop import RunPaths, run

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
PLANETOID = SHARED / "datasets" / "planetoid"


@pytest.fixture(scope="session", autouse=True)
def _systems_told_to_the_report() -> None:
    """What ``commgnn figure`` does before it draws: the report takes every system's colour
    and figure labels (tests call the figure modules directly)."""
    use_declarations(system_declarations())


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def planetoid_dir() -> Path:
    if not (PLANETOID / "ind.cora.x").is_file():
        pytest.skip("../shared/datasets/planetoid is absent")
    return PLANETOID


@pytest.fixture(scope="session")
def tiny_pipeline(repo_root, tmp_path_factory) -> Path:
    """The working directory of one real Snakemake run of ``tiny_pipeline.TINY`` (its
    results under ``out/``), made once per session and shared: read it, never write it.
    ``$COMMGNN_TEST_TINY_PIPELINE``: a directory to run it in instead (kept, so a rerun of
    a few tests finds it finished: Snakemake has nothing to do)."""
    from tiny_pipeline import TINY, snakemake

    kept = os.environ.get("COMMGNN_TEST_TINY_PIPELINE")
    workdir = Path(kept) if kept else tmp_path_factory.mktemp("tiny-pipeline")
    workdir.mkdir(parents=True, exist_ok=True)
    proc = snakemake(repo_root, workdir, TINY)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return workdir


@pytest.fixture(scope="session")
def tiny_inputs(tmp_path_factory) -> tuple[Path, Path]:
    """A 600-node synthetic dataset and its 2-part METIS partition, on disk."""
    root = tmp_path_factory.mktemp("tiny")
    ds = generate_synthetic({"preset": "tiny", "nodes": 600, "seed": 5}, name="tiny")
    write_dataset(ds, root / "dataset")
    part = partition_graph(ds, {"method": "metis", "parts": 2, "seed": 0})
    write_partition(part, root / "partition")
    return root / "dataset", root / "partition"


def tiny_spec(system: str = "default", epochs: int = 2, network: str | dict = "none",
              system_options: dict | None = None, **training) -> RunSpec:
    """A 2-worker run spec on :func:`tiny_inputs` (fan-outs [5, 5], batch 64, seed 7), on
    the CPU (``device="cuda"`` for a GPU: on a GPU host ``auto`` would move every test's
    run there, where atomics make losses inexact)."""
    net = {"preset": network} if isinstance(network, str) else network
    base = {"epochs": epochs, "fanouts": [5, 5], "hidden": 16, "lr": 0.01,
            "eval_max_nodes": 50, "rpc_timeout_s": 20, "collective_timeout_s": 20,
            "device": "cpu"}
    base.update(training)
    return RunSpec(system=system, dataset="tiny", partitioning="metis2", model="sage",
                   batch_size=64, network="net" if isinstance(network, dict) else network,
                   network_spec=net, seed=7, workers=2, training=base,
                   system_options=system_options or {})


@pytest.fixture(scope="session")
def make_spec():
    return tiny_spec


#: Epochs of :func:`tiny_presampled` (and of the runs that read it).
TINY_PRESAMPLE_EPOCHS = 3


@pytest.fixture(scope="session")
def tiny_presampled(tiny_inputs, tmp_path_factory) -> Path:
    """The tiny inputs presampled for :func:`tiny_spec`'s fan-outs, batch and seed, for
    :data:`TINY_PRESAMPLE_EPOCHS` epochs (RapidGNN's and GreenDyGNN's blocks)."""
    spec = tiny_spec(epochs=TINY_PRESAMPLE_EPOCHS)
    out = tmp_path_factory.mktemp("presample") / "blocks"
    presample(*tiny_inputs, out, fanouts=spec.get("fanouts"), batch_size=spec.batch_size,
              base_seed=spec.seed, epochs=TINY_PRESAMPLE_EPOCHS)
    return out


def run_tiny(tmp: Path, inputs: tuple[Path, Path], spec: RunSpec, name: str = "run",
             presample: Path | None = None) -> Path:
    """Run ``spec`` on the tiny inputs into ``tmp/name``; returns the run directory."""
    dataset, partition = inputs
    out = tmp / name
    run(spec, RunPaths(dataset=str(dataset), partition=str(partition), out=str(out),
                       checkpoints=str(tmp / f"{name}-ckpt"),
                       inputs={"presample": str(presample)} if presample else {}),
        get_system(spec.base_system))
    return out


@pytest.fixture(scope="session")
def run_on_tiny():
    return run_tiny


def step_records(out: Path, worker: int) -> list[dict]:
    return [json.loads(line) for line in (out / f"steps_w{worker}.jsonl").read_text()
            .splitlines()]


@pytest.fixture(scope="session")
def read_steps():
    return step_records


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MB tmpfs (skips where mounting is not permitted)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
