"""Training on every device plan (commgnn.runtime.devices), with real processes.

Without a GPU: ``device: auto`` trains on the CPU naming why, and ``device: cuda`` ends the
run naming the worker. With one GPU: every system with 4 workers sharing it (gloo, host
staged point-to-point), with the same per-step communication counts as on the CPU. With
two GPUs or more: one GPU per worker (NCCL) for the systems that talk point-to-point.

``scripts/gpu-check`` runs this module on a GPU machine.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pandas as pd
import pytest
import torch

from commgnn.core.errors import WorkerFailed
from commgnn.core.spec import RunSpec
from commgnn.data.store import load_dataset, write_dataset
from commgnn.data.synthetic import generate_synthetic
from commgnn.partition import partition_graph, write_partition
from commgnn.sampling.presample import presample
from commgnn.systems.registry import get_system
from commgnn.train.loop import RunPaths, run

pytestmark = pytest.mark.timeout(600)

GPUS = torch.cuda.device_count() if torch.cuda.is_available() else 0
needs_gpu = pytest.mark.skipif(GPUS < 1, reason="needs a CUDA GPU")
needs_two_gpus = pytest.mark.skipif(GPUS < 2, reason="needs two CUDA GPUs")
without_gpu = pytest.mark.skipif(GPUS > 0, reason="this host has a CUDA GPU")

#: Per-step counts that must not depend on the device (summed over a step's records).
STEP_COUNTS = ("remote_rpcs", "remote_rows", "remote_bytes", "cache_hits", "cache_misses",
               "local_rows", "sampling_rpcs", "sampling_rows", "sampling_bytes",
               "allreduce_bytes", "allreduce_messages")
#: Epoch traffic per class on the emulated links (every thread), bytes.
TRAFFIC = ("fetch", "sampling", "allreduce", "migration", "shuffle", "activation",
           "activation_grad", "graph")
EPOCHS = 2
WORKERS = 4


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    """A 1200-node synthetic graph cut 2 and 4 ways by METIS, at random, and into twice as
    many chunks (Grappa), with the 4-way METIS cut presampled for the specs below."""
    root = tmp_path_factory.mktemp("devices")
    ds = generate_synthetic({"preset": "tiny", "nodes": 1200, "seed": 5}, name="tiny")
    write_dataset(ds, root / "dataset")
    cuts = {f"{method}{parts}": {"method": method, "parts": parts, "seed": 0,
                                  **({"chunks": 2 * parts} if method == "chunk" else {})}
            for method in ("metis", "random", "chunk") for parts in (2, 4)}
    for name, spec in cuts.items():
        write_partition(partition_graph(ds, spec), root / name)
    presample(root / "dataset", root / "metis4", root / "presample", fanouts=[5, 5],
              batch_size=64, base_seed=7, epochs=EPOCHS)
    return {"dataset": root / "dataset", "presample": root / "presample",
            **{name: root / name for name in cuts}}


def spec_for(system: str, device: str, options: dict | None = None, model: str = "sage",
             partitioning: str = "metis4", workers: int = WORKERS) -> RunSpec:
    training = {"epochs": EPOCHS, "fanouts": [5, 5], "hidden": 16, "lr": 0.01,
                "dropout": 0.0, "eval_max_nodes": 64, "rpc_timeout_s": 60,
                "collective_timeout_s": 60, "device": device}
    return RunSpec(system=system, dataset="tiny", partitioning=partitioning, model=model,
                   batch_size=64, network="10gbe", network_spec={"preset": "10gbe"}, seed=7,
                   workers=workers, training=training, system_options=options or {})


def run_spec(tmp: Path, inputs: dict[str, Path], spec: RunSpec, name: str) -> Path:
    out = tmp / name
    run(spec, RunPaths(dataset=str(inputs["dataset"]), partition=str(inputs[spec.partitioning]),
                       out=str(out), checkpoints=str(tmp / f"{name}-ckpt"),
                       inputs={"presample": str(inputs["presample"])}),
        get_system(spec.base_system))
    return out


def counts(run_dir: Path) -> tuple[pd.DataFrame, list[dict]]:
    """Every step's counts (by epoch, step, worker) and every epoch's traffic by class."""
    steps = pd.read_csv(run_dir / "steps.csv")
    table = steps[["epoch", "step", "worker", *STEP_COUNTS]].sort_values(
        ["epoch", "step", "worker"]).reset_index(drop=True)
    epochs = [json.loads(line) for line in (run_dir / "epochs.jsonl").read_text().splitlines()]
    traffic = [{c: e.get(f"network_{c}_bytes", 0) for c in TRAFFIC} for e in epochs]
    return table, traffic


#: Every system (and the variants the issue names) as (system, options, model, partitioning,
#: whether its counts are decided by config and seed alone).
CASES = {
    "default-owned": ("default", {}, "sage", "metis4", True),
    "default-global": ("default", {"schedule": "global"}, "sage", "metis4", True),
    "default-deepgcn": ("default", {}, "deepgcn", "metis4", True),
    "default-film": ("default", {}, "film", "metis4", True),
    "oracle": ("oracle", {}, "sage", "metis4", True),
    "rapidgnn": ("rapidgnn", {"n_hot": 200}, "sage", "metis4", True),
    "bgl": ("bgl", {"cache_rows": 200}, "sage", "metis4", True),
    "greendygnn-static": ("greendygnn", {"cache_rows": 200, "window": 2}, "sage", "metis4",
                          True),
    # the heuristic reacts to measured round trips, dqn without a policy is the heuristic
    "greendygnn-heuristic": ("greendygnn", {"cache_rows": 200, "controller": "heuristic"},
                             "sage", "metis4", False),
    "greendygnn-dqn": ("greendygnn", {"cache_rows": 200, "controller": "dqn"}, "sage",
                       "metis4", False),
    "grappa": ("grappa", {"super_epoch_epochs": 1}, "sage", "chunk4", True),
    "grappa-phases": ("grappa", {"active_workers": 2}, "sage", "chunk4", True),
    "grappa-fullgraph": ("grappa", {"mode": "fullgraph"}, "sage", "chunk4", True),
    "hopgnn": ("hopgnn", {"merging": "fixed", "merges": 1}, "sage", "metis4", True),
    "hopgnn-naive": ("hopgnn", {"mode": "naive"}, "sage", "metis4", True),
    "p3": ("p3", {}, "sage", "random4", True),
    "p3-pipelined": ("p3", {"pipeline": 1}, "sage", "random4", True),
    "clustergcn": ("clustergcn", {"clusters": 16}, "gcn", "metis4", True),
}


@needs_gpu
@pytest.mark.parametrize("case", sorted(CASES))
def test_four_workers_share_one_gpu_with_the_cpus_counts(case, inputs, tmp_path):
    system, options, model, partitioning, exact = CASES[case]
    gpu = run_spec(tmp_path, inputs, spec_for(system, "cuda", options, model, partitioning),
                   "gpu")
    summary = json.loads((gpu / "summary.json").read_text())
    plan = summary["device_plan"]
    assert plan["devices"] == [f"cuda:{i % GPUS}" for i in range(WORKERS)]
    assert summary["device_mode"] == ("shared" if GPUS < WORKERS else "exclusive")
    assert summary["clock"] == "accelerator, emulated network"
    assert math.isfinite(summary["final_train_loss"]) and 0 <= summary["test_acc"] <= 1
    if not exact:
        return
    cpu = run_spec(tmp_path, inputs, spec_for(system, "cpu", options, model, partitioning),
                   "cpu")
    (cpu_steps, cpu_traffic), (gpu_steps, gpu_traffic) = counts(cpu), counts(gpu)
    pd.testing.assert_frame_equal(gpu_steps, cpu_steps)
    assert gpu_traffic == cpu_traffic


@needs_two_gpus
@pytest.mark.parametrize("case", ["default-owned", "hopgnn", "p3", "grappa-phases"])
def test_one_gpu_per_worker_talks_over_nccl_with_the_cpus_counts(case, inputs, tmp_path):
    """Two workers, each on a GPU of its own (the 2-way cuts)."""
    system, options, model, partitioning, _ = CASES[case]
    two = partitioning.replace("4", "2")
    gpu = run_spec(tmp_path, inputs, spec_for(system, "cuda", options, model, two, 2), "gpu")
    summary = json.loads((gpu / "summary.json").read_text())
    assert summary["device_mode"] == "exclusive"
    assert summary["device_plan"]["devices"] == ["cuda:0", "cuda:1"]
    assert summary["device_plan"]["backend"] == "cpu:gloo,cuda:nccl"
    cpu = run_spec(tmp_path, inputs, spec_for(system, "cpu", options, model, two, 2), "cpu")
    pd.testing.assert_frame_equal(counts(gpu)[0], counts(cpu)[0])
    assert counts(gpu)[1] == counts(cpu)[1]


def one_worker_run(inputs: dict[str, Path], tmp_path: Path, device: str) -> dict:
    """One worker owning the whole graph (the fixture's dataset cut into 1) on ``device``."""
    write_partition(partition_graph(load_dataset(inputs["dataset"]),
                                    {"method": "random", "parts": 1, "seed": 0}),
                    tmp_path / "one")
    spec = dataclasses.replace(spec_for("default", device, partitioning="one"), workers=1)
    out = run_spec(tmp_path, {**inputs, "one": tmp_path / "one"}, spec, "one")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["remote_rows_per_epoch"] == 0  # one worker owns everything
    return summary


@needs_gpu
def test_one_worker_meters_its_own_gpu(inputs, tmp_path):
    """One worker alone on a GPU: NVML (or the modelled floor) meters it, unshared."""
    summary = one_worker_run(inputs, tmp_path, "cuda")
    assert summary["device"] == "cuda:0" and summary["device_mode"] == "exclusive"
    assert summary["energy_gpu_attribution"] in (
        "metered (NVML): each worker's own GPU",
        "modelled: each worker's GPU at its idle floor (no NVML)")
    assert summary["memory_on"]["peak_mem_bytes"] == "cuda:0"


def test_one_worker_on_the_cpu_runs_the_same_set_up(inputs, tmp_path):
    """The GPU test's set-up (a one-way cut of the fixture's dataset) on the CPU, so that a
    machine without a GPU runs it too."""
    summary = one_worker_run(inputs, tmp_path, "cpu")
    assert summary["device"] == "cpu" and summary["device_mode"] == "cpu"


@without_gpu
def test_auto_without_a_gpu_trains_every_worker_on_the_cpu_saying_why(inputs, tmp_path):
    out = run_spec(tmp_path, inputs, spec_for("default", "auto", workers=WORKERS), "auto")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["device_plan"]["devices"] == ["cpu"] * WORKERS
    assert summary["device_mode"] == "cpu" and summary["device_plan"]["setting"] == "auto"
    assert summary["device_plan"]["reason"].startswith("auto: worker 0 on ")
    assert summary["device_plan"]["reason"].endswith(("torch has no CUDA",
                                                      "no CUDA device visible"))


@without_gpu
def test_cuda_without_a_gpu_ends_the_run_naming_the_worker(inputs, tmp_path):
    with pytest.raises(WorkerFailed, match=r"training.device: 'cuda': worker 0 on \S+ has "
                                           r"no usable GPU"):
        run_spec(tmp_path, inputs, spec_for("default", "cuda", workers=2,
                                            partitioning="metis2"), "cuda")
    assert not (tmp_path / "cuda").exists()
