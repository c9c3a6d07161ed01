"""The ordered list of seed-node batches of one (worker, epoch).

Batch ``i`` of worker ``w`` in epoch ``e`` is ``epoch_batches(...)[i]``; sample it with
``NeighborSampler.sample(batch, batch_seed(s_0, w, e, i))``. The epoch's order is a
permutation of ``train_nodes`` keyed by :func:`~commgnn.sampling.seeds.shuffle_seed`
(``H(s_0, "shuffle", w, e)``): position ``j`` of ``train_nodes`` gets the ``j``-th draw of
that splitmix64 stream as its sort key (draws are pairwise distinct, so there are no
ties), and the nodes are ordered by key. The result depends only on the arguments (and
on the order of ``train_nodes``), never on NumPy's generator versions.
"""

from __future__ import annotations

import numpy as np

from commgnn.sampling.seeds import as_uint64, derive_seed, shuffle_seed, stream_uint64


def epoch_order(train_nodes: np.ndarray, base_seed: int, worker: int, epoch: int,
                shuffle: bool = True) -> np.ndarray:
    """``train_nodes`` (int64) in the order worker ``worker`` visits them in ``epoch``."""
    nodes = np.asarray(train_nodes)
    if nodes.ndim != 1:
        raise ValueError(f"train_nodes must be 1-D, got shape {nodes.shape}")
    nodes = nodes.astype(np.int64, copy=False)
    if not shuffle:
        return nodes.copy()
    return permute(nodes, shuffle_seed(base_seed, worker, epoch))


def global_order(train_idx: np.ndarray, base_seed: int, epoch: int) -> np.ndarray:
    """The whole training set in the order shared by every worker in ``epoch`` (keyed by
    ``H(s_0, "shuffle", "global", e)``)."""
    nodes = np.asarray(train_idx).astype(np.int64, copy=False)
    return permute(nodes, derive_seed(base_seed, "shuffle", "global", epoch))


def permute(nodes: np.ndarray, seed: int) -> np.ndarray:
    """``nodes`` ordered by the ``j``-th draw of the splitmix64 stream of ``seed``."""
    if nodes.shape[0] <= 1:
        return nodes.copy()
    keys = stream_uint64(as_uint64(seed), nodes.shape[0])
    return nodes[np.argsort(keys, kind="stable")]


def num_batches(num_train: int | np.ndarray, batch_size: int, drop_last: bool = False) -> int:
    """Number of batches per epoch for ``num_train`` nodes (or an array of them)."""
    n = int(np.asarray(num_train).shape[0]) if not np.isscalar(num_train) else int(num_train)
    if batch_size <= 0:
        raise ValueError(f"batch_size must be positive, got {batch_size}")
    if n < 0:
        raise ValueError(f"num_train must be non-negative, got {n}")
    return n // batch_size if drop_last else -(-n // batch_size)


def epoch_batches(train_nodes: np.ndarray, batch_size: int, base_seed: int, worker: int,
                  epoch: int, shuffle: bool = True, drop_last: bool = False) -> list[np.ndarray]:
    """The ordered seed batches (int64 arrays) of ``worker`` in ``epoch``.

    Every batch has ``batch_size`` nodes except possibly the last, which is kept unless
    ``drop_last``. Each train node appears exactly once per epoch (without ``drop_last``).
    """
    order = epoch_order(train_nodes, base_seed, worker, epoch, shuffle=shuffle)
    count = num_batches(order.shape[0], batch_size, drop_last=drop_last)
    return [order[i * batch_size:(i + 1) * batch_size] for i in range(count)]
