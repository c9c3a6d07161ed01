"""Time dilation ``auto``: how much slower this machine computes a step than the target.

Every worker (at once, so they contend for the cores as in training) times a few
compute-only steps — forward, loss, backward, optimiser step on a copy of the model,
features read locally, no fetch and no sync — on batches of its own training seeds;
the slowest worker's median, divided by the accelerator's reference step time for the
same workload (``network.reference_step_ms``; H100 figures in benchmarks/README.md),
is the factor ``f`` (at least 1) by which the emulated network is slowed.
"""

from __future__ import annotations

import copy
import statistics
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

from commgnn.sampling.seeds import derive_seed

PROBE_WARMUP = 2
PROBE_STEPS = 5


def compute_step_s(ctx, model: torch.nn.Module, steps: int = PROBE_STEPS,
                   warmup: int = PROBE_WARMUP) -> float:
    """Median seconds of this worker's compute-only step (see module doc)."""
    probe = copy.deepcopy(model).train()
    optimizer = torch.optim.Adam(probe.parameters(), lr=1e-3)
    seeds = ctx.epoch_seeds(0) or [np.asarray(ctx.dataset.train_idx[:ctx.spec.batch_size])]
    times = []
    for i in range(warmup + steps):
        batch = ctx.sampler.sample(seeds[i % len(seeds)],
                                   derive_seed(ctx.spec.seed, "dilation-probe", ctx.rank, i))
        features = torch.from_numpy(
            np.asarray(ctx.dataset.features[batch.input_nodes.numpy()])).to(ctx.device)
        batch = batch.to(ctx.device)
        labels = ctx.labels_of(batch.seeds)
        if ctx.device.type == "cuda":
            torch.cuda.synchronize(ctx.device)
        t0 = time.perf_counter()
        loss = F.cross_entropy(probe(batch.blocks, features), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if ctx.device.type == "cuda":
            torch.cuda.synchronize(ctx.device)
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure_dilation(ctx, model: torch.nn.Module, reference_step_s: float) -> dict:
    """The run's factor: slowest worker's compute step ÷ the reference (at least 1)."""
    dist.barrier()
    here = compute_step_s(ctx, model)
    slowest = torch.tensor([here], dtype=torch.float64)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    factor = max(1.0, float(slowest) / reference_step_s)
    return {"time_dilation": factor, "compute_step_probe_s": float(slowest),
            "reference_step_s": reference_step_s}
