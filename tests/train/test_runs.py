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
    # the device plan: both on the CPU
    plan = summary["device_plan"]
    assert (summary["device"], summary["device_mode"]) == ("cpu", "cpu")
    assert plan["devices"] == ["cpu", "cpu"] and plan["backend"] == "gloo"
    assert plan["sharers"] == [1, 1] and (plan["setting"], plan["reason"]) == ("cpu", "")
    assert summary["energy_gpu_attribution"] == "none: no GPU"
    assert summary["memory_on"] == {"peak_rss_bytes": "host", "peak_mem_bytes": "cpu",
                                    "batch_feature_bytes_max": "cpu"}
    # the `none` network on one host at f = 1: nothing to judge a time claim on
    assert summary["clock"] == "raw CPU" and "network_mode" in summary
    assert summary["network_mode"] == "loopback"
    # what made it: the tiny dataset was written without a generator (no `commgnn dataset`)
    assert summary["testbed"] == ("unrecorded; congestion v3; dilation per workload; "
                                  "target energy v3; evaluation v2")
    assert summary["commit"] == summary["provenance"]["commit"] != ""


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


def test_target_energy_model_in_every_record(tiny_inputs, tmp_path, run_on_tiny, make_spec,
                                             read_steps):
    """Every step and epoch record carries the target-machine model's energy in target
    time (raw / f), also across a resume; epoch rows accumulate it up to the summary's."""
    model = {"gpu_idle_w": 50, "gpu_busy_w": 300, "cpu_idle_w": 30, "cpu_max_w": 110,
             "cpu_cores": 16, "rpc_cpu_s": 2e-4, "copy_bytes_per_s": 1e9}
    network = {"preset": "1gbe", "time_dilation": 4}
    first = run_on_tiny(tmp_path, tiny_inputs, make_spec(epochs=1, network=network,
                                                         energy_model=model))
    first_row = json.loads((first / "epochs.jsonl").read_text())
    out = run_on_tiny(tmp_path, tiny_inputs, make_spec(epochs=2, network=network,
                                                       energy_model=model))  # resumes
    summary = json.loads((out / "summary.json").read_text())
    f = summary["time_dilation"]
    assert f == 4.0
    assert (summary["clock"], summary["network_mode"]) == ("dilated", "emulated")
    assert summary["energy_target_model"] == {"meter": "target-model", "modelled": True,
                                              **model}
    core_w = (110 - 30) / 16

    def by_hand(r):  # the model applied to a step's recorded fields, in target time
        rpcs = r["remote_rpcs"] + r["sampling_rpcs"] + r["moved_messages"]
        nbytes = r["remote_bytes"] + r["sampling_bytes"] + r["moved_bytes"]
        busy = r["busy_s"] / f
        assert r["busy_s"] == pytest.approx(
            max(0.0, r["compute_s"] - r["step_comm_s"] - r["collective_wait_s"]), abs=1e-12)
        # default blocks on nothing emulated inside its step but the all-reduce
        assert r["sync_s"] * 0.999 <= r["step_comm_s"] <= r["compute_s"]
        gpu = 50 * r["step_s"] / f + (300 - 50) * busy
        cpu = 30 * r["step_s"] / f + core_w * (rpcs * 2e-4 + nbytes / 1e9)
        return gpu, cpu

    epochs = [json.loads(line) for line in (out / "epochs.jsonl").read_text().splitlines()]
    assert [e["epoch"] for e in epochs] == [0, 1]
    assert epochs[0] == first_row  # resumed: epoch 0's row is the first run's
    for worker in range(2):
        steps = read_steps(out, worker)
        assert any(r["sync_s"] > 0 for r in steps)  # the all-reduce is off the GPU's busy time
        # default moves gradients only beyond its RPCs: every byte of them costs CPU
        assert [r["moved_bytes"] for r in steps] == [r["allreduce_bytes"] for r in steps]
        assert [r["moved_messages"] for r in steps] == [r["allreduce_messages"]
                                                        for r in steps]
        assert all(r["moved_bytes"] > 0 and r["collective_wait_s"] >= 0 for r in steps)
        for r in steps:
            gpu, cpu = by_hand(r)
            assert r["energy_target_gpu_j"] == pytest.approx(gpu, rel=1e-9)
            assert r["energy_target_cpu_j"] == pytest.approx(cpu, rel=1e-9)
            assert r["energy_target_j"] == pytest.approx(gpu + cpu, rel=1e-9)
        for e in epochs:
            mine = [r for r in steps if r["epoch"] == e["epoch"]]
            rec = e["workers"][worker]
            step_sum = sum(r["energy_target_j"] for r in mine)
            assert rec["step_s"] == pytest.approx(sum(r["step_s"] for r in mine))
            assert rec["energy_target_j"] >= step_sum
            # plus idle power outside the steps (default: no traffic outside them) and
            # while it waits at the epoch's end for the slowest worker
            slowest = max(w["time_s"] for w in e["workers"])
            assert rec["boundary_wait_s"] == pytest.approx(slowest - rec["time_s"], abs=1e-12)
            outside = (50 + 30) * (rec["time_s"] - rec["step_s"] + rec["boundary_wait_s"]) / f
            assert rec["energy_target_j"] == pytest.approx(step_sum + outside, rel=1e-9)
    for key in ("energy_target_j", "energy_target_gpu_j", "energy_target_cpu_j", "energy_j"):
        for e in epochs:
            assert e[key] == pytest.approx(sum(w[key] for w in e["workers"]))
        assert summary[key] == pytest.approx(sum(e[key] for e in epochs))
    for cum, key in (("energy_target_cum_j", "energy_target_j"), ("energy_cum_j", "energy_j")):
        values = [e[cum] for e in epochs]
        assert values[0] == pytest.approx(epochs[0][key])
        assert values == sorted(values) and values[1] > values[0]
        assert values[-1] == pytest.approx(summary[key])
    assert summary["energy_target_j"] == pytest.approx(summary["energy_target_gpu_j"]
                                                       + summary["energy_target_cpu_j"])
    assert summary["energy_target_per_epoch_j"] == pytest.approx(summary["energy_target_j"] / 2)
    assert summary["energy_per_epoch_j"] == pytest.approx(summary["energy_j"] / 2)
    table = pd.read_csv(out / "epochs.csv")
    assert set(table["run_energy_target_cum_j"]) == {e["energy_target_cum_j"] for e in epochs}
