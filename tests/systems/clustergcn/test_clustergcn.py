"""Cluster-GCN: the batch subgraph and the epoch's cluster groups by hand, the clustering
kept out of the epoch, what validate and the partition check refuse, and real 2-worker
runs (no feature traffic, every batch recomputed from the partition by hand,
determinism)."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from commgnn.core.config import ConfigError
from commgnn.core.counts import FetchCounts
from commgnn.data.store import load_dataset
from commgnn.models.gnn import build_model
from commgnn.models.layers import GCNConv
from commgnn.partition import load_partition
from commgnn.partition.metis import metis_assign
from commgnn.sampling.seeds import derive_seed
from commgnn.systems.clustergcn import system as clustergcn
from commgnn.systems.clustergcn.system import (
    ClusterGCNSystem,
    epoch_groups,
    induced_subgraph,
)

pytestmark = pytest.mark.timeout(300)

# 0-1, 0-2, 1-2, 2-3, 3-4, 4-5 (a triangle with a tail)
EDGES = [(0, 1), (0, 2), (1, 2), (2, 3), (3, 4), (4, 5)]
OPTIONS = {"clusters": 8, "clusters_per_batch": 3, "diag_lambda": 0.5}


def csr(edges, n: int) -> tuple[np.ndarray, np.ndarray]:
    adj = [sorted({b for a, b in edges if a == v} | {a for a, b in edges if b == v})
           for v in range(n)]
    return (np.cumsum([0] + [len(a) for a in adj]).astype(np.int64),
            np.array([u for a in adj for u in a], dtype=np.int64))


def test_induced_subgraph_keeps_every_edge_among_members():
    indptr, indices = csr(EDGES, 6)
    sub_indptr, sub_indices = induced_subgraph(indptr, indices, np.array([1, 2, 3, 5]))
    # members 1, 2, 3, 5 at positions 0..3: edges 1-2, 2-3 kept; 5 isolated
    assert sub_indptr.tolist() == [0, 1, 3, 4, 4]
    assert sub_indices.tolist() == [1, 0, 2, 1]
    full = induced_subgraph(indptr, indices, np.arange(6))
    assert np.array_equal(full[0], indptr) and np.array_equal(full[1], indices)


def test_epoch_groups_are_a_seeded_permutation_cut_q_at_a_time():
    groups = epoch_groups(7, 3, 11, 1, 4)
    assert [len(g) for g in groups] == [3, 3, 1]  # the last group is short
    order = np.random.default_rng(derive_seed(11, "clustergcn", 1, 4)).permutation(7)
    assert np.array_equal(np.concatenate(groups), order)
    assert all(np.array_equal(a, b) for a, b in
               zip(groups, epoch_groups(7, 3, 11, 1, 4), strict=True))
    assert not np.array_equal(np.concatenate(epoch_groups(7, 3, 11, 1, 5)), order)


def gcn_spec(make_spec, **kwargs):
    spec = make_spec("clustergcn", **kwargs)
    return dataclasses.replace(spec, model="gcn")


def test_the_model_gets_the_diagonal_enhancement_and_only_gcn():
    system = ClusterGCNSystem(OPTIONS)
    model = build_model("gcn", 4, 8, 3)
    system._diagonal_enhanced(model)
    assert all(isinstance(layer, GCNConv) and layer.norm == "right"
               and layer.diag_lambda == 0.5 for layer in model.layers)
    with pytest.raises(ConfigError, match="GCN only, not GraphSAGE"):
        system._diagonal_enhanced(build_model("sage", 4, 8, 3))


def test_clustering_is_timed_apart_from_the_epoch(tiny_inputs, make_spec, monkeypatch):
    """The clustering runs (and is timed) in setup; an epoch's work does not include it."""
    dataset, partition = load_dataset(tiny_inputs[0]), load_partition(tiny_inputs[1])
    features = torch.from_numpy(np.array(dataset.features))
    owner = np.asarray(partition.book.owner)

    def fetch(nodes):
        assert (owner[nodes.numpy()] == 0).all()
        return features[nodes], FetchCounts(local_rows=int(nodes.numel()))

    def slow_metis(*args):
        time.sleep(1.0)
        return metis_assign(*args)

    monkeypatch.setattr(clustergcn, "metis_assign", slow_metis)
    ctx = SimpleNamespace(dataset=dataset, partition=partition, rank=0, world_size=2,
                          spec=gcn_spec(make_spec), device=torch.device("cpu"),
                          store=SimpleNamespace(fetch=fetch),
                          labels=torch.from_numpy(np.array(dataset.labels)),
                          emulator=SimpleNamespace(time_dilation=4.0))
    ctx.labels_of = lambda nodes: ctx.labels[nodes]
    system = ClusterGCNSystem(OPTIONS)
    system.cluster(ctx)
    start = time.perf_counter()
    system.start_epoch(0)
    steps = list(system.batches(0))
    first = system.end_epoch(0)
    epoch_s = time.perf_counter() - start
    assert len(steps) == 2 and first["clusters_per_worker"] == 4
    assert first["clustering_raw_s"] >= 1.0 > epoch_s
    assert first["clustering_s"] == pytest.approx(first["clustering_raw_s"] / 4)
    system.start_epoch(1)
    list(system.batches(1))
    assert "clustering_s" not in system.end_epoch(1)  # reported once


def test_validate_refuses_other_models_and_clusters_not_a_multiple_of_workers():
    from commgnn.experiments import expand_experiments

    config = {"datasets": {"tiny": {"source": "synthetic", "preset": "tiny"}},
              "partitionings": {"m2": {"method": "metis", "parts": 2}},
              "systems": {"cg7": {"system": "clustergcn", "clusters": 7}},
              "experiments": [{"systems": ["clustergcn", "cg7"], "datasets": ["tiny"],
                               "partitionings": ["m2"], "models": ["gcn", "gat"],
                               "batch_sizes": [64]}]}
    with pytest.raises(ConfigError) as caught:
        expand_experiments(config)
    lines = str(caught.value).splitlines()
    assert lines[0] == "3 problems:"  # gat twice, C = 7 once for both of its cells
    assert "  experiment cell clustergcn/tiny/m2/gat_b64_none_s0: system 'clustergcn' " \
        "trains GCN only (Cluster-GCN's normalisation is a GCN's), not 'gat' " \
        "(experiments[0])" in lines
    assert "  systems.cg7.clusters: 7: not a multiple of the 2 workers (each worker " \
        "clusters its own partition into clusters / workers) (experiments[0], run " \
        "cg7/tiny/m2/gcn_b64_none_s0 and 1 other run)" in lines
    config["experiments"][0].update(systems=["clustergcn"], models=["gcn"])
    assert len(expand_experiments(config)) == 1


def test_the_partition_check_refuses_too_many_clusters(tiny_inputs):
    partition = load_partition(tiny_inputs[1])
    smallest = int(partition.book.sizes().min())
    ClusterGCNSystem({"clusters": 2 * smallest}).check_partition(partition, 2)
    with pytest.raises(ConfigError, match=f"only {smallest} nodes"):
        ClusterGCNSystem({"clusters": 2 * smallest + 2}).check_partition(partition, 2)
    with pytest.raises(ConfigError, match=r"^systems\.cg9\.clusters: 9: not a multiple of "
                                          r"the 2 workers"):
        ClusterGCNSystem({"clusters": 9}, where="systems.cg9").check_partition(partition, 2)


# -- real runs -----------------------------------------------------------------------------
def _epochs(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "epochs.jsonl").read_text().splitlines()]


def _hand_clusters(indptr, indices, nodes: np.ndarray, k: int, seed: int) -> list[set]:
    """The partition's graph filtered edge by edge, then METIS as the system seeds it."""
    inside = set(nodes.tolist())
    position = {v: i for i, v in enumerate(nodes.tolist())}
    local_indptr, local_indices = [0], []
    for v in nodes.tolist():
        local_indices += [position[u] for u in indices[indptr[v]:indptr[v + 1]].tolist()
                          if u in inside]
        local_indptr.append(len(local_indices))
    assign = metis_assign(np.array(local_indptr), np.array(local_indices), k,
                          seed % (2**31 - 1))
    return [set(nodes[assign == c].tolist()) for c in range(k)]


def test_runs_read_only_own_rows_and_batch_q_clusters_by_hand(tiny_inputs, tmp_path,
                                                              run_on_tiny, make_spec,
                                                              read_steps):
    spec = gcn_spec(make_spec, epochs=2, network="10gbe", system_options=OPTIONS)
    out = run_on_tiny(tmp_path, tiny_inputs, spec)
    ds = load_dataset(tiny_inputs[0])
    book = load_partition(tiny_inputs[1]).book
    indptr, indices = np.asarray(ds.indptr), np.asarray(ds.indices)
    train = set(np.asarray(ds.train_idx).tolist())
    for worker in range(2):
        clusters = _hand_clusters(indptr, indices, book.nodes(worker), 4,
                                  derive_seed(spec.seed, "clustergcn-metis", worker))
        steps = read_steps(out, worker)
        for epoch in range(2):
            mine = [s for s in steps if s["epoch"] == epoch]
            assert [len(s["clusters"]) for s in mine] == [3, 1]  # 4 clusters, q = 3
            order = np.random.default_rng(derive_seed(spec.seed, "clustergcn", worker,
                                                      epoch)).permutation(4)
            assert [c for s in mine for c in s["clusters"]] == order.tolist()
            for s in mine:
                nodes = set().union(*(clusters[c] for c in s["clusters"]))
                edges = sum(int(np.isin(indices[indptr[v]:indptr[v + 1]],
                                        list(nodes)).sum()) for v in nodes)
                assert s["local_rows"] == s["batch_nodes"] == len(nodes)
                assert s["batch_edges"] == edges  # every edge among the q clusters
                assert s["batch_size"] == len(nodes & train)  # loss on its training nodes
                assert s["remote_rpcs"] == s["remote_rows"] == s["sampling_rpcs"] == 0
                assert s["allreduce_bytes"] > 0
    epochs = _epochs(out)
    for epoch in epochs:  # gradients only
        for traffic in ("fetch", "sampling", "shuffle", "migration"):
            assert epoch[f"network_{traffic}_bytes"] == 0
        assert epoch["network_allreduce_bytes"] > 0 and epoch["steps_max"] == 2
        assert epoch["remote_rows"] == 0 and epoch["local_rows"] == ds.num_nodes
    assert epochs[0]["clustering_raw_s"] > 0 and "clustering_raw_s" not in epochs[1]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["clustering_s"] == epochs[0]["clustering_raw_s"]  # no dilation here
    assert summary["clustering_s"] <= summary["setup_s"]  # inside the setup
    assert summary["clusters_per_worker"] == 4
    assert summary["system_options"] == {**OPTIONS, "system": "clustergcn"}
    assert np.isfinite(summary["test_acc"])

    again = run_on_tiny(tmp_path, tiny_inputs, spec, name="again")
    for worker in range(2):
        first, second = read_steps(out, worker), read_steps(again, worker)
        for key in ("clusters", "local_rows", "batch_edges", "batch_size",
                    "allreduce_bytes", "loss"):
            assert [s[key] for s in first] == [s[key] for s in second]
    assert [e["test_acc"] for e in _epochs(again) if "test_acc" in e] == \
        [e["test_acc"] for e in epochs if "test_acc" in e]


def test_the_shipped_config_validates_and_builds_table_5(repo_root, tmp_path):
    from dry_run import job_counts

    from commgnn.systems.grappa.system import GrappaSystem

    counts = job_counts(repo_root, tmp_path, repo_root / "configs" / "clustergcn.yaml", 300)
    assert int(counts["train"]) == 6  # Cluster-GCN and Grappa, 3 seeds each
    assert int(counts["system_figure"]) == len({**GrappaSystem.figures,
                                                **ClusterGCNSystem.figures})
