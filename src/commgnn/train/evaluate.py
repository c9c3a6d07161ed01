"""Validation and test accuracy over one deterministic sample of each split, shared by every
partitioning and system of a seed (each worker evaluates the sampled nodes it owns).

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


def evaluation_sample(idx: np.ndarray, limit: int, workers: int, seed: int,
                      split: str) -> np.ndarray:
    """The nodes of a split a run evaluates: ``limit × workers`` of them (all when the split
    is no larger), sorted — the first ones of one permutation of the split drawn from the
    run's seed and the split's name alone.

    The same nodes for every partitioning and every system of a seed (accuracies of runs on
    different partitions compare on one sample; a per-partition subsample differed in its
    share of noisy labels), and a larger run's sample holds a smaller one's."""
    idx = np.asarray(idx)
    if idx.shape[0] <= limit * workers:
        return np.sort(idx)
    rng = np.random.default_rng(derive_seed(seed, "eval", split))
    return np.sort(rng.permutation(idx)[:limit * workers])


def eval_nodes(ctx, split: str) -> np.ndarray:
    """This worker's share of :func:`evaluation_sample` (``eval_max_nodes`` per worker on
    average): the sampled nodes it owns.

    A unit of the book (part, or chunk when there are more chunks than workers) is
    evaluated by worker ``unit mod workers``, so every sampled node is evaluated once."""
    sample = evaluation_sample(getattr(ctx.dataset, f"{split}_idx"),
                               int(ctx.spec.get("eval_max_nodes")), ctx.world_size,
                               ctx.spec.seed, split)
    return sample[np.asarray(ctx.partition.book.owner)[sample] % ctx.world_size == ctx.rank]


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
