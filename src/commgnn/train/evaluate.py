"""Validation and test accuracy over every worker's owned nodes (a deterministic subsample).

Evaluation blocks use full neighbourhoods (or ``training.eval_fanouts``); features come
through the system's own :meth:`fetch`, so evaluation traffic is real and emulated too, but
it is kept out of the training metrics and epoch time.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.distributed as dist

from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.seeds import derive_seed


def eval_nodes(ctx, split: str) -> np.ndarray:
    """This worker's owned nodes of ``split``, subsampled to ``eval_max_nodes``.

    A unit of the book (part, or chunk when there are more chunks than workers) is
    evaluated by worker ``unit mod workers``, so every node is evaluated by someone."""
    idx = np.asarray(getattr(ctx.dataset, f"{split}_idx"))
    own = idx[np.asarray(ctx.partition.book.owner)[idx] % ctx.world_size == ctx.rank]
    limit = ctx.spec.get("eval_max_nodes")
    if own.shape[0] > limit:
        rng = np.random.default_rng(derive_seed(ctx.spec.seed, "eval", split, ctx.rank))
        own = np.sort(rng.choice(own, size=limit, replace=False))
    return own


@torch.no_grad()
def _correct(ctx, system, model, nodes: np.ndarray, epoch: int) -> tuple[int, int]:
    fanouts = ctx.spec.get("eval_fanouts")
    num_layers = len(ctx.spec.get("fanouts"))
    sampler = NeighborSampler(ctx.dataset.indptr, ctx.dataset.indices, fanouts) \
        if fanouts else None
    correct = 0
    batch_size = ctx.spec.batch_size
    for start in range(0, nodes.shape[0], batch_size):
        seeds = nodes[start:start + batch_size]
        if sampler is None:
            batch = ctx.sampler.sample_full(seeds, num_layers)
        else:
            batch = sampler.sample(seeds, derive_seed(ctx.spec.seed, "eval", ctx.rank, epoch,
                                                      start))
        features, _ = system.fetch(batch.input_nodes)
        batch = batch.to(ctx.device)
        logits = model(batch.blocks, features.to(ctx.device))
        correct += int((logits.argmax(dim=1) == ctx.labels_of(batch.seeds)).sum())
    return correct, int(nodes.shape[0])


def evaluate(ctx, system, model: torch.nn.Module, epoch: int) -> dict:
    """Global validation and test accuracy (all workers take part)."""
    was_training = model.training
    model.eval()
    result = {}
    for split in ("val", "test"):
        correct, total = _correct(ctx, system, model, eval_nodes(ctx, split), epoch)
        sums = torch.tensor([correct, total], dtype=torch.float64)
        dist.all_reduce(sums)
        result[f"{split}_acc"] = float(sums[0] / sums[1]) if sums[1] > 0 else float("nan")
    model.train(was_training)
    return result
