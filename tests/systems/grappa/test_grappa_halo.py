"""Grappa's halo (§3.2, "the key enabler"): by default a partition holds every node within
k hops of its chunks, k = the model's layers, so a k-layer mini-batch sampled inside the
partition is the one sampled on the whole graph; ``chunk_halo_hops: 0`` keeps strict isolation
(base ∪ swept chunk alone), the measured alternative. Unit-level on the partition's nodes,
then one tiny real run that records the resolved depth."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from commgnn.data.store import write_dataset
from commgnn.data.synthetic import generate_synthetic
from commgnn.partition import partition_graph, write_partition
from commgnn.partition.chunk import chunk_pairs
from commgnn.partition.subgraph import induced_csr
from commgnn.report.tables import runs_table
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.systems.grappa.system import GrappaSystem, partition_nodes, resolve_chunk_halo_hops

pytestmark = pytest.mark.timeout(300)
FANOUTS = [5, 5]  # the tiny runs' 2-layer model


@pytest.fixture(scope="module")
def graph():
    """The tests' 600-node synthetic graph cut into 4 random chunks for 2 workers."""
    ds = generate_synthetic({"preset": "tiny", "nodes": 600, "seed": 5}, name="tiny")
    part = partition_graph(ds, {"method": "chunk", "parts": 2, "chunks": 4, "seed": 0})
    return ds, part


def _within(indptr: np.ndarray, indices: np.ndarray, start: np.ndarray, hops: int) -> set:
    """Every node within ``hops`` hops of ``start`` (breadth-first, by hand)."""
    seen, frontier = set(start.tolist()), set(start.tolist())
    for _ in range(hops):
        frontier = {int(u) for v in frontier for u in indices[indptr[v]:indptr[v + 1]]} - seen
        seen |= frontier
    return seen


def test_the_default_halo_is_the_models_depth():
    assert GrappaSystem.options["chunk_halo_hops"]["default"] == "depth"
    assert GrappaSystem.resolve_options({})["chunk_halo_hops"] == "depth"
    assert GrappaSystem.resolve_options({"chunk_halo_hops": 0})["chunk_halo_hops"] == 0
    assert resolve_chunk_halo_hops("depth", 3) == 3 and resolve_chunk_halo_hops(0, 3) == 0
    assert resolve_chunk_halo_hops(1, 4) == 1
    with pytest.raises(ValueError):
        resolve_chunk_halo_hops("two", 2)
    from commgnn.core.config import ConfigError
    with pytest.raises(ConfigError, match=r"systems\.grappa\.halo_hops: renamed "
                                          r"'chunk_halo_hops'"):
        GrappaSystem.resolve_options({"halo_hops": 0})
    with pytest.raises(ConfigError, match="chunk_halo_hops"):
        GrappaSystem.resolve_options({"chunk_halo_hops": "deep"})


@pytest.mark.parametrize("super_epoch", [0, 1, 2])
def test_a_partition_holds_the_k_hop_closure_of_its_training_nodes(graph, super_epoch):
    ds, part = graph
    indptr, indices = np.asarray(ds.indptr), np.asarray(ds.indices)
    chunk_of = np.asarray(part.book.owner)
    train = np.asarray(ds.train_idx)
    depth = resolve_chunk_halo_hops(GrappaSystem.resolve_options({})["chunk_halo_hops"],
                                    len(FANOUTS))
    for worker, (base, swept) in enumerate(chunk_pairs(4, 2, super_epoch)):
        chunks = np.flatnonzero(np.isin(chunk_of, (base, swept)))
        nodes = partition_nodes(chunk_of, (base, swept), indptr, indices, depth)
        assert np.all(np.diff(nodes) > 0)  # sorted, distinct
        closure = _within(indptr, indices, chunks, depth)
        assert set(nodes.tolist()) == closure  # the chunks and their k-hop halo, no more
        seeds = train[chunk_of[train] == base]  # the worker's seeds: its base's training
        assert _within(indptr, indices, seeds, depth) <= closure
        # strict isolation: the two chunks alone
        strict = partition_nodes(chunk_of, (base, swept), indptr, indices, 0)
        assert np.array_equal(strict, chunks)
        assert strict.size < nodes.size, worker  # the halo adds nodes here


def test_a_mini_batch_in_the_partition_is_the_one_on_the_whole_graph(graph):
    """With the k-hop halo the induced local graph gives every seed's k-layer computation
    tree whole: sampling inside the partition draws the global graph's batch; in strict
    isolation it does not."""
    ds, part = graph
    indptr, indices = np.asarray(ds.indptr), np.asarray(ds.indices)
    chunk_of = np.asarray(part.book.owner)
    train = np.asarray(ds.train_idx)
    base, swept = chunk_pairs(4, 2, 0)[0]
    seeds = np.sort(train[chunk_of[train] == base])[:32]
    whole = NeighborSampler(indptr, indices, FANOUTS).sample(seeds, 11)
    differs = False
    for hops in (len(FANOUTS), 0):
        local = induced_csr(indptr, indices,
                            partition_nodes(chunk_of, (base, swept), indptr, indices, hops))
        batch = NeighborSampler(*local, FANOUTS).sample(seeds, 11)
        same = np.array_equal(batch.input_nodes.numpy(), whole.input_nodes.numpy())
        if hops:
            assert same
        else:
            differs = not same
    assert differs  # strict isolation loses neighbours of these seeds


@pytest.fixture(scope="module")
def chunk_inputs(graph, tmp_path_factory) -> tuple[Path, Path]:
    ds, part = graph
    root = tmp_path_factory.mktemp("grappa-halo")
    write_dataset(ds, root / "dataset")
    write_partition(part, root / "chunk4")
    return root / "dataset", root / "chunk4"


def test_a_run_records_its_resolved_halo(chunk_inputs, tmp_path, run_on_tiny, make_spec):
    """The default run resolves ``depth`` to its 2 layers (metric ``chunk_halo_hops``; the option
    stays ``depth``), holds whole neighbourhoods (coverage 1), and names the reach of its
    congestion (none of Grappa's traffic inside an iteration is on the RPC port)."""
    network = {"preset": "10gbe", "congestion": {"kind": "scenario", "name": "single-link",
                                                 "delay_ms": 5, "onset_epoch": 1}}
    out = run_on_tiny(tmp_path, chunk_inputs, make_spec("grappa", epochs=3, network=network))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["system_options"]["chunk_halo_hops"] == "depth"
    assert summary["chunk_halo_hops"] == 2 and "chunk_halo_hops" in summary["system_metrics"]
    assert summary["coverage_factor"] == 1.0 and summary["coverage_uniform"] == 1.0
    assert (summary["congestion"], summary["congestion_reach"]) == (
        "scenario:single-link", "fetch+sampling")
    row = runs_table([out]).iloc[0]
    assert (row["option_chunk_halo_hops"], row["chunk_halo_hops"]) == ("depth", 2)
    assert row["congestion_reach"] == "fetch+sampling"
