"""Halo sets against a plain-Python breadth-first search."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from partgraphs import sbm_dataset, toy_dataset

from commgnn.partition import compute_halos, gather_neighbors, partition_graph


def brute_halo(indptr, indices, owner, part, hops):
    dist = {}
    queue = deque()
    for v in range(len(owner)):
        if owner[v] == part:
            dist[v] = 0
            queue.append(v)
    while queue:
        v = queue.popleft()
        if dist[v] == hops:
            continue
        for u in indices[indptr[v]:indptr[v + 1]]:
            u = int(u)
            if u not in dist:
                dist[u] = dist[v] + 1
                queue.append(u)
    return sorted(v for v, d in dist.items() if d > 0)


def _toy_graphs():
    rng = np.random.default_rng(7)
    path = toy_dataset(12, [(i, i + 1) for i in range(11)])
    edges = [(int(a), int(b)) for a, b in rng.integers(0, 30, (45, 2))]
    sparse_undirected = toy_dataset(30, edges)
    directed = toy_dataset(30, edges, directed=True)
    return {"path": path, "random-undirected": sparse_undirected, "random-directed": directed}


@pytest.mark.parametrize("name", ["path", "random-undirected", "random-directed"])
@pytest.mark.parametrize("hops", [0, 1, 2, 3])
def test_halo_matches_bfs(name, hops):
    ds = _toy_graphs()[name]
    rng = np.random.default_rng(hops)
    owner = rng.integers(0, 3, ds.num_nodes).astype(np.int32)
    halos = compute_halos(ds.indptr, ds.indices, owner, 3, hops)
    for part in range(3):
        expected = brute_halo(ds.indptr, ds.indices, owner, part, hops)
        assert halos[part].tolist() == expected
        assert halos[part].dtype == np.int64


def test_halo_on_path_by_hand():
    ds = toy_dataset(8, [(i, i + 1) for i in range(7)])
    owner = np.array([0, 0, 0, 1, 1, 1, 2, 2], dtype=np.int32)
    halos = compute_halos(ds.indptr, ds.indices, owner, 3, 2)
    assert [h.tolist() for h in halos] == [[3, 4], [1, 2, 6, 7], [4, 5]]


def test_directed_halo_follows_csr_neighbour_lists():
    # 0 -> 1 means node 1 is in node 0's neighbour list: 0 needs 1, not the reverse.
    ds = toy_dataset(3, [(0, 1), (1, 2)], directed=True)
    owner = np.array([0, 1, 2], dtype=np.int32)
    halos = compute_halos(ds.indptr, ds.indices, owner, 3, 2)
    assert [h.tolist() for h in halos] == [[1, 2], [2], []]


def test_partition_halos_match_bfs_on_sbm():
    ds = sbm_dataset(num_nodes=300, blocks=3, avg_degree=4, seed=3)
    p = partition_graph(ds, {"method": "metis", "parts": 3, "halo_hops": 2})
    for part in range(3):
        assert p.halo(part).tolist() == brute_halo(ds.indptr, ds.indices, p.book.owner, part, 2)


def test_gather_neighbors():
    ds = toy_dataset(4, [(0, 1), (0, 2), (2, 3)])
    assert gather_neighbors(ds.indptr, ds.indices, np.array([2, 0])).tolist() == [0, 3, 1, 2]
    assert gather_neighbors(ds.indptr, ds.indices, np.array([], dtype=np.int64)).size == 0
