"""Grappa's chunks and the super-epoch chunk-sweep schedule (Grappa §3.3).

The graph is cut once, at startup, into ``C`` *chunks* (random or METIS). A training
*partition* for one super-epoch is the union of a worker's pinned *base* chunk and one
*swept* chunk; at every repartitioning each worker moves on to its next swept chunk.
The default is ``C = W`` (one base chunk per worker, ``W`` = number of workers); any
``2 <= C`` with ``W <= C`` works.

Schedule rule implemented by :func:`chunk_pairs` (all arithmetic mod ``C``)::

    R = ceil(C / W)              base rotations: R * W >= C, so every chunk is a base
    T = R * (C - 1)              period (chunk_schedule_period); super_epoch is taken mod T
    j, r = divmod(super_epoch mod T, R)
    base(w)  = (r * W + w) mod C
    swept(w) = (base(w) + 1 + j) mod C

The base chunks rotate fastest (round-robin, Grappa §3.3 "coverage guarantee"): within the
first ``R`` super-epochs every chunk is some worker's base, so every training node seeds
batches early in training; ``j`` then advances the sweep. With ``C = W`` there is one
rotation (``R = 1``) and ``T = C - 1`` super-epochs in which worker ``w`` pins chunk ``w``
and meets chunks ``w+1, w+2, ...`` (Grappa Fig. 3: worker 0 trains ``m0+m1``, then
``m0+m2``, ...).

Coverage: over one period every chunk is a base with every sweep offset ``j = 0..C-2``, so
it co-resides with every other chunk; hence every pair of chunks (and every cross-chunk
edge) is inside some worker's partition within ``T`` super-epochs. Within one super-epoch
the base chunks of the workers are distinct (``W <= C`` consecutive residues), and so are
their swept chunks.
"""

from __future__ import annotations

import numpy as np

from commgnn.partition.metis import metis_assign
from commgnn.partition.random import random_assign

CHUNK_METHODS = ("random", "metis")


def chunk_assign(indptr: np.ndarray, indices: np.ndarray, num_chunks: int, chunk_method: str,
                 seed: int, train_mask: np.ndarray | None = None) -> np.ndarray:
    """Node -> chunk owner array (int32) cutting the graph into ``num_chunks`` chunks."""
    n = int(indptr.shape[0] - 1)
    if chunk_method == "random":
        return random_assign(n, num_chunks, seed)
    if chunk_method == "metis":
        return metis_assign(indptr, indices, num_chunks, seed, train_mask=train_mask)
    raise ValueError(f"chunk_method must be one of {CHUNK_METHODS}, got {chunk_method!r}")


def _check(num_chunks: int, num_workers: int) -> None:
    if num_chunks < 2:
        raise ValueError(f"the chunk schedule needs at least 2 chunks, got {num_chunks}")
    if not 1 <= num_workers <= num_chunks:
        raise ValueError(f"need 1 <= workers <= chunks, got {num_workers} workers for "
                         f"{num_chunks} chunks")


def chunk_schedule_period(num_chunks: int, num_workers: int) -> int:
    """Super-epochs after which :func:`chunk_pairs` repeats; covers every chunk pair."""
    _check(num_chunks, num_workers)
    return base_rotations(num_chunks, num_workers) * (num_chunks - 1)


def base_rotations(num_chunks: int, num_workers: int) -> int:
    """``R = ceil(C / W)``: rotations of the base chunks until every chunk was a base."""
    _check(num_chunks, num_workers)
    return -(-num_chunks // num_workers)


def chunk_pairs(num_chunks: int, num_workers: int, super_epoch: int) -> list[tuple[int, int]]:
    """``(base chunk, swept chunk)`` of each worker in ``super_epoch`` (see module docstring)."""
    _check(num_chunks, num_workers)
    if super_epoch < 0:
        raise ValueError(f"super_epoch must be >= 0, got {super_epoch}")
    rotations = base_rotations(num_chunks, num_workers)
    step = super_epoch % chunk_schedule_period(num_chunks, num_workers)
    j, rnd = divmod(step, rotations)
    pairs = []
    for worker in range(num_workers):
        base = (rnd * num_workers + worker) % num_chunks
        pairs.append((base, (base + 1 + j) % num_chunks))
    return pairs


def partition_nodes(chunk_nodes: list[np.ndarray] | tuple[np.ndarray, ...]) -> np.ndarray:
    """Sorted node ids of a partition made of chunks, e.g. ``[book.nodes(b), book.nodes(s)]``."""
    if not chunk_nodes:
        return np.empty(0, dtype=np.int64)
    nodes = np.sort(np.concatenate([np.asarray(c, dtype=np.int64) for c in chunk_nodes]))
    keep = np.ones(nodes.shape[0], dtype=bool)
    keep[1:] = nodes[1:] != nodes[:-1]
    return nodes[keep]
