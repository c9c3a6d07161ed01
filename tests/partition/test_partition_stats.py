"""Statistics on hand-made cases."""

from __future__ import annotations

import numpy as np
import pytest
from partgraphs import sbm_dataset, toy_dataset

from commgnn.partition import (
    PartitionBook,
    compute_halos,
    cut_edges_per_part,
    edge_cut_fraction,
    partition_stats,
)


def test_path_edge_cut_and_bytes_by_hand():
    # Path 0-1-2-3, parts {0,1} and {2,3}: 6 directed edges, 1->2 and 2->1 are cut.
    ds = toy_dataset(4, [(0, 1), (1, 2), (2, 3)], feature_dim=4, train_idx=np.array([0, 1, 3]))
    owner = np.array([0, 0, 1, 1], dtype=np.int32)
    assert edge_cut_fraction(ds.indptr, ds.indices, owner) == pytest.approx(2 / 6)
    book = PartitionBook.from_owner(owner, 2)
    stats = partition_stats(ds, book, compute_halos(ds.indptr, ds.indices, owner, 2, 1))
    assert stats["edge_cut"] == 2
    assert stats["edge_cut_fraction"] == pytest.approx(1 / 3)
    assert stats["balance"] == 1.0
    assert stats["train_balance"] == pytest.approx(2 / 1.5)
    p0, p1 = stats["parts"]
    # part 0: owns {0,1}, halo {2}; rows 0,1 have 1 + 2 = 3 edges, one of them cut
    assert (p0["owned_nodes"], p0["halo_nodes"], p0["edges"], p0["cut_edges"],
            p0["train_nodes"]) == (2, 1, 3, 1, 2)
    assert p0["feature_bytes"] == 3 * 4 * 4  # 3 nodes x 4 floats x 4 bytes
    assert p0["topology_bytes"] == 3 * 8 + 3 * 8  # 3 int64 indices + indptr of length 3
    assert p0["bytes"] == 96
    assert (p1["owned_nodes"], p1["halo_nodes"], p1["train_nodes"]) == (2, 1, 1)
    assert stats["total_bytes"] == 4 * 16 + 6 * 8 + 5 * 8
    assert stats["replication_factor"] == pytest.approx(6 / 4)


def test_triangle_plus_pendant_by_hand():
    # Triangle 0-1-2 plus 2-3; owner 0 -> part 0, others part 1.
    # Directed edges: 0->1,0->2,1->0,1->2,2->0,2->1,2->3,3->2 = 8; cut: 0->1,0->2,1->0,2->0.
    ds = toy_dataset(4, [(0, 1), (1, 2), (0, 2), (2, 3)])
    owner = np.array([0, 1, 1, 1], dtype=np.int32)
    assert edge_cut_fraction(ds.indptr, ds.indices, owner) == pytest.approx(4 / 8)
    assert edge_cut_fraction(ds.indptr, ds.indices, np.zeros(4, dtype=np.int32)) == 0.0


def test_blocked_cut_count_matches_unblocked():
    ds = sbm_dataset(num_nodes=300, blocks=3, avg_degree=6, seed=8)
    owner = np.random.default_rng(0).integers(0, 3, ds.num_nodes).astype(np.int32)
    whole = cut_edges_per_part(ds.indptr, ds.indices, owner, 3)
    src = np.repeat(np.arange(ds.num_nodes), np.diff(ds.indptr))
    crossing = owner[src] != owner[ds.indices]
    assert whole.tolist() == np.bincount(owner[src][crossing], minlength=3).tolist()
    for block in (1, 7, 50, 10**6):
        assert cut_edges_per_part(ds.indptr, ds.indices, owner, 3, block).tolist() == whole.tolist()
