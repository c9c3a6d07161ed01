"""Busy and idle per device, in the loop: the straggler wait inside the all-reduce is idle
(measured: tests/network/test_netem.py's two-process DDP test; priced: tests/train/
test_runs.py's energy test), and every class of traffic a worker moves costs CPU (target
energy model v2), and a worker that ends its epoch before the slowest idles until it ends
(v3)."""

from __future__ import annotations

import json

import pytest

from commgnn.energy.target import TargetPowerModel
from commgnn.network.netem import MIGRATION, SHUFFLE, CollectiveWait, LinkModel, NetworkEmulator
from commgnn.train.summary import charge_boundary_wait

pytestmark = pytest.mark.timeout(300)


def test_collective_wait_is_last_done_after_last_issued():
    wait = CollectiveWait()
    assert wait.take() == 0.0  # nothing issued
    # three buckets: issued during the backward at 1, 2 and 5; done at 3, 4 and 9: the
    # worker idles from its last issue (5, its backward done) to the last result (9)
    for at in (1.0, 2.0, 5.0):
        wait.issued(at)
    for at in (3.0, 9.0, 4.0):
        wait.done(at)
    assert wait.take() == 4.0
    assert wait.take() == 0.0  # taken: reset
    wait.issued(7.0)
    wait.done(6.5)  # done before the last issue (a straggler-free step): no wait, not < 0
    assert wait.take() == 0.0
    wait.issued(1.0)  # issued, never done (no collective completed): nothing counted
    assert wait.take() == 0.0


def test_an_rpc_is_one_initiation_whatever_its_class():
    """Grappa's shuffles travel as RPCs (request and response, two messages on the links):
    the energy model prices one initiation each, as it does a feature RPC."""
    emu = NetworkEmulator(2, LinkModel(0.0, float('inf')), spin_s=0)
    for _ in range(3):
        emu.charge_request(0, 1, 16, 4096, traffic=SHUFFLE)
    emu.charge(0, 1, 1000, traffic=MIGRATION, messages=2)
    shuffle = emu.totals(SHUFFLE)
    assert (shuffle.messages, shuffle.rpcs, shuffle.initiations) == (6, 3, 3)
    assert shuffle.bytes == 3 * (16 + 4096)
    total = emu.totals()
    assert total.initiations == 3 + 2
    assert (total - shuffle).initiations == 2


def _epoch_rows(out):
    return [json.loads(line) for line in (out / "epochs.jsonl").read_text().splitlines()]


def test_every_class_of_traffic_costs_cpu(tiny_inputs, tmp_path, run_on_tiny, make_spec,
                                          read_steps):
    """HopGNN moves models (migration) besides gradients: each byte and message of every
    class is priced at the model's per-message and per-byte CPU cost, in the steps or,
    for what moved outside them, in the epoch."""
    model = {"gpu_idle_w": 50, "gpu_busy_w": 300, "cpu_idle_w": 30, "cpu_max_w": 110,
             "cpu_cores": 16, "rpc_cpu_s": 2e-4, "copy_bytes_per_s": 1e9}
    network = {"preset": "1gbe", "time_dilation": 4}
    out = run_on_tiny(tmp_path, tiny_inputs,
                      make_spec("hopgnn", network=network, epochs=1, energy_model=model))
    core_w = (110 - 30) / 16
    (epoch,) = _epoch_rows(out)
    assert epoch["network_migration_bytes"] > 0
    for worker in range(2):
        steps = read_steps(out, worker)
        rec = epoch["workers"][worker]
        classes = ("fetch", "sampling", "allreduce", "shuffle", "migration", "graph",
                   "activation", "activation_grad")
        moved_classes = sum(rec[f"network_{c}_bytes"] for c in classes
                            if c not in ("fetch", "sampling"))
        assert rec["moved_bytes_epoch"] == moved_classes  # every class but RPC-counted ones
        assert sum(r["moved_bytes"] for r in steps) <= rec["moved_bytes_epoch"]
        assert any(r["moved_bytes"] > r["allreduce_bytes"] for r in steps)  # migrations
        # the trainer blocks on its migrations inside the step: communication, not busy
        assert any(r["step_comm_s"] > r["sync_s"] + 1e-4 for r in steps)
        for r in steps:
            assert r["busy_s"] == pytest.approx(
                max(0.0, r["compute_s"] - r["step_comm_s"] - r["collective_wait_s"]),
                abs=1e-12)
        for r in steps:
            rpcs = r["remote_rpcs"] + r["sampling_rpcs"] + r["moved_messages"]
            nbytes = r["remote_bytes"] + r["sampling_bytes"] + r["moved_bytes"]
            cpu = 30 * r["step_s"] / 4 + core_w * (rpcs * 2e-4 + nbytes / 1e9)
            assert r["energy_target_cpu_j"] == pytest.approx(cpu, rel=1e-9)
        outside_msgs = rec["moved_messages_epoch"] - rec["moved_messages"]
        outside_bytes = rec["moved_bytes_epoch"] - rec["moved_bytes"]
        outside_cpu = (30 * (rec["time_s"] - rec["step_s"]) / 4
                       + core_w * ((rec.get("extra_remote_rpcs", 0) + outside_msgs) * 2e-4
                                   + (rec.get("extra_remote_bytes", 0) + outside_bytes) / 1e9))
        # and idle from its epoch's end to the slowest worker's (target energy v3)
        assert rec["boundary_wait_s"] == epoch["time_s"] - rec["time_s"] >= 0
        assert rec["energy_target_cpu_j"] == pytest.approx(
            sum(r["energy_target_cpu_j"] for r in steps) + outside_cpu
            + 30 * rec["boundary_wait_s"] / 4, rel=1e-9)
    # every worker is charged at least the idle floors over the whole epoch (its slowest
    # worker's time): no worker's wait goes unpriced
    assert epoch["energy_target_j"] >= 2 * (50 + 30) * epoch["time_s"] / 4 * (1 - 1e-12)
    assert epoch["boundary_wait_s"] == sum(w["boundary_wait_s"] for w in epoch["workers"])


def test_a_worker_that_ends_its_epoch_first_idles_until_the_last_does():
    """Target energy v3: the epoch lasts as long as its slowest worker; the others are
    charged both idle floors for the gap, in target time (raw ÷ f)."""
    power = TargetPowerModel(gpu_idle_w=60, cpu_idle_w=40)
    workers = [{"time_s": 10.0, "time_dilation": 2.0, "energy_target_gpu_j": 500.0,
                "energy_target_cpu_j": 300.0, "energy_target_j": 800.0},
               {"time_s": 6.0, "time_dilation": 2.0, "energy_target_gpu_j": 400.0,
                "energy_target_cpu_j": 200.0, "energy_target_j": 600.0}]
    charge_boundary_wait(workers, power)
    slow, fast = workers
    assert (slow["boundary_wait_s"], slow["energy_target_j"]) == (0.0, 800.0)
    # 4 s raw = 2 s target: 60 W × 2 s on the GPU, 40 W × 2 s on the CPU
    assert fast["boundary_wait_s"] == 4.0
    assert (fast["energy_target_gpu_j"], fast["energy_target_cpu_j"]) == (520.0, 280.0)
    assert fast["energy_target_j"] == 800.0
