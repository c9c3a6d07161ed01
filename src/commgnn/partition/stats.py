"""Partition statistics (Grappa Table 9 style sizes, edge cut, balance).

Definitions (``deg`` = CSR row lengths, ``owned`` = nodes of the part):

* ``edge_cut_fraction``: fraction of directed CSR edges ``(v, u)`` (``u`` in ``v``'s
  neighbour list) whose endpoints have different owners; ``edge_cut`` is their count.
* per part ``edges``: CSR edges in the rows of owned nodes (``sum(deg[owned])``);
  ``cut_edges``: those whose neighbour is owned by another part.
* per part ``feature_bytes = (owned + halo) * feature_dim * feature itemsize``;
  ``topology_bytes = edges * indices itemsize + (owned + 1) * indptr itemsize`` (the part's
  own CSR); ``bytes = feature_bytes + topology_bytes``.
* ``total_bytes``: the whole dataset measured the same way (all nodes' features plus the
  full CSR), i.e. the ``Total`` column of Grappa's Table 9.
* ``balance = max / mean`` of owned nodes (1.0 is perfect); ``train_balance`` likewise for
  training nodes (``None`` without training nodes).

Everything here is deterministic; wall times are kept apart (``Partition.timing``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import numpy as np

from commgnn.data.store import GraphDataset
from commgnn.partition.book import PartitionBook

_BLOCK_EDGES = 1 << 24


def _row_blocks(indptr: np.ndarray, max_edges: int = _BLOCK_EDGES) -> Iterator[tuple[int, int]]:
    """Consecutive node ranges ``[a, b)`` holding about ``max_edges`` CSR edges each."""
    n = int(indptr.shape[0] - 1)
    total = int(indptr[-1])
    cuts = np.searchsorted(indptr, np.arange(max_edges, total, max_edges), side="right") - 1
    bounds = [0, *(int(c) for c in cuts), n]
    for a, b in itertools.pairwise(bounds):
        if b > a:
            yield a, b


def cut_edges_per_part(indptr: np.ndarray, indices: np.ndarray, owner: np.ndarray,
                       num_parts: int, block_edges: int = _BLOCK_EDGES) -> np.ndarray:
    """Per part, the CSR edges of its rows whose neighbour has another owner (int64).

    Rows are processed in blocks of about ``block_edges`` edges to bound memory.
    """
    owner = np.asarray(owner)
    cut = np.zeros(num_parts, dtype=np.int64)
    for a, b in _row_blocks(indptr, block_edges):
        lo, hi = int(indptr[a]), int(indptr[b])
        if hi == lo:
            continue
        src_owner = np.repeat(owner[a:b], np.diff(np.asarray(indptr[a:b + 1])))
        crossing = src_owner != owner[np.asarray(indices[lo:hi])]
        cut += np.bincount(src_owner[crossing], minlength=num_parts)
    return cut


def edge_cut_fraction(indptr: np.ndarray, indices: np.ndarray, owner: np.ndarray) -> float:
    """Fraction of directed CSR edges whose endpoints have different owners."""
    total = int(indptr[-1])
    if total == 0:
        return 0.0
    num_parts = int(np.max(owner)) + 1 if len(owner) else 1
    return float(cut_edges_per_part(indptr, indices, owner, num_parts).sum() / total)


def _max_over_mean(values: np.ndarray) -> float | None:
    mean = float(values.mean()) if values.size else 0.0
    return float(values.max() / mean) if mean > 0 else None


def partition_stats(ds: GraphDataset, book: PartitionBook, halos: list[np.ndarray]) -> dict:
    """The ``stats.json`` content for a partition of ``ds`` (see the module docstring)."""
    n, num_parts = ds.num_nodes, book.num_parts
    deg = np.diff(np.asarray(ds.indptr)).astype(np.int64)
    owned = book.sizes()
    halo = np.array([h.shape[0] for h in halos], dtype=np.int64)
    edges = np.bincount(book.owner, weights=deg, minlength=num_parts).astype(np.int64)
    cut = cut_edges_per_part(ds.indptr, ds.indices, book.owner, num_parts)
    train = np.bincount(book.owner[np.asarray(ds.train_idx)],
                        minlength=num_parts).astype(np.int64)
    feat_row = ds.feature_dim * np.dtype(ds.features.dtype).itemsize
    idx_size = np.dtype(ds.indices.dtype).itemsize
    ptr_size = np.dtype(ds.indptr.dtype).itemsize
    feature_bytes = (owned + halo) * feat_row
    topology_bytes = edges * idx_size + (owned + 1) * ptr_size
    parts = [
        {
            "part": p,
            "owned_nodes": int(owned[p]),
            "halo_nodes": int(halo[p]),
            "edges": int(edges[p]),
            "cut_edges": int(cut[p]),
            "train_nodes": int(train[p]),
            "feature_bytes": int(feature_bytes[p]),
            "topology_bytes": int(topology_bytes[p]),
            "bytes": int(feature_bytes[p] + topology_bytes[p]),
        }
        for p in range(num_parts)
    ]
    num_edges = ds.num_edges
    total_cut = int(cut.sum())
    return {
        "num_nodes": n,
        "num_edges": num_edges,
        "num_train": int(train.sum()),
        "num_parts": num_parts,
        "feature_dim": ds.feature_dim,
        "edge_cut": total_cut,
        "edge_cut_fraction": float(total_cut / num_edges) if num_edges else 0.0,
        "balance": _max_over_mean(owned),
        "train_balance": _max_over_mean(train),
        "replication_factor": float((owned + halo).sum() / n) if n else 0.0,
        "total_bytes": int(n * feat_row + num_edges * idx_size + (n + 1) * ptr_size),
        "parts_bytes": int(sum(part["bytes"] for part in parts)),
        "parts": parts,
    }
