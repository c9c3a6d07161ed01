"""Which seed nodes each worker trains on, step by step: the shared training schedule.

Used identically by online training (``commgnn.train``) and by presampling, so both see
the same batches for the same (base seed, worker, epoch, step).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from commgnn.sampling.batches import epoch_batches, global_order


def worker_train_nodes(train_idx: np.ndarray, owner: np.ndarray,
                       parts: int | Sequence[int]) -> np.ndarray:
    """Training nodes owned by partition ``parts`` (or any of several; sorted global ids)."""
    train = np.asarray(train_idx)
    return train[np.isin(np.asarray(owner)[train], np.atleast_1d(np.asarray(parts)))]


def steps_per_epoch(train_idx: np.ndarray, owner: np.ndarray, workers: int,
                    batch_size: int) -> int:
    """Synchronous training needs one step count for all workers: the largest worker's."""
    return placement_steps(train_idx, owner, [(w,) for w in range(workers)], batch_size)


def placement_steps(train_idx: np.ndarray, owner: np.ndarray,
                    parts_of_worker: Sequence[Sequence[int]], batch_size: int) -> int:
    """Steps per epoch when worker ``w`` trains partitions ``parts_of_worker[w]``: the
    largest active worker's batch count (at least 1)."""
    train_owner = np.asarray(owner)[np.asarray(train_idx)]
    counts = np.bincount(train_owner)
    largest = max((sum(int(counts[p]) for p in parts if p < counts.shape[0])
                   for parts in parts_of_worker), default=0)
    return max(1, math.ceil(largest / batch_size))


def global_epoch_seed_nodes(train_idx: np.ndarray, workers: int, batch_size: int,
                            base_seed: int, worker: int, epoch: int) -> list[np.ndarray]:
    """DGL-style global schedule: the training set shuffled with a seed shared by every
    worker, split into ``workers`` near-equal contiguous slices; worker ``worker`` batches
    its slice in order. Every worker runs ``ceil(ceil(n / workers) / batch_size)`` steps
    (a worker with fewer batches reuses them cyclically)."""
    order = global_order(train_idx, base_seed, epoch)
    if order.shape[0] < workers:
        raise RuntimeError(f"{order.shape[0]} training nodes cannot be split across "
                           f"{workers} workers")
    own = np.array_split(order, workers)[worker]
    steps = math.ceil(math.ceil(order.shape[0] / workers) / batch_size)
    batches = [own[i:i + batch_size] for i in range(0, own.shape[0], batch_size)]
    return [batches[i % len(batches)] for i in range(steps)]


def epoch_seed_nodes(train_nodes: np.ndarray, steps: int, batch_size: int, base_seed: int,
                     worker: int, epoch: int) -> list[np.ndarray]:
    """The seed nodes of each of the epoch's ``steps`` batches, in order.

    A worker with fewer batches than ``steps`` reuses its epoch's batches cyclically (each
    step still samples with its own seed ``H(s0, w, e, i)``).
    """
    own = epoch_batches(train_nodes, batch_size, base_seed, worker, epoch)
    if not own:
        raise RuntimeError(f"worker {worker} owns no training nodes; use a partitioning that "
                           "balances training nodes (balance_train) or fewer parts")
    return [own[i % len(own)] for i in range(steps)]
