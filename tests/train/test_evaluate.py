"""Which nodes a run's accuracies are measured on: one sample of each split per seed, the
same for every partitioning (a per-partition subsample scored runs on different nodes)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from commgnn.data.synthetic import generate_synthetic
from commgnn.partition.core import partition_graph
from commgnn.train.evaluate import eval_nodes, evaluation_sample


def test_the_sample_is_a_seeded_prefix_of_one_permutation_of_the_split():
    idx = np.arange(10, 1010, 2)  # 500 nodes
    sample = evaluation_sample(idx, 30, 4, seed=3, split="test")
    assert sample.shape == (120,) and np.all(np.diff(sample) > 0)
    assert np.isin(sample, idx).all()
    assert np.array_equal(sample, evaluation_sample(idx, 30, 4, seed=3, split="test"))
    # a smaller run's sample is inside a larger one's (the same permutation, a shorter prefix)
    assert np.isin(evaluation_sample(idx, 30, 2, seed=3, split="test"), sample).all()
    assert not np.array_equal(sample, evaluation_sample(idx, 30, 4, seed=4, split="test"))
    assert not np.array_equal(sample, evaluation_sample(idx, 30, 4, seed=3, split="val"))
    assert np.array_equal(evaluation_sample(idx, 200, 4, seed=3, split="test"), idx)  # all


@pytest.fixture(scope="module")
def graph():
    return generate_synthetic({"preset": "tiny", "nodes": 2000, "seed": 2}, name="t")


@pytest.mark.parametrize("world", [2, 4])
def test_every_partitioning_scores_the_same_nodes_each_once(graph, world, make_spec):
    spec = make_spec(eval_max_nodes=40)
    books = {method: partition_graph(graph, {"method": method, "parts": world, "seed": 0}).book
             for method in ("metis", "random")}
    books["chunk"] = partition_graph(graph, {"method": "chunk", "parts": world * 2,
                                             "chunk_method": "random", "seed": 0}).book
    for split in ("val", "test"):
        expected = evaluation_sample(getattr(graph, f"{split}_idx"), 40, world, spec.seed,
                                     split)
        assert expected.shape[0] == 40 * world
        for method, book in books.items():
            shares = [eval_nodes(SimpleNamespace(dataset=graph, spec=spec, world_size=world,
                                                 rank=rank, partition=SimpleNamespace(book=book)),
                                 split) for rank in range(world)]
            merged = np.sort(np.concatenate(shares))
            assert np.array_equal(merged, expected), (method, split)  # each node once
            owner = np.asarray(book.owner)
            for rank, share in enumerate(shares):  # a worker scores the nodes its units own
                assert (owner[share] % world == rank).all(), method
