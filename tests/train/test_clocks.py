"""Which clock a run's times are on (commgnn.train.clocks)."""

from __future__ import annotations

import pytest

from commgnn.network.netem import network_from_spec
from commgnn.train.clocks import JUDGED, network_mode, run_clock


@pytest.mark.parametrize(("f", "device", "network", "clock"), [
    (60.0, "cpu", "emulated", "dilated"),
    (60.0, "cuda:0", "emulated", "dilated"),
    (1.0, "cpu", "emulated", "raw CPU"),
    (1.0, "cpu", "real", "raw CPU"),  # CPUs over a real network: still compute-bound
    (1.0, "cuda:1", "emulated", "accelerator, emulated network"),
    (1.0, "cuda:0", "real", "accelerator, real network"),
    (1.0, "cuda:0", "loopback", "accelerator, no network"),
    (1.0, "cuda:0", None, "accelerator, emulated network"),
])
def test_a_runs_clock(f, device, network, clock):
    assert run_clock(f, device, network) == clock
    assert (clock in JUDGED) == (clock not in ("raw CPU", "accelerator, no network"))


def test_the_network_mode_from_the_emulator_and_the_hosts():
    free = network_from_spec("none", 4)
    assert not free.emulates()
    assert network_mode(free.emulates(), ["a", "a", "a", "a"]) == "loopback"
    assert network_mode(free.emulates(), ["a", "a", "b", "b"]) == "real"
    for spec in ("10gbe", {"preset": "none", "latency_ms": 1.0},
                 {"preset": "none", "bandwidth_gbps": 10},
                 {"preset": "none", "rpc_overhead_us": 50},
                 {"preset": "none", "congestion": {"kind": "scenario", "name": "single-link"}}):
        emulator = network_from_spec(spec, 4, num_epochs=5)
        assert emulator.emulates(), spec
        assert network_mode(emulator.emulates(), ["a", "b", "c", "d"]) == "emulated"
