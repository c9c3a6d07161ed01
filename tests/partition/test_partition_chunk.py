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


def test_default_chunks_is_workers_plus_one():
    ds = sbm_dataset(num_nodes=600, blocks=3, seed=6)
    p = partition_graph(ds, {"method": "chunk", "parts": 3, "chunk_method": "metis"})
    assert p.num_parts == 4 and p.workers == 3
    assert p.stats["balance"] <= 1.1


def test_grappa_default_schedule():
    # M workers, M + 1 chunks: worker w pins chunk w and sweeps w+1, w+2, ... (Grappa Fig. 3)
    assert chunk_schedule_period(5, 4) == 4
    assert chunk_pairs(5, 4, 0) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert chunk_pairs(5, 4, 1) == [(0, 2), (1, 3), (2, 4), (3, 0)]
    assert chunk_pairs(5, 4, 3) == [(0, 4), (1, 0), (2, 1), (3, 2)]
    assert chunk_pairs(5, 4, 4) == chunk_pairs(5, 4, 0)


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
