"""Seeded uniform neighbour sampler: exactness, determinism, statistics, block layout."""

from __future__ import annotations

import itertools
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
import pytest
import torch
from sampling_reference import build_blocks, khop, neighbours, reference_sample, row_sample
from scipy import stats

from commgnn.core.blocks import MiniBatch
from commgnn.data.store import csr_from_pairs, symmetrize_csr
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.seeds import batch_seed


def _random_graph(num_nodes: int, num_edges: int, seed: int, hub_degree: int = 0,
                  num_isolated: int = 0):
    rng = np.random.default_rng(seed)
    active = num_nodes - num_isolated  # the last num_isolated nodes get no edges
    src = rng.integers(0, active, num_edges)
    dst = rng.integers(0, active, num_edges)
    if hub_degree:  # node 0 is a hub
        src = np.concatenate([src, np.zeros(hub_degree, np.int64)])
        dst = np.concatenate([dst, rng.choice(np.arange(1, active), hub_degree, False)])
    return symmetrize_csr(num_nodes, src, dst)


@pytest.fixture(scope="module")
def small_graph():
    # ~300 nodes, mixed degrees, a hub of degree ~150, some isolated nodes.
    return _random_graph(300, 700, seed=1, hub_degree=150, num_isolated=10)


@pytest.fixture(scope="module")
def medium_graph():
    return _random_graph(20_000, 100_000, seed=2, hub_degree=3_000)


def _blocks_as_lists(mb: MiniBatch):
    return [(b.num_src, b.num_dst, b.indptr.tolist(), b.indices.tolist()) for b in mb.blocks]


def assert_same(a: MiniBatch, b: MiniBatch) -> None:
    assert torch.equal(a.seeds, b.seeds)
    assert torch.equal(a.input_nodes, b.input_nodes)
    assert len(a.blocks) == len(b.blocks)
    for x, y in zip(a.blocks, b.blocks, strict=True):
        assert (x.num_src, x.num_dst) == (y.num_src, y.num_dst)
        assert torch.equal(x.indptr, y.indptr)
        assert torch.equal(x.indices, y.indices)


def check_layout(mb: MiniBatch, indptr, indices, fanouts) -> None:
    """Every structural invariant of the DGL block layout and of the sample."""
    seeds = mb.seeds.numpy()
    nodes = mb.input_nodes.numpy()
    assert mb.seeds.dtype == mb.input_nodes.dtype == torch.int64
    assert len(mb.blocks) == len(fanouts)
    assert np.unique(nodes).shape[0] == nodes.shape[0]
    assert np.array_equal(nodes[:seeds.shape[0]], seeds)
    assert mb.blocks[0].num_src == nodes.shape[0]
    assert mb.blocks[-1].num_dst == seeds.shape[0]
    for lower, upper in itertools.pairwise(mb.blocks):
        assert lower.num_dst == upper.num_src
    for block, fanout in zip(mb.blocks, fanouts, strict=True):
        assert block.indptr.dtype == block.indices.dtype == torch.int64
        bp, bi = block.indptr.numpy(), block.indices.numpy()
        assert bp.shape == (block.num_dst + 1,) and bp[0] == 0 and bp[-1] == bi.shape[0]
        assert np.all(np.diff(bp) >= 0)
        assert bi.shape[0] == 0 or (bi.min() >= 0 and bi.max() < block.num_src)
        assert block.num_dst <= block.num_src
        # the block's new sources appear in first-appearance order of its edges
        new = bi[bi >= block.num_dst]
        _, first = np.unique(new, return_index=True)
        assert np.array_equal(new[np.sort(first)], np.arange(block.num_dst, block.num_src))
        for j in range(block.num_dst):
            v = int(nodes[j])
            sampled = nodes[bi[bp[j]:bp[j + 1]]].tolist()
            nbrs = neighbours(indptr, indices, v)
            assert len(set(sampled)) == len(sampled)  # no duplicates
            assert set(sampled) <= set(nbrs)  # real neighbours
            want = len(nbrs) if fanout < 0 else min(len(nbrs), fanout)
            assert len(sampled) == want
            assert sampled == [u for u in nbrs if u in set(sampled)]  # CSR order


@pytest.mark.parametrize("fanouts", [[2, 3], [5, 10, 15], [3, -1], [0, 4], [1]])
def test_matches_python_reference(small_graph, fanouts):
    indptr, indices = small_graph
    sampler = NeighborSampler(indptr, indices, fanouts)
    rng = np.random.default_rng(7)
    for trial in range(3):
        seeds = rng.choice(300, 12, replace=False)
        if trial == 0:
            seeds[0] = 0  # include the hub
        seed = batch_seed(99, 0, trial, 1)
        mb = sampler.sample(seeds, seed)
        check_layout(mb, indptr, indices, fanouts)
        ref_nodes, ref_blocks = reference_sample(indptr, indices, seeds.tolist(), fanouts, seed)
        assert mb.input_nodes.tolist() == ref_nodes
        assert _blocks_as_lists(mb) == ref_blocks


def test_block_edges_are_the_sampled_pairs(small_graph):
    indptr, indices = small_graph
    fanouts = [4, 6]
    seeds = np.array([0, 5, 17, 42, 99], dtype=np.int64)
    mb = NeighborSampler(indptr, indices, fanouts).sample(seeds, 123)
    nodes = mb.input_nodes.numpy()
    for layer, block in enumerate(mb.blocks):
        dst_of = block.dst_of_edges().numpy()
        got = sorted(zip(nodes[block.indices.numpy()].tolist(), nodes[dst_of].tolist(),
                         strict=True))
        want = sorted((u, int(v)) for v in nodes[:block.num_dst]
                      for u in row_sample(indptr, indices, int(v), fanouts[layer], 123, layer))
        assert got == want


def test_deterministic_and_seed_sensitive(medium_graph):
    indptr, indices = medium_graph
    sampler = NeighborSampler(indptr, indices, [5, 10, 15])
    seeds = np.random.default_rng(0).choice(20_000, 256, replace=False)
    a = sampler.sample(seeds, batch_seed(1, 0, 0, 0))
    b = NeighborSampler(indptr.copy(), indices.copy(), [5, 10, 15]).sample(
        torch.from_numpy(seeds), batch_seed(1, 0, 0, 0))
    assert_same(a, b)
    for other in (batch_seed(1, 0, 0, 1), batch_seed(1, 1, 0, 0), batch_seed(2, 0, 0, 0)):
        c = sampler.sample(seeds, other)
        assert torch.equal(c.seeds, a.seeds)
        assert not torch.equal(c.blocks[-1].indices, a.blocks[-1].indices)


def test_independent_of_call_order_and_history(medium_graph):
    indptr, indices = medium_graph
    rng = np.random.default_rng(1)
    jobs = [(rng.choice(20_000, 128, replace=False), batch_seed(5, 0, 0, i)) for i in range(6)]
    forward = NeighborSampler(indptr, indices, [5, 10])
    first = [forward.sample(s, k) for s, k in jobs]
    backward = NeighborSampler(indptr, indices, [5, 10])
    backward.sample_full(jobs[0][0][:3], 2)  # unrelated history
    with pytest.raises(ValueError):
        backward.sample(np.array([1, 2, 1]), 0)  # a failed call must not leave stale state
    second = [backward.sample(s, k) for s, k in reversed(jobs)][::-1]
    for x, y in zip(first, second, strict=True):
        assert_same(x, y)


def test_independent_of_threads(medium_graph):
    indptr, indices = medium_graph
    fanouts = [10, 10, 5]
    seeds = np.random.default_rng(2).choice(20_000, 512, replace=False)
    seq = NeighborSampler(indptr, indices, fanouts).sample(seeds, 77)
    par = NeighborSampler(indptr, indices, fanouts, parallel=True)
    assert seq.blocks[0].num_dst > 4 * 2048  # spans several parallel chunks
    saved = numba.get_num_threads()
    try:
        for threads in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(threads)
            assert_same(seq, par.sample(seeds, 77))
    finally:
        numba.set_num_threads(saved)
    # concurrent use of one sampler from several Python threads
    sampler = NeighborSampler(indptr, indices, fanouts)
    jobs = [(np.roll(seeds, i)[:300], batch_seed(3, 0, 0, i)) for i in range(8)]
    expected = [sampler.sample(s, k) for s, k in jobs]
    with ThreadPoolExecutor(max_workers=4) as pool:
        got = list(pool.map(lambda job: sampler.sample(*job), jobs))
    for x, y in zip(expected, got, strict=True):
        assert_same(x, y)


def test_inclusion_probability_is_k_over_d():
    # M centre nodes share the same d neighbours; one call draws M independent samples.
    m, d, k = 3000, 10, 3
    rows = np.repeat(np.arange(m), d)
    cols = m + np.tile(np.arange(d), m)
    indptr, indices = csr_from_pairs(m + d, rows, cols)
    mb = NeighborSampler(indptr, indices, [k]).sample(np.arange(m), 2024)
    check_layout(mb, indptr, indices, [k])
    picked = mb.input_nodes[mb.blocks[0].indices].numpy() - m
    counts = np.bincount(picked, minlength=d)
    p = k / d
    sd = np.sqrt(m * p * (1 - p))
    assert np.all(np.abs(counts - m * p) < 5 * sd), counts
    assert stats.chisquare(counts).pvalue > 1e-4

    # ... and across batch seeds for one node (the per-batch stream of RapidGNN)
    sampler = NeighborSampler(indptr, indices, [k])
    counts = np.zeros(d, dtype=np.int64)
    trials = 2000
    for i in range(trials):
        mb = sampler.sample(np.array([0]), batch_seed(0, 0, 0, i))
        counts[mb.input_nodes[mb.blocks[0].indices].numpy() - m] += 1
    sd = np.sqrt(trials * p * (1 - p))
    assert np.all(np.abs(counts - trials * p) < 5 * sd), counts


def test_k_subsets_are_uniform():
    m, d, k = 3000, 6, 2
    rows = np.repeat(np.arange(m), d)
    cols = m + np.tile(np.arange(d), m)
    indptr, indices = csr_from_pairs(m + d, rows, cols)
    mb = NeighborSampler(indptr, indices, [k]).sample(np.arange(m), 99)
    picked = (mb.input_nodes[mb.blocks[0].indices].numpy() - m).reshape(m, k)
    subsets = {s: i for i, s in enumerate(itertools.combinations(range(d), k))}
    counts = np.bincount([subsets[tuple(row)] for row in picked.tolist()],
                         minlength=len(subsets))
    assert stats.chisquare(counts).pvalue > 1e-4, counts


def test_layers_sample_independently():
    m, d, k = 500, 10, 3
    rows = np.repeat(np.arange(m), d)
    cols = m + np.tile(np.arange(d), m)
    indptr, indices = csr_from_pairs(m + d, rows, cols)
    mb = NeighborSampler(indptr, indices, [k, k]).sample(np.arange(m), 5)
    upper = mb.input_nodes[mb.blocks[1].indices].numpy().reshape(m, k)
    lower = mb.input_nodes[mb.blocks[0].indices[:m * k]].numpy().reshape(m, k)
    same = np.mean(np.all(upper == lower, axis=1))
    assert same < 0.05  # 1 / C(10, 3) ~ 0.008 expected


@pytest.mark.parametrize("num_layers", [1, 2, 3])
def test_sample_full_is_exact_khop(small_graph, num_layers):
    indptr, indices = small_graph
    sampler = NeighborSampler(indptr, indices, [2])
    seeds = np.array([3, 0, 250, 17], dtype=np.int64)
    mb = sampler.sample_full(seeds, num_layers)
    check_layout(mb, indptr, indices, [-1] * num_layers)
    nodes = mb.input_nodes.numpy()
    for layer, block in enumerate(mb.blocks):
        hops_dst = num_layers - 1 - layer
        assert set(nodes[:block.num_dst].tolist()) == khop(indptr, indices, seeds, hops_dst)
        assert set(nodes[:block.num_src].tolist()) == khop(indptr, indices, seeds, hops_dst + 1)
        got = set(zip(nodes[block.indices.numpy()].tolist(),
                      nodes[block.dst_of_edges().numpy()].tolist(), strict=True))
        want = {(u, v) for v in khop(indptr, indices, seeds, hops_dst)
                for u in neighbours(indptr, indices, v)}
        assert got == want
    ref_nodes, ref_blocks = build_blocks(seeds.tolist(), num_layers,
                                         lambda v, _layer: neighbours(indptr, indices, v))
    assert mb.input_nodes.tolist() == ref_nodes
    assert _blocks_as_lists(mb) == ref_blocks
    # fan-out -1 is the same thing, whatever the seed
    assert_same(mb, NeighborSampler(indptr, indices, [-1] * num_layers).sample(seeds, 31))


def test_edge_cases(small_graph):
    indptr, indices = small_graph
    sampler = NeighborSampler(indptr, indices, [3, 3])
    empty = sampler.sample(np.array([], dtype=np.int64), 0)
    assert empty.input_nodes.shape == (0,)
    assert [(b.num_src, b.num_dst, b.num_edges) for b in empty.blocks] == [(0, 0, 0)] * 2
    isolated = int(np.flatnonzero(np.diff(indptr) == 0)[0])
    mb = sampler.sample(np.array([isolated]), 0)
    assert mb.input_nodes.tolist() == [isolated]
    assert all(b.num_edges == 0 for b in mb.blocks)
    # any int seed, reduced mod 2**64
    assert_same(sampler.sample(np.array([1, 2]), -1), sampler.sample(np.array([1, 2]), 2**64 - 1))
    with pytest.raises(ValueError, match="duplicate"):
        sampler.sample(np.array([4, 5, 4]), 0)
    with pytest.raises(ValueError, match="outside"):
        sampler.sample(np.array([300]), 0)
    with pytest.raises(ValueError):
        sampler.sample(np.array([-1]), 0)
    with pytest.raises(ValueError):
        NeighborSampler(indptr, indices, [])
    with pytest.raises(ValueError):
        NeighborSampler(indptr, indices, [5, -2])
    with pytest.raises(ValueError):
        NeighborSampler(indptr, indices[:-1], [5])
    with pytest.raises(ValueError):
        sampler.sample_full(np.array([1]), 0)


def test_memmap_and_other_dtypes(small_graph, tmp_path):
    indptr, indices = small_graph
    np.save(tmp_path / "indptr.npy", indptr)
    np.save(tmp_path / "indices.npy", indices)
    mapped = NeighborSampler(np.load(tmp_path / "indptr.npy", mmap_mode="r"),
                             np.load(tmp_path / "indices.npy", mmap_mode="r"), [3, 4])
    narrow = NeighborSampler(indptr.astype(np.int32), indices.astype(np.int32), [3, 4])
    plain = NeighborSampler(indptr, indices, [3, 4])
    seeds = np.array([0, 9, 33], dtype=np.int32)
    want = plain.sample(seeds, 8)
    assert_same(want, mapped.sample(seeds, 8))
    assert_same(want, narrow.sample(seeds, 8))
