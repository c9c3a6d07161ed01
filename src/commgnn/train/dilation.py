"""Time dilation ``auto``: how much slower this machine computes a step than the target.

f = this machine's compute-only step ÷ the accelerator's for the same workload (the
reference, :mod:`commgnn.train.references`), at least 1. The compute-only step is forward,
loss, backward and an optimiser step on a copy of the model, features read locally, no
fetch and no sync, timed on every worker at once (they contend for the cores as in
training); the slowest worker's median is the step.

One clock per workload: the pipeline measures the step once per
:class:`~commgnn.train.workload.Workload` (dataset, model, fan-outs, batch, workers, host)
with a long probe (:func:`probe_workload`, the ``dilation`` rule: ``PROBE_STEPS_WORKLOAD``
steps of random training seeds on every worker at once) and every run of that workload
divides by it, whichever system it trains. Each run still times a short probe of its own
(:func:`compute_step_s`) and records it and its distance from the workload's; a run
without the workload's probe (``commgnn train`` alone, or on a host unlike the probe's)
uses its own (:func:`resolve_dilation`).
"""

from __future__ import annotations

import copy
import json
import logging
import socket
import statistics
import time
from datetime import timedelta
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

from commgnn.core.errors import InputError
from commgnn.core.files import write_json_atomic
from commgnn.core.spec import RunSpec
from commgnn.data.store import load_dataset
from commgnn.models.gnn import build_model
from commgnn.runtime.devices import agree, host_view
from commgnn.runtime.launcher import bind_interface, launch, rendezvous_store, worker_threads
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.seeds import derive_seed
from commgnn.train.references import (
    Reference,
    layer_dims,
    layer_rows,
    mean_layer_rows,
    reference_for,
    step_flops,
)
from commgnn.train.workload import Workload, dataset_shape_of, host_identity, step_workload

log = logging.getLogger("commgnn.dilation")

PROBE_WARMUP = 2
PROBE_STEPS = 5
#: The workload probe's timed steps (after ``PROBE_WARMUP`` + 1 more warm-up).
PROBE_STEPS_WORKLOAD = 30


def time_step(model: torch.nn.Module, optimizer, batch, features: torch.Tensor,
              labels: torch.Tensor, device: torch.device) -> float:
    """Seconds of one compute-only step (forward, loss, backward, optimiser)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    loss = F.cross_entropy(model(batch.blocks, features), labels)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - t0


def compute_step_s(ctx, model: torch.nn.Module, steps: int = PROBE_STEPS,
                   warmup: int = PROBE_WARMUP) -> tuple[float, list[list[float]]]:
    """Median seconds of this worker's compute-only step on batches of its own training
    seeds, and the batches' mean rows per layer (see module doc)."""
    probe = copy.deepcopy(model).train()
    optimizer = torch.optim.Adam(probe.parameters(), lr=1e-3)
    seeds = ctx.epoch_seeds(0) or [np.asarray(ctx.dataset.train_idx[:ctx.spec.batch_size])]
    times, shapes = [], []
    for i in range(warmup + steps):
        batch = ctx.sampler.sample(seeds[i % len(seeds)],
                                   derive_seed(ctx.spec.seed, "dilation-probe", ctx.rank, i))
        shapes.append(layer_rows(batch))
        features = torch.from_numpy(
            np.asarray(ctx.dataset.features[batch.input_nodes.numpy()])).to(ctx.device)
        batch = batch.to(ctx.device)
        took = time_step(probe, optimizer, batch, features, ctx.labels_of(batch.seeds),
                         ctx.device)
        if i >= warmup:
            times.append(took)
    return statistics.median(times), mean_layer_rows(shapes)


def _slowest(value: float) -> float:
    t = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return float(t)


def _mean_over_workers(rows: list[list[float]]) -> list[list[float]]:
    t = torch.tensor(rows, dtype=torch.float64)
    dist.all_reduce(t)
    return (t / dist.get_world_size()).tolist()


def _everywhere(flag: bool) -> bool:
    t = torch.tensor([1 if flag else 0], dtype=torch.int64)
    dist.all_reduce(t, op=dist.ReduceOp.MIN)
    return bool(t.item())


def resolve_dilation(ctx, model: torch.nn.Module, dataset_dir: str,
                     configured_ms: float | None, workload_probe: dict | None) -> dict:
    """The run's dilation record, the same on every worker: the workload's probe where it
    was measured on hosts like every worker's (else this run's own probe), divided by the
    reference — the config's ``reference_step_ms``, else the probe's (the table's measured
    or derived one for the workload), else one derived from this run's probe batches (mean
    rows per layer over the workers) — or f = 1 where there is none
    (``reference_step_source: none``). Collective: every worker calls it."""
    dist.barrier()
    here, rows = compute_step_s(ctx, model)
    run_probe = _slowest(here)
    rows = _mean_over_workers(rows)
    work = step_workload(ctx.spec, dataset_shape_of(dataset_dir))
    workload = Workload(work, ctx.spec.workers)
    if workload_probe is not None and workload_probe.get("workload_key") != workload.key:
        raise InputError(f"workload probe of {workload_probe.get('workload')!r} "
                         f"({workload_probe.get('workload_key')}), the run's workload is "
                         f"{workload.key}; rerun snakemake (rule dilation)")
    here_host = host_identity(ctx.spec.workers)
    same_host = _everywhere(workload_probe is not None
                            and workload_probe.get("host") == here_host)
    if workload_probe is not None and not same_host and ctx.rank == 0:
        log.warning("workload probe measured on %s, a worker here is not: using the run's "
                    "probe", workload_probe.get("host"))
    probe = float(workload_probe["probe_s"]) if same_host else run_probe
    if configured_ms is not None:
        reference = Reference(configured_ms / 1e3, "config")
    elif same_host:
        given = workload_probe.get("reference")
        reference = None if given is None else Reference(
            float(given["step_s"]), given["source"], given.get("rule"),
            given.get("device_name"), tuple(given.get("basis", ())))
    else:
        flops = step_flops(rows, layer_dims(work, ctx.dataset.feature_dim,
                                            ctx.dataset.num_classes))
        reference = reference_for(work, flops)
    record = {"workload": workload.describe(), "workload_key": workload.key,
              "compute_step_probe_s": probe, "run_compute_step_probe_s": run_probe,
              "time_dilation_source": "workload probe" if same_host else "run probe"}
    if reference is None:
        return {**record, "time_dilation": 1.0, "reference_step_s": None,
                "reference_step_source": "none", "reference_step_rule": None,
                "reference_step_device": None, "time_dilation_run": 1.0,
                "time_dilation_distance": 0.0}
    factor = max(1.0, probe / reference.step_s)
    run_factor = max(1.0, run_probe / reference.step_s)
    return {**record, "time_dilation": factor, "reference_step_s": reference.step_s,
            "reference_step_source": reference.source,
            "reference_step_rule": reference.rule,
            "reference_step_device": reference.device_name,
            "time_dilation_run": run_factor,
            "time_dilation_distance": run_factor / factor - 1.0}


# -- the workload probe (the pipeline's ``dilation`` step) ------------------------------------
def probe_workload(spec, dataset_dir: str, out: str, steps: int = PROBE_STEPS_WORKLOAD) -> dict:
    """Measure the compute-only step of ``spec``'s workload on ``spec.workers`` workers at
    once and write it to ``out`` (JSON); returns what was written."""

    launch(_probe_worker, (spec.to_json(), str(dataset_dir), str(out), steps), spec.workers,
           master_addr=spec.get("master_addr"), master_port=spec.get("master_port"))
    return json.loads(Path(out).read_text())


def _probe_worker(env, spec_json: str, dataset_dir: str, out: str, steps: int) -> None:
    spec = RunSpec.from_json(spec_json)
    torch.set_num_threads(worker_threads(spec.workers))
    dataset = load_dataset(dataset_dir)
    bind_interface(env, spec.get("interface"))
    timeout = spec.get("collective_timeout_s")
    store = rendezvous_store(env, timeout)
    plan = agree(dist.PrefixStore("plan", store),
                 host_view(env.rank, env.local_rank, spec.get("device")), env.world_size)
    device = plan.device(env.rank)
    dist.init_process_group("gloo", store=dist.PrefixStore("pg", store), rank=env.rank,
                            world_size=env.world_size, timeout=timedelta(seconds=timeout))
    torch.manual_seed(derive_seed(spec.seed, "init") % 2**63)
    model = build_model(spec.architecture, dataset.feature_dim, spec.get("hidden"),
                        dataset.num_classes, num_layers=len(spec.get("fanouts")),
                        dropout=spec.get("dropout"), heads=spec.get("heads"),
                        **spec.model_kwargs()).to(device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=spec.get("lr"))
    labels = torch.from_numpy(np.array(dataset.labels, dtype=np.int64)).to(device)
    sampler = NeighborSampler(dataset.indptr, dataset.indices, list(spec.get("fanouts")))
    rng = np.random.default_rng(derive_seed(spec.seed, "workload-probe", env.rank))
    train = np.asarray(dataset.train_idx)
    times, shapes = [], []
    for i in range(PROBE_WARMUP + 1 + steps):
        seeds = np.sort(rng.choice(train, size=min(spec.batch_size, train.shape[0]),
                                   replace=False))
        batch = sampler.sample(seeds, derive_seed(spec.seed, "workload-probe", env.rank, i))
        shapes.append(layer_rows(batch))
        features = torch.from_numpy(
            np.asarray(dataset.features[batch.input_nodes.numpy()])).to(device)
        on_device = batch.to(device)
        dist.barrier()  # every worker's step at once, as in training
        took = time_step(model, optimizer, on_device, features, labels[on_device.seeds],
                         device)
        if i > PROBE_WARMUP:
            times.append(took)
    medians = [None] * env.world_size
    dist.all_gather_object(medians, statistics.median(times))
    rows = _mean_over_workers(mean_layer_rows(shapes))
    if env.rank == 0:
        work = step_workload(spec, dataset_shape_of(dataset_dir))
        flops = step_flops(rows, layer_dims(work, dataset.feature_dim, dataset.num_classes))
        reference = reference_for(work, flops)
        write_json_atomic(Path(out), {
            "workload": Workload(work, spec.workers).describe(),
            "workload_key": Workload(work, spec.workers).key,
            "step_workload": work.as_dict(), "workers": spec.workers,
            "host": host_identity(spec.workers), "hostname": socket.gethostname(),
            "device": str(device), "steps": steps, "warmup": PROBE_WARMUP + 1,
            "worker_median_s": medians, "probe_s": max(medians),
            "layer_rows": rows, "flops": flops,
            "reference": None if reference is None else reference.as_dict()})
    dist.barrier()
    dist.destroy_process_group()
