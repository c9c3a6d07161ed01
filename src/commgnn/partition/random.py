"""Balanced random partitioning: a seeded permutation cut into near-equal consecutive runs."""

from __future__ import annotations

import numpy as np

from commgnn.partition.book import OWNER_DTYPE


def balanced_sizes(num_nodes: int, num_parts: int) -> np.ndarray:
    """Part sizes differing by at most one: the first ``num_nodes % num_parts`` get one more."""
    base, extra = divmod(int(num_nodes), int(num_parts))
    sizes = np.full(num_parts, base, dtype=np.int64)
    sizes[:extra] += 1
    return sizes


def random_assign(num_nodes: int, num_parts: int, seed: int) -> np.ndarray:
    """Owner array of a balanced random partition (int32, deterministic in ``seed``).

    Node ``perm[i]`` of the permutation drawn from ``numpy.random.default_rng(seed)`` goes to
    part ``p`` for ``i`` in the ``p``-th run of :func:`balanced_sizes`; so ``max - min`` of
    the part sizes is at most one.
    """
    if num_parts < 1:
        raise ValueError(f"num_parts must be >= 1, got {num_parts}")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(num_nodes)
    owner = np.empty(num_nodes, dtype=OWNER_DTYPE)
    owner[perm] = np.repeat(np.arange(num_parts, dtype=OWNER_DTYPE),
                            balanced_sizes(num_nodes, num_parts))
    return owner
