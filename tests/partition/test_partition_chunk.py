"""Grappa chunks: chunk count independent of workers and the pair schedule's coverage."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from partgraphs import sbm_dataset

from commgnn.partition import chunk_pairs, chunk_schedule_period, partition_graph, partition_nodes


def test_five_chunks_four_workers():
    ds = sbm_dataset(num_nodes=1000, blocks=5, seed=5)
    p = partition_graph(ds, {"method": "chunk", "parts": 4, "chunks": 5})
    assert p.num_parts == p.chunks == 5
    assert p.workers == 4
    assert len(p.halos) == 5 and len(p.stats["parts"]) == 5
    sizes = p.book.sizes()
    assert sizes.max() - sizes.min() <= 1
    pairs = p.chunk_pairs(0)
    assert len(pairs) == 4
    base, swept = pairs[0]
    nodes = partition_nodes([p.nodes(base), p.nodes(swept)])
    assert nodes.size == sizes[base] + sizes[swept]
    assert np.all(np.diff(nodes) > 0)


def test_default_chunks_is_one_per_worker():
    ds = sbm_dataset(num_nodes=600, blocks=3, seed=6)
    p = partition_graph(ds, {"method": "chunk", "parts": 3, "chunk_method": "metis"})
    assert p.num_parts == 3 and p.workers == 3
    assert p.stats["balance"] <= 1.1
    one = partition_graph(ds, {"method": "chunk", "parts": 1})
    assert one.num_parts == 2  # a sweep needs two chunks


def test_grappa_default_schedule():
    # W workers, W chunks: worker w pins chunk w and sweeps w+1, w+2, ... (Grappa Fig. 3)
    assert chunk_schedule_period(4, 4) == 3
    assert chunk_pairs(4, 4, 0) == [(0, 1), (1, 2), (2, 3), (3, 0)]
    assert chunk_pairs(4, 4, 1) == [(0, 2), (1, 3), (2, 0), (3, 1)]
    assert chunk_pairs(4, 4, 2) == [(0, 3), (1, 0), (2, 1), (3, 2)]
    assert chunk_pairs(4, 4, 3) == chunk_pairs(4, 4, 0)


def test_more_chunks_than_workers_rotates_bases_first():
    # C = 5 > W = 4: the bases rotate every super-epoch (R = 2), then the sweep advances
    assert chunk_schedule_period(5, 4) == 8
    assert chunk_pairs(5, 4, 0) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert chunk_pairs(5, 4, 1) == [(4, 0), (0, 1), (1, 2), (2, 3)]
    assert chunk_pairs(5, 4, 2) == [(0, 2), (1, 3), (2, 4), (3, 0)]
    bases = {b for s in range(2) for b, _ in chunk_pairs(5, 4, s)}
    assert bases == set(range(5))  # every chunk seeds batches within R super-epochs


@pytest.mark.parametrize(("chunks", "workers"), [(4, 4), (5, 4), (7, 3), (6, 1)])
def test_one_sweep_covers_every_cross_chunk_edge_and_training_node(chunks, workers):
    ds = sbm_dataset(num_nodes=700, blocks=4, seed=9)
    p = partition_graph(ds, {"method": "chunk", "parts": workers, "chunks": chunks})
    owner = p.book.owner
    indptr, indices = np.asarray(ds.indptr), np.asarray(ds.indices)
    src = np.repeat(np.arange(ds.num_nodes), np.diff(indptr))
    cross = owner[src] != owner[indices]
    assert cross.any()
    inside = np.zeros(indices.shape[0], dtype=bool)
    seeded = np.zeros(ds.num_nodes, dtype=bool)
    for super_epoch in range(chunk_schedule_period(chunks, workers)):
        for base, swept in chunk_pairs(chunks, workers, super_epoch):
            member = np.zeros(ds.num_nodes, dtype=bool)
            member[partition_nodes([p.nodes(base), p.nodes(swept)])] = True
            inside |= member[src] & member[indices]
            seeded[p.nodes(base)] = True  # seeds are the base chunk's training nodes
    assert inside[cross].all()
    assert seeded[np.asarray(ds.train_idx)].all()


@pytest.mark.parametrize(("chunks", "workers"), [
    (2, 1), (2, 2), (3, 1), (5, 4), (5, 5), (5, 2), (7, 3), (8, 2), (9, 4), (16, 5), (6, 1)])
def test_schedule_covers_every_pair(chunks, workers):
    period = chunk_schedule_period(chunks, workers)
    covered = set()
    for epoch in range(period):
        pairs = chunk_pairs(chunks, workers, epoch)
        assert len(pairs) == workers
        bases = [b for b, _ in pairs]
        swept = [s for _, s in pairs]
        assert len(set(bases)) == workers and len(set(swept)) == workers
        for b, s in pairs:
            assert b != s and 0 <= b < chunks and 0 <= s < chunks
            covered.add(frozenset((b, s)))
        assert chunk_pairs(chunks, workers, epoch + period) == pairs
    assert covered == {frozenset(pair) for pair in itertools.combinations(range(chunks), 2)}


def test_schedule_rejects_bad_sizes():
    for chunks, workers in ((1, 1), (4, 5), (4, 0)):
        with pytest.raises(ValueError):
            chunk_pairs(chunks, workers, 0)
    with pytest.raises(ValueError):
        chunk_pairs(5, 4, -1)


def test_chunk_pairs_only_for_chunk_method():
    ds = sbm_dataset(num_nodes=200, blocks=2, seed=7)
    p = partition_graph(ds, {"method": "random", "parts": 2})
    with pytest.raises(ValueError):
        p.chunk_pairs(0)
