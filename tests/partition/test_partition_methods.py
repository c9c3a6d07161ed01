"""Ownership, local ids, balance and cut quality of the three methods."""

from __future__ import annotations

import numpy as np
import pytest
from partgraphs import sbm_dataset, toy_dataset

from commgnn.partition import (
    PartitionBook,
    edge_cut_fraction,
    metis_assign,
    normalize_spec,
    partition_graph,
)


@pytest.fixture(scope="module")
def sbm():
    return sbm_dataset(num_nodes=2000, blocks=4, avg_degree=12, p_in=0.95, seed=1)


SPECS = [
    {"method": "random", "parts": 4},
    {"method": "metis", "parts": 4},
    {"method": "metis", "parts": 3, "balance_train": True},
    {"method": "chunk", "parts": 4},
    {"method": "chunk", "parts": 4, "chunks": 7, "chunk_method": "metis"},
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: "-".join(map(str, s.values())))
def test_every_node_has_one_owner_and_local_ids_are_bijective(sbm, spec):
    p = partition_graph(sbm, spec)
    book = p.book
    units = spec.get("chunks", spec["parts"]) if spec["method"] == "chunk" else spec["parts"]
    assert p.num_parts == book.num_parts == units
    assert book.owner.dtype == np.int32 and book.owner.shape == (sbm.num_nodes,)
    assert book.owner.min() >= 0 and book.owner.max() < units
    # Per-part node lists partition the node set (every node exactly once).
    all_nodes = np.concatenate([book.nodes(q) for q in range(units)])
    assert np.array_equal(np.sort(all_nodes), np.arange(sbm.num_nodes))
    for q in range(units):
        nodes = book.nodes(q)
        assert np.all(np.diff(nodes) > 0)
        assert np.all(book.owner[nodes] == q)
        # local ids of part q are exactly 0..size-1 in ascending global order
        assert np.array_equal(book.local_id[nodes], np.arange(nodes.size))
        assert np.array_equal(book.to_global(q, np.arange(nodes.size)), nodes)
    owner, local = book.to_local(np.arange(sbm.num_nodes))
    assert np.array_equal(book.to_global(owner, local), np.arange(sbm.num_nodes))


def test_book_from_owner_by_hand():
    book = PartitionBook.from_owner(np.array([2, 0, 2, 1, 0]), 3)
    assert book.local_id.tolist() == [0, 0, 1, 0, 1]
    assert [book.nodes(q).tolist() for q in range(3)] == [[1, 4], [3], [0, 2]]
    assert book.sizes().tolist() == [2, 1, 2]


def test_random_is_balanced_within_one():
    ds = sbm_dataset(num_nodes=1003, blocks=2, seed=2)
    for parts in (1, 2, 3, 7, 16):
        sizes = partition_graph(ds, {"method": "random", "parts": parts}).book.sizes()
        assert sizes.max() - sizes.min() <= 1
        assert sizes.sum() == ds.num_nodes


def test_random_depends_on_seed_only(sbm):
    a = partition_graph(sbm, {"method": "random", "parts": 4, "seed": 5}).book.owner
    b = partition_graph(sbm, {"method": "random", "parts": 4, "seed": 5}).book.owner
    c = partition_graph(sbm, {"method": "random", "parts": 4, "seed": 6}).book.owner
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_metis_balanced_and_cuts_far_fewer_edges_than_random(sbm):
    metis = partition_graph(sbm, {"method": "metis", "parts": 4})
    rand = partition_graph(sbm, {"method": "random", "parts": 4})
    assert metis.stats["balance"] <= 1.1
    assert metis.stats["edge_cut_fraction"] < 0.5 * rand.stats["edge_cut_fraction"]
    assert metis.stats["edge_cut_fraction"] == pytest.approx(
        edge_cut_fraction(sbm.indptr, sbm.indices, metis.book.owner))


def test_metis_is_deterministic(sbm):
    a = metis_assign(sbm.indptr, sbm.indices, 4, seed=3)
    b = metis_assign(sbm.indptr, sbm.indices, 4, seed=3)
    assert np.array_equal(a, b)


def test_balance_train_balances_training_nodes():
    # All training nodes sit in planted block 0, so a plain min-cut METIS puts them in one
    # part; the two-constraint METIS must spread them evenly.
    ds = sbm_dataset(num_nodes=2000, blocks=4, avg_degree=12, p_in=0.95,
                     train_in_block0=True, seed=4)
    plain = partition_graph(ds, {"method": "metis", "parts": 4})
    balanced = partition_graph(ds, {"method": "metis", "parts": 4, "balance_train": True})
    assert plain.stats["train_balance"] > 2.0
    assert balanced.stats["train_balance"] <= 1.1
    assert balanced.stats["balance"] <= 1.1
    trains = [part["train_nodes"] for part in balanced.stats["parts"]]
    assert sum(trains) == ds.train_idx.size


def test_metis_handles_directed_graphs():
    # Asymmetric CSR: METIS gets the symmetrised graph and still returns a valid partition.
    edges = [(i, (i + 1) % 40) for i in range(40)] + [(i, (i + 7) % 40) for i in range(0, 40, 3)]
    ds = toy_dataset(40, edges, directed=True)
    owner = metis_assign(ds.indptr, ds.indices, 4, seed=0)
    sizes = np.bincount(owner, minlength=4)
    assert sizes.sum() == 40 and sizes.min() > 0


def test_spec_defaults_and_validation():
    assert normalize_spec({"method": "chunk", "parts": 4}) == {
        "method": "chunk", "parts": 4, "chunks": 4, "chunk_method": "random",
        "halo_hops": 1, "seed": 0}
    assert normalize_spec({"method": "metis", "parts": 2})["balance_train"] is False
    bad = [
        {"method": "bogus", "parts": 2},
        {"method": "metis"},
        {"method": "metis", "parts": 0},
        {"method": "random", "parts": 2, "chunks": 3},
        {"method": "random", "parts": 2, "balance_train": True},
        {"method": "chunk", "parts": 4, "chunks": 3},
        {"method": "chunk", "parts": 1, "chunks": 1},
        {"method": "chunk", "parts": 2, "chunk_method": "spectral"},
        {"method": "metis", "parts": 2, "halo_hops": 9},
        {"method": "metis", "parts": 2, "seed": -1},
        {"method": "metis", "parts": 2, "colour": "red"},
        {"method": "metis", "parts": True},
    ]
    for spec in bad:
        with pytest.raises(ValueError):
            normalize_spec(spec)


def test_more_parts_than_nodes_is_rejected():
    ds = toy_dataset(3, [(0, 1), (1, 2)])
    with pytest.raises(ValueError, match="cannot cut"):
        partition_graph(ds, {"method": "random", "parts": 4})


def test_metis_accepts_unsorted_neighbour_lists():
    ds = sbm_dataset(num_nodes=400, blocks=2, seed=9)
    indices = ds.indices.copy()
    for v in range(0, ds.num_nodes, 5):
        indices[ds.indptr[v]:ds.indptr[v + 1]] = indices[ds.indptr[v]:ds.indptr[v + 1]][::-1]
    indices.flags.writeable = False
    a = metis_assign(ds.indptr, indices, 2, seed=0)
    b = metis_assign(ds.indptr, ds.indices, 2, seed=0)
    assert np.array_equal(a, b)


def test_metis_cuts_far_fewer_edges_than_random_on_the_synthetic_graph():
    from commgnn.data.synthetic import generate_synthetic
    from commgnn.partition import partition_graph

    ds = generate_synthetic({"preset": "tiny", "nodes": 3000, "seed": 0})
    metis = partition_graph(ds, {"method": "metis", "parts": 4})
    rand = partition_graph(ds, {"method": "random", "parts": 4})
    assert metis.stats["edge_cut_fraction"] < 0.6 * rand.stats["edge_cut_fraction"]
