"""Which seed nodes each worker trains on, step by step: the shared training schedule.

Used identically by online training (``commgnn.train``) and by presampling, so both see
the same batches for the same (base seed, worker, epoch, step).
"""

from __future__ import annotations

import math

import numpy as np

from commgnn.sampling.batches import epoch_batches


def worker_train_nodes(train_idx: np.ndarray, owner: np.ndarray, rank: int) -> np.ndarray:
    """Training nodes owned by ``rank`` (sorted global ids)."""
    train = np.asarray(train_idx)
    return train[np.asarray(owner)[train] == rank]


def steps_per_epoch(train_idx: np.ndarray, owner: np.ndarray, workers: int,
                    batch_size: int) -> int:
    """Synchronous training needs one step count for all workers: the largest worker's."""
    train_owner = np.asarray(owner)[np.asarray(train_idx)]
    counts = np.bincount(train_owner, minlength=workers)[:workers]
    return max(1, math.ceil(int(counts.max()) / batch_size))


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
