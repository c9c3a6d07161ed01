"""Single-process mini-batch training with sampled neighbourhoods: the accuracy check of a
dataset whose full-graph layers do not fit in memory (Hamilton et al.'s GraphSAGE on Reddit
and OGB's neighbour-sampling GraphSAGE on ogbn-products are trained this way).

:func:`train_sampled` trains on ``ds.train_idx`` in shuffled batches, each a seeded
:class:`~commgnn.sampling.neighbor.NeighborSampler` sample of ``fanouts``, with Adam, and
reports the accuracies of the final model on (at most ``max_eval_nodes`` of) each split,
evaluated with the same fan-outs (sampled inference, as Hamilton et al. do). Everything is
seeded: on the CPU a run is bit-reproducible.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np
import torch
import torch.nn.functional as F

from commgnn.data.store import GraphDataset
from commgnn.models.gnn import build_model
from commgnn.sampling.neighbor import NeighborSampler

__all__ = ["train_sampled"]


def _accuracy(model: torch.nn.Module, sampler: NeighborSampler, x: torch.Tensor,
              labels: torch.Tensor, nodes: np.ndarray, batch_size: int, seed: int) -> float:
    if nodes.shape[0] == 0:
        return float("nan")
    correct = 0
    model.eval()
    with torch.no_grad():
        for i, start in enumerate(range(0, nodes.shape[0], batch_size)):
            batch = sampler.sample(nodes[start:start + batch_size], seed + 1_000_003 * (i + 1))
            logits = model(batch.blocks, x[batch.input_nodes])
            correct += int((logits.argmax(-1) == labels[batch.seeds]).sum())
    return correct / nodes.shape[0]


def train_sampled(ds: GraphDataset, model_name: str = "sage", *, hidden_dim: int = 256,
                  num_layers: int = 2, fanouts: Sequence[int] = (25, 10),
                  batch_size: int = 512, epochs: int = 5, dropout: float = 0.5,
                  lr: float = 0.01, max_batches_per_epoch: int | None = None,
                  max_eval_nodes: int | None = 20_000, seed: int = 0) -> dict:
    """Train ``model_name`` on sampled mini-batches of ``ds`` (module doc).

    ``max_batches_per_epoch`` cuts each epoch short (the batches are a random subset of the
    training nodes all the same); ``max_eval_nodes`` evaluates a fixed random subset of each
    split. Returns ``dict(test_acc, val_acc, train_acc, epochs_run, batches_run, seconds)``.
    """
    if len(fanouts) != num_layers:
        raise ValueError(f"{num_layers} layers need {num_layers} fan-outs, got {list(fanouts)}")
    torch.manual_seed(seed)
    rng = np.random.Generator(np.random.PCG64([seed, 17]))
    x = torch.as_tensor(np.asarray(ds.features, dtype=np.float32))
    labels = torch.as_tensor(np.asarray(ds.labels, dtype=np.int64))
    sampler = NeighborSampler(ds.indptr, ds.indices, list(fanouts))
    model = build_model(model_name, x.shape[1], hidden_dim, ds.num_classes, num_layers, dropout)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    train = np.asarray(ds.train_idx, dtype=np.int64)

    start = time.perf_counter()
    batches_run = 0
    for epoch in range(epochs):
        model.train()
        order = rng.permutation(train)
        steps = range(0, order.shape[0], batch_size)
        for step, first in enumerate(steps):
            if max_batches_per_epoch is not None and step >= max_batches_per_epoch:
                break
            batch = sampler.sample(np.sort(order[first:first + batch_size]),
                                   seed * 7919 + epoch * 104_729 + step)
            optimizer.zero_grad(set_to_none=True)
            logits = model(batch.blocks, x[batch.input_nodes])
            F.cross_entropy(logits, labels[batch.seeds]).backward()
            optimizer.step()
            batches_run += 1

    def subset(idx) -> np.ndarray:
        idx = np.asarray(idx, dtype=np.int64)
        if max_eval_nodes is not None and idx.shape[0] > max_eval_nodes:
            idx = np.sort(rng.choice(idx, size=max_eval_nodes, replace=False))
        return idx

    evals = {name: _accuracy(model, sampler, x, labels, subset(idx), 4 * batch_size, seed)
             for name, idx in (("test_acc", ds.test_idx), ("val_acc", ds.val_idx),
                               ("train_acc", ds.train_idx))}
    return {**evals, "epochs_run": epochs, "batches_run": batches_run,
            "seconds": time.perf_counter() - start}
