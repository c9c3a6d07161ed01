"""Grappa: coverage estimators and the scaling hook on hand-computed cases, Adam's reading of
the scale, and real 2-worker runs (isolation from the per-class counters, exact switch
traffic, phases, full-graph mode, the ablations, resume)."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from commgnn.data.store import load_dataset, write_dataset
from commgnn.data.synthetic import generate_synthetic
from commgnn.network.netem import network_from_spec
from commgnn.partition import load_partition, partition_graph, write_partition
from commgnn.partition.chunk import chunk_pairs
from commgnn.partition.subgraph import induced_csr, keep_cross_edges, merge_edges
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.seeds import batch_seed
from commgnn.systems.grappa.system import (
    coverage_factor,
    coverage_resampling,
    coverage_uniform,
    phase_groups,
)

pytestmark = pytest.mark.timeout(300)

# A graph drawn by hand: 0-1, 0-2, 0-4, 1-2, 1-5, 2-3, 3-4, 3-5; the partition holds 0..3.
EDGES = [(0, 1), (0, 2), (0, 4), (1, 2), (1, 5), (2, 3), (3, 4), (3, 5)]


def toy_csr() -> tuple[np.ndarray, np.ndarray]:
    n = 6
    adj = [sorted({b for a, b in EDGES if a == v} | {a for a, b in EDGES if b == v})
           for v in range(n)]
    indptr = np.cumsum([0] + [len(a) for a in adj]).astype(np.int64)
    return indptr, np.array([u for a in adj for u in a], dtype=np.int64)


def test_induced_graph_and_both_estimators_by_hand():
    indptr, indices = toy_csr()
    local_indptr, local_indices = induced_csr(indptr, indices, np.array([0, 1, 2, 3]))
    d_local = np.diff(local_indptr)
    d_global = np.diff(indptr)
    # degrees (local/global): 0: 2/3 (4 outside), 1: 2/3 (5 outside), 2: 3/3, 3: 1/3
    assert d_local.tolist() == [2, 2, 3, 1, 0, 0]
    assert d_global.tolist() == [3, 3, 3, 3, 2, 2]
    assert local_indices[local_indptr[3]:local_indptr[4]].tolist() == [2]
    seeds = np.array([0, 2, 3])
    # Eq. 12: (2/3 + 3/3 + 1/3) / 3 = 2/3
    assert coverage_uniform(d_local[seeds], d_global[seeds]) == pytest.approx(2 / 3)
    # Eq. 18, k = 2: (3/2 - 1)·min(2, 2) + (3/3 - 1)·2 + (3/1 - 1)·min(2, 1) = 1 + 0 + 2 = 3
    assert coverage_resampling(d_local[seeds], d_global[seeds], 2) == pytest.approx(1 / 3)
    # k = 1 samples one neighbour of each: 0.5 + 0 + 2 = 2.5
    assert coverage_resampling(d_local[seeds], d_global[seeds], 1) == pytest.approx(1 / 2.5)
    # |S| x Eq. 18 (the harmonic-mean reading): 3 / 3 and 3 / 2.5
    assert coverage_factor("harmonic", d_local[seeds], d_global[seeds], 2) == pytest.approx(1)
    assert coverage_factor("harmonic", d_local[seeds], d_global[seeds], 1) == pytest.approx(1.2)
    # a fully covered batch is unbiased; UW is 1; an isolated node counts as covered
    assert coverage_resampling(np.array([3]), np.array([3]), 2) == 1.0
    assert coverage_factor("none", d_local[seeds], d_global[seeds], 2) == 1.0
    assert coverage_uniform(np.array([0]), np.array([0])) == 1.0


def test_kept_cross_edges_are_symmetric_and_deterministic():
    indptr, indices = toy_csr()
    members = np.array([0, 1, 2, 3])
    src, dst = keep_cross_edges(indptr, indices, members, 1.0, seed=3)
    assert sorted(zip(src.tolist(), dst.tolist(), strict=True)) == sorted(
        [(0, 4), (4, 0), (1, 5), (5, 1), (3, 4), (4, 3), (3, 5), (5, 3)])
    assert keep_cross_edges(indptr, indices, members, 0.0, seed=3)[0].size == 0
    half = keep_cross_edges(indptr, indices, members, 0.5, seed=3)
    assert all(np.array_equal(a, b) for a, b in
               zip(half, keep_cross_edges(indptr, indices, members, 0.5, seed=3), strict=True))
    li, lx = induced_csr(indptr, indices, members)
    mi, mx = merge_edges(li, lx, src, dst)
    assert np.array_equal(mi, indptr) and np.array_equal(mx, indices)  # all edges back


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _hook_worker(rank: int, port: int, results) -> None:
    from torch.nn.parallel import DistributedDataParallel

    from commgnn.network.netem import allreduce_hook

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    model = torch.nn.Linear(1, 1, bias=False)
    ddp = DistributedDataParallel(model)
    factor = (0.5, 1.0)[rank]
    ddp.register_comm_hook(None, allreduce_hook(network_from_spec("none", 2), rank, 2,
                                                scale=lambda: factor))
    gradient = (2.0, 4.0)[rank]  # d(w·g)/dw = g
    ddp(torch.tensor([[gradient]])).sum().backward()
    results[rank] = float(model.weight.grad)
    dist.destroy_process_group()


def test_scaling_hook_two_workers_by_hand():
    results = mp.Manager().dict()
    mp.spawn(_hook_worker, args=(_free_port(), results), nprocs=2)
    # (1/W)·Σ c_w·g_w = (0.5·2 + 1·4) / 2
    assert results[0] == results[1] == pytest.approx(2.5)


def _adam_step(scale: float, weight_decay: float) -> torch.Tensor:
    torch.manual_seed(0)
    w = torch.nn.Parameter(torch.randn(5))
    opt = torch.optim.Adam([w], lr=0.1, weight_decay=weight_decay)
    gradients = torch.randn(3, 5)
    for g in gradients:
        w.grad = g * scale
        opt.step()
    return w.detach().clone()


def test_adam_cancels_a_common_factor_but_not_with_weight_decay():
    # Eq. 18's factor is ~1/(batch·fan-out); under Adam a factor shared by all workers
    # cancels, so only the workers' relative weights change the update ...
    assert torch.allclose(_adam_step(1.0, 0.0), _adam_step(1e-3, 0.0), atol=1e-5)
    # ... while coupled weight decay is added after the scaling and is not scaled with it.
    assert not torch.allclose(_adam_step(1.0, 0.1), _adam_step(1e-3, 0.1), atol=1e-3)


def test_phase_groups():
    assert phase_groups(4, 4) == [[0, 1, 2, 3]]
    assert phase_groups(4, 1) == [[0], [1], [2], [3]]
    assert phase_groups(5, 2) == [[0, 1], [2, 3], [4]]  # the last phase is short


# -- real runs -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def chunk_inputs(tmp_path_factory) -> tuple[Path, Path]:
    """The tiny dataset of conftest cut into 4 chunks for 2 workers (bases rotate)."""
    root = tmp_path_factory.mktemp("grappa")
    ds = generate_synthetic({"preset": "tiny", "nodes": 600, "seed": 5}, name="tiny")
    write_dataset(ds, root / "dataset")
    write_partition(partition_graph(ds, {"method": "chunk", "parts": 2, "chunks": 4,
                                         "seed": 0}), root / "chunk4")
    return root / "dataset", root / "chunk4"


def _epochs(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "epochs.jsonl").read_text().splitlines()]


def _partition(chunk_of: np.ndarray, pair: tuple[int, int]) -> np.ndarray:
    return np.flatnonzero(np.isin(chunk_of, pair))


def test_isolated_run_counts_switches_and_batches(chunk_inputs, tmp_path, run_on_tiny,
                                                  make_spec, read_steps):
    # strict isolation (no halo): the partition is base ∪ swept chunk alone
    spec = make_spec("grappa", epochs=3, system_options={"super_epoch_epochs": 1,
                                                         "chunk_halo_hops": 0},
                     network="10gbe")
    out = run_on_tiny(tmp_path, chunk_inputs, spec)
    ds = load_dataset(chunk_inputs[0])
    chunk_of = np.asarray(load_partition(chunk_inputs[1]).book.owner)
    indptr, indices = np.asarray(ds.indptr), np.asarray(ds.indices)
    train = set(np.asarray(ds.train_idx).tolist())
    epochs = _epochs(out)
    row_bytes = ds.feature_dim * 4
    for worker in range(2):
        steps = read_steps(out, worker)
        held = np.empty(0, dtype=np.int64)
        for epoch in range(3):
            base, swept = chunk_pairs(4, 2, epoch)[worker]  # one super-epoch per epoch
            nodes = _partition(chunk_of, (base, swept))
            # exact switch: the rows not held before, minus those homed here (chunk mod 2)
            new = np.setdiff1d(nodes, held)
            pulled = new[chunk_of[new] % 2 != worker]
            record = epochs[epoch]["workers"][worker]
            assert record["switch_rows"] == pulled.size
            edges = sum(int(np.isin(indices[indptr[v]:indptr[v + 1]], nodes).sum())
                        for v in pulled)
            assert record["switch_bytes"] == pulled.size * row_bytes + 8 * edges
            held = nodes
            # isolated sampling, recomputed on a graph filtered edge by edge here
            inside = set(nodes.tolist())
            sub_indptr, sub_indices = [0], []
            for v in range(ds.num_nodes):
                row = [u for u in indices[indptr[v]:indptr[v + 1]].tolist()
                       if v in inside and u in inside]
                sub_indices += row
                sub_indptr.append(len(sub_indices))
            sampler = NeighborSampler(np.array(sub_indptr), np.array(sub_indices), [5, 5])
            mine = sorted(train & set(np.flatnonzero(chunk_of == base).tolist()))
            per_epoch = [s for s in steps if s["epoch"] == epoch]
            assert per_epoch and sum(s["batch_size"] for s in per_epoch) >= len(mine)
            for s in per_epoch:
                assert s["remote_rpcs"] == s["sampling_rpcs"] == 0
                assert s["allreduce_bytes"] > 0
            first = per_epoch[0]
            rng_seeds = _first_batch_seeds(mine, spec, worker, epoch, len(per_epoch))
            batch = sampler.sample(rng_seeds, batch_seed(spec.seed, worker, epoch, 0))
            assert first["local_rows"] == batch.input_nodes.numel()
            assert set(batch.input_nodes.tolist()) <= inside
    for epoch in epochs:  # inside the iterations: gradients only
        assert epoch["network_fetch_bytes"] == epoch["network_sampling_bytes"] == 0
        assert epoch["network_allreduce_bytes"] > 0
        assert epoch["super_epoch"] == epoch["epoch"]
    assert epochs[0]["network_shuffle_bytes"] > 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["remote_rows_per_epoch"] == 0
    assert 0 < summary["coverage_factor"] < 1 and 0 < summary["coverage_uniform"] < 1


def _first_batch_seeds(train_nodes, spec, worker, epoch, steps) -> np.ndarray:
    from commgnn.sampling.schedule import epoch_seed_nodes

    return epoch_seed_nodes(np.array(train_nodes, dtype=np.int64), steps, spec.batch_size,
                            spec.seed, worker, epoch)[0]


def test_phase_parallel_one_worker_at_a_time(chunk_inputs, tmp_path, run_on_tiny, make_spec):
    runs = {}
    for active in (2, 1):
        spec = make_spec("grappa", epochs=4, system_options={"active_workers": active},
                         network="10gbe")
        runs[active] = _epochs(run_on_tiny(tmp_path, chunk_inputs, spec, name=f"m{active}"))
    for active, epochs in runs.items():
        losses = [e["train_loss"] for e in epochs]
        assert all(np.isfinite(losses)) and losses[-1] < losses[0]
        for e in epochs:
            assert e["phases"] == 3 - active
            assert e["optimizer_updates"] == e["phases"] * e["steps_max"]
    for e2, e1 in zip(runs[2], runs[1], strict=True):
        # every partition trains each of its batches once per epoch in both modes
        assert [w["seen"] for w in e2["workers"]] == [w["seen"] for w in e1["workers"]]
        assert e1["network_allreduce_bytes"] == 0 < e2["network_allreduce_bytes"]
        assert e1["network_migration_bytes"] > 0 == e2["network_migration_bytes"]


def test_fullgraph_ablations_and_early_switch(chunk_inputs, tmp_path, run_on_tiny, make_spec,
                                              read_steps):
    full = _epochs(run_on_tiny(tmp_path, chunk_inputs, make_spec(
        "grappa", epochs=3, system_options={"mode": "fullgraph"}), name="full"))
    assert all(e["steps_max"] == 1 for e in full)
    assert full[-1]["train_loss"] < full[0]["train_loss"]

    # 50S keeps half the cross-partition edges of a strictly isolated partition
    options = {"remote_edge_fraction": 0.5, "switching": "fixed", "estimator": "none",
               "chunk_halo_hops": 0}
    out = run_on_tiny(tmp_path, chunk_inputs, make_spec("grappa", epochs=2,
                                                        system_options=options), name="50s")
    epochs = _epochs(out)
    assert all(e["super_epoch"] == 0 for e in epochs)  # FP: no switch
    assert epochs[1]["switch_bytes"] == 0
    assert all(e["coverage_factor"] == 1.0 for e in epochs)  # UW
    remote = sum(s["remote_rows"] for w in range(2) for s in read_steps(out, w))
    assert remote > 0 and sum(e["network_fetch_bytes"] for e in epochs) > 0  # 50S fetches
    assert sum(e["remote_rows"] for e in epochs) == remote

    early = _epochs(run_on_tiny(tmp_path, chunk_inputs, make_spec(
        "grappa", epochs=3, system_options={"super_epoch_epochs": 10, "deficit_threshold": 0.0,
                                            "deficit_patience": 1, "chunk_halo_hops": 0}),
        name="early"))  # strict isolation: a coverage deficit (a halo closes it)
    assert [e["super_epoch"] for e in early] == [0, 1, 2]


def test_resume_restores_the_super_epoch(chunk_inputs, tmp_path, run_on_tiny, make_spec):
    options = {"super_epoch_epochs": 2}
    whole = _epochs(run_on_tiny(tmp_path, chunk_inputs, make_spec(
        "grappa", epochs=3, system_options=options), name="whole"))
    run_on_tiny(tmp_path, chunk_inputs, make_spec("grappa", epochs=2, system_options=options),
                name="part")
    resumed = _epochs(run_on_tiny(tmp_path, chunk_inputs, make_spec(
        "grappa", epochs=3, system_options=options), name="part"))
    assert [e["super_epoch"] for e in resumed] == [0, 0, 1]
    assert [e["train_loss"] for e in resumed] == pytest.approx([e["train_loss"]
                                                                for e in whole])
