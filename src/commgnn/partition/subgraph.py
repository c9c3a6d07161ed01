"""Local graphs of node sets, in global ids: what a worker that may not look past its own
partition can sample from (Grappa's isolated training).

:func:`induced_csr` keeps the edges whose two endpoints are members; rows of non-members
are empty, so a :class:`~commgnn.sampling.neighbor.NeighborSampler` built on it samples
exactly like the global one restricted to the set (node ids unchanged).
:func:`keep_cross_edges` draws the cross edges a relaxed isolation keeps (Grappa's 50S
ablation), symmetric and deterministic in a seed.
"""

from __future__ import annotations

import numpy as np

from commgnn.partition.halo import gather_neighbors

_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def induced_csr(indptr: np.ndarray, indices: np.ndarray, members: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """CSR over all ``n`` nodes keeping only edges between nodes of ``members`` (sorted
    int64 ids); neighbour lists stay sorted."""
    n = int(indptr.shape[0] - 1)
    member = np.zeros(n, dtype=bool)
    member[members] = True
    starts = np.asarray(indptr[members], dtype=np.int64)
    degrees = np.asarray(indptr[members + 1], dtype=np.int64) - starts
    neighbours = gather_neighbors(indptr, indices, members)
    keep = member[neighbours]
    row_of = np.repeat(np.arange(members.shape[0]), degrees)
    counts = np.bincount(row_of[keep], minlength=members.shape[0])
    local_degree = np.zeros(n, dtype=np.int64)
    local_degree[members] = counts
    out_indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(local_degree, out=out_indptr[1:])
    return out_indptr, neighbours[keep]


def splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finaliser of uint64 words (vectorised; wraps mod 2**64)."""
    with np.errstate(over="ignore"):
        z = (x + np.uint64(0x9E3779B97F4A7C15)) & _MASK64
        z = ((z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & _MASK64
        z = ((z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & _MASK64
        return z ^ (z >> np.uint64(31))


def keep_cross_edges(indptr: np.ndarray, indices: np.ndarray, members: np.ndarray,
                     fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The edges ``(member, non-member)`` kept with probability ``fraction`` each, drawn
    by a hash of the unordered pair and ``seed``: returns ``(src, dst)`` of both
    directions (so the kept outside nodes see their member neighbours too)."""
    n = int(indptr.shape[0] - 1)
    member = np.zeros(n, dtype=bool)
    member[members] = True
    degrees = np.asarray(indptr[members + 1], dtype=np.int64) - np.asarray(indptr[members],
                                                                          dtype=np.int64)
    src = np.repeat(members, degrees)
    dst = gather_neighbors(indptr, indices, members)
    cross = ~member[dst]
    src, dst = src[cross], dst[cross]
    lo, hi = np.minimum(src, dst).astype(np.uint64), np.maximum(src, dst).astype(np.uint64)
    with np.errstate(over="ignore"):
        word = splitmix64(splitmix64(lo ^ splitmix64(np.full_like(lo, seed % 2**64))) ^ hi)
    uniform = (word >> np.uint64(11)).astype(np.float64) / float(1 << 53)
    kept = uniform < fraction
    src, dst = src[kept], dst[kept]
    return np.concatenate([src, dst]), np.concatenate([dst, src])


def merge_edges(indptr: np.ndarray, indices: np.ndarray, src: np.ndarray, dst: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """CSR ``(indptr, indices)`` plus the edges ``src → dst`` (new, distinct), sorted rows."""
    n = int(indptr.shape[0] - 1)
    if src.shape[0] == 0:
        return indptr, indices
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    all_src = np.concatenate([rows, src])
    all_dst = np.concatenate([indices, dst])
    order = np.lexsort((all_dst, all_src))
    out_indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(all_src, minlength=n), out=out_indptr[1:])
    return out_indptr, all_dst[order]
