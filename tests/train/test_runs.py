"""Real multi-process runs (2 workers, gloo + TensorPipe RPC on loopback)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from commgnn.data.store import load_dataset
from commgnn.partition import load_partition
from commgnn.sampling.batches import epoch_batches
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.schedule import steps_per_epoch, worker_train_nodes
from commgnn.sampling.seeds import batch_seed

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def default_run(tmp_path_factory, tiny_inputs, run_on_tiny, make_spec) -> Path:
    return run_on_tiny(tmp_path_factory.mktemp("default"), tiny_inputs, make_spec())


def test_summary_has_the_common_keys(default_run, read_steps):
    summary = json.loads((default_run / "summary.json").read_text())
    for key in ("system", "dataset", "partitioning", "model", "batch_size", "network", "seed",
                "workers", "epochs", "mean_epoch_time_s", "remote_rpcs_per_epoch",
                "remote_rows_per_epoch", "remote_bytes_per_epoch", "test_acc", "energy_j",
                "energy_meter", "peak_mem_bytes"):
        assert key in summary, key
    assert summary["epochs"] == 2 and summary["workers"] == 2
    assert summary["energy_meter"]
    assert 0.0 <= summary["test_acc"] <= 1.0
    assert not default_run.with_name(default_run.name + ".partial").exists()
    table = pd.read_csv(default_run / "steps.csv")
    assert len(table) == len(read_steps(default_run, 0)) + len(read_steps(default_run, 1))
    assert set(pd.read_csv(default_run / "epochs.csv")["worker"]) == {0, 1}
    epochs = [json.loads(line) for line in (default_run / "epochs.jsonl").read_text()
              .splitlines()]
    for worker, record in enumerate(epochs[-1]["workers"]):  # recent RTTs to the other owner
        assert set(record["recent_rtt_s"]) == {str(1 - worker)}
        assert record["recent_rtt_s"][str(1 - worker)] > 0
    steps = read_steps(default_run, 0)
    assert {r["energy_meter"] for r in steps} == {summary["energy_meter"]}
    assert all(r["energy_j"] > 0 for r in steps)
    assert sum(r["energy_j"] for r in steps) < summary["energy_j"]  # steps are part of it


def test_remote_rows_match_independent_count(default_run, tiny_inputs, make_spec, read_steps):
    """Per step: remote rows/RPCs/bytes equal a count from the sampled blocks and the book."""
    ds = load_dataset(tiny_inputs[0])
    book = load_partition(tiny_inputs[1]).book
    spec = make_spec()
    sampler = NeighborSampler(ds.indptr, ds.indices, spec.get("fanouts"))
    n_steps = steps_per_epoch(ds.train_idx, book.owner, 2, spec.batch_size)
    for worker in range(2):
        records = read_steps(default_run, worker)
        assert len(records) == 2 * n_steps
        train = worker_train_nodes(ds.train_idx, book.owner, worker)
        for rec in records:
            own = epoch_batches(train, spec.batch_size, spec.seed, worker, rec["epoch"])
            seeds = own[rec["step"] % len(own)]
            batch = sampler.sample(seeds, batch_seed(spec.seed, worker, rec["epoch"],
                                                     rec["step"]))
            owners = np.asarray(book.owner)[batch.input_nodes.numpy()]
            remote = owners != worker
            assert rec["remote_rows"] == int(remote.sum())
            assert rec["local_rows"] == int((~remote).sum())
            assert rec["remote_rpcs"] == len(np.unique(owners[remote]))
            assert rec["remote_bytes"] == int(remote.sum()) * ds.feature_dim * 4
            assert rec["batch_size"] == len(seeds)


def test_distributed_sampling_traffic_matches_independent_count(default_run, tiny_inputs,
                                                                 make_spec, read_steps):
    """``default`` samples other partitions' rows by RPC: per layer, one request per owner
    of the remote destinations, 8 bytes per id (+24 header) up, row pointer and neighbours
    (8 bytes each) down."""
    ds = load_dataset(tiny_inputs[0])
    owner = np.asarray(load_partition(tiny_inputs[1]).book.owner)
    spec = make_spec()
    sampler = NeighborSampler(ds.indptr, ds.indices, spec.get("fanouts"))
    n_steps = steps_per_epoch(ds.train_idx, owner, 2, spec.batch_size)
    for worker in range(2):
        train = worker_train_nodes(ds.train_idx, owner, worker)
        for rec in read_steps(default_run, worker):
            own = epoch_batches(train, spec.batch_size, spec.seed, worker, rec["epoch"])
            batch = sampler.sample(own[rec["step"] % len(own)],
                                   batch_seed(spec.seed, worker, rec["epoch"], rec["step"]))
            rpcs = rows = nbytes = 0
            nodes = batch.input_nodes.numpy()
            for block in batch.blocks:
                dst = nodes[:block.num_dst]
                degree = np.diff(block.indptr.numpy())
                remote = owner[dst] != worker
                if remote.any():  # two workers: one remote owner
                    n, e = int(remote.sum()), int(degree[remote].sum())
                    rpcs, rows = rpcs + 1, rows + n
                    nbytes += (8 * n + 24) + 8 * (n + 1) + 8 * e
            assert (rec["sampling_rpcs"], rec["sampling_rows"], rec["sampling_bytes"]) == \
                (rpcs, rows, nbytes)
        assert sum(r["sampling_rpcs"] for r in read_steps(default_run, worker)) > 0
        assert len(read_steps(default_run, worker)) == 2 * n_steps


def test_replicated_sampling_gives_the_same_batches_for_free(default_run, tiny_inputs,
                                                             tmp_path, run_on_tiny,
                                                             make_spec, read_steps):
    spec = make_spec(epochs=1, system_options={"sampling": "replicated"})
    out = run_on_tiny(tmp_path, tiny_inputs, spec)
    keys = ("remote_rows", "remote_rpcs", "local_rows", "loss")
    for worker in range(2):
        first = [r for r in read_steps(default_run, worker) if r["epoch"] == 0]
        replicated = read_steps(out, worker)
        assert [[r[k] for k in keys] for r in replicated] == [[r[k] for k in keys] for r in first]
        assert all(r["sampling_rpcs"] == r["sampling_bytes"] == 0 for r in replicated)


def test_same_seed_same_counts_and_losses(default_run, tiny_inputs, tmp_path, run_on_tiny,
                                         make_spec, read_steps):
    again = run_on_tiny(tmp_path, tiny_inputs, make_spec())
    for worker in range(2):
        a, b = read_steps(default_run, worker), read_steps(again, worker)
        keys = ("epoch", "step", "remote_rpcs", "remote_rows", "remote_bytes", "local_rows",
                "sampling_rpcs", "sampling_bytes", "allreduce_bytes", "allreduce_messages",
                "loss", "acc")
        assert [[r[k] for k in keys] for r in a] == [[r[k] for k in keys] for r in b]


def test_oracle_runs_the_same_batches_without_communication(default_run, tiny_inputs,
                                                            tmp_path, run_on_tiny, make_spec,
                                                            read_steps):
    oracle = run_on_tiny(tmp_path, tiny_inputs, make_spec(system="oracle"))
    for worker in range(2):
        for d, o in zip(read_steps(default_run, worker), read_steps(oracle, worker), strict=True):
            assert o["remote_rows"] == 0 and o["remote_rpcs"] == 0
            assert o["local_rows"] == d["local_rows"] + d["remote_rows"]
            assert o["loss"] == pytest.approx(d["loss"], rel=1e-5, abs=1e-6)


def test_resume_reproduces_uninterrupted_run(tiny_inputs, tmp_path, run_on_tiny, make_spec,
                                             read_steps):
    full = run_on_tiny(tmp_path, tiny_inputs, make_spec(epochs=3), name="full")
    run_on_tiny(tmp_path, tiny_inputs, make_spec(epochs=2), name="resumed")
    resumed = run_on_tiny(tmp_path, tiny_inputs, make_spec(epochs=3), name="resumed")
    for worker in range(2):
        assert [(r["epoch"], r["step"], r["loss"]) for r in read_steps(full, worker)] == \
            [(r["epoch"], r["step"], r["loss"]) for r in read_steps(resumed, worker)]
    a = torch.load(tmp_path / "full-ckpt" / "last.pt", weights_only=True)["model"]
    b = torch.load(tmp_path / "resumed-ckpt" / "last.pt", weights_only=True)["model"]
    for key in a:
        assert torch.equal(a[key], b[key]), key


def test_tcp_transport_gives_the_same_run(default_run, tiny_inputs, tmp_path, run_on_tiny,
                                          make_spec, read_steps):
    """TensorPipe forced onto TCP sockets (for shaped real traffic) changes nothing else."""
    tcp = run_on_tiny(tmp_path, tiny_inputs, make_spec(epochs=1, transport="tcp"))
    keys = ("remote_rows", "remote_rpcs", "local_rows", "loss")
    for worker in range(2):
        first_epoch = [r for r in read_steps(default_run, worker) if r["epoch"] == 0]
        assert [[r[k] for k in keys] for r in read_steps(tcp, worker)] == \
            [[r[k] for k in keys] for r in first_epoch]
