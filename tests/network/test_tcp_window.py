"""The link's physics under delay: a TCP flow limited by its window (Padhye et al. 1998,
``min(bandwidth, W / RTT)``), checked against its formula, on real waits, and with the
NICs a flow shares with others."""

from __future__ import annotations

import math
import threading
import time

import pytest

from commgnn.core.config import ConfigError, subschema, validate
from commgnn.network.congestion import EpochSchedule
from commgnn.network.netem import (
    NETWORK_PRESETS,
    TCP_WINDOW_BYTES,
    LinkModel,
    NetworkEmulator,
    network_from_spec,
)

LAT, BW = 50e-6, 1.25e9  # the 10gbe preset: one-way latency, bytes/s


def test_window_is_linux_default_tcp_rmem_maximum():
    assert TCP_WINDOW_BYTES == 6_291_456  # net.ipv4.tcp_rmem = 4096 131072 6291456
    emu = network_from_spec("10gbe", 2)
    assert emu.tcp_window_bytes == TCP_WINDOW_BYTES
    assert emu.describe()["tcp_window_bytes"] == TCP_WINDOW_BYTES
    assert emu.window_gamma_s_per_byte_ms == pytest.approx(1e-3 / 6_291_456)
    free = network_from_spec({"preset": "10gbe", "tcp_window_bytes": None}, 2)
    assert math.isinf(free.tcp_window_bytes) and free.window_gamma_s_per_byte_ms == 0.0
    assert free.describe()["tcp_window_bytes"] is None


def test_round_trip_against_the_formula_hand_computed():
    """α + 2·lat + δ + req / min(bw, W/RTT) + resp / min(bw, W/RTT), RTT = 2·lat + δ."""
    emu = NetworkEmulator(2, NETWORK_PRESETS["10gbe"], EpochSchedule({1: {1: 20.0}}),
                          rpc_overhead_s=0.001)
    req, resp = 8_000, 4_000_000
    # clean: RTT 100 µs, the window allows 62.9 GB/s and the 1.25 GB/s link rules
    assert emu.request_cost_s(0, 1, req, resp, epoch=0) == pytest.approx(
        0.001 + 100e-6 + (req + resp) / BW)  # 0.004306400 s
    assert emu.request_cost_s(0, 1, req, resp, epoch=0) == pytest.approx(0.0043064)
    # 20 ms: RTT 20.1 ms, the window allows 6291456 / 0.0201 = 313.0 MB/s < 1.25 GB/s
    rtt = 100e-6 + 0.020
    assert emu.request_cost_s(0, 1, req, resp, epoch=1) == pytest.approx(
        0.001 + 100e-6 + 0.020 + (req + resp) * rtt / TCP_WINDOW_BYTES)
    assert emu.request_cost_s(0, 1, req, resp, epoch=1) == pytest.approx(0.0339048, rel=1e-5)
    # the time grows with bytes × delay: the extra of a 4 MB response at 20 ms over 0 ms
    extra = emu.request_cost_s(0, 1, req, resp, epoch=1) - emu.request_cost_s(0, 1, req, resp,
                                                                              epoch=0)
    assert extra > 0.020 + 0.009  # 20 ms of delay and 9.6 ms more for the bytes


def test_the_window_rules_past_rtt_equal_window_over_bandwidth():
    """One-way transfers: below RTT = W/bw (5.03 ms at 10 GbE) the link sets the pace,
    above it the window; the two agree at the crossover."""
    crossover_ms = (TCP_WINDOW_BYTES / BW - 2 * LAT) * 1e3  # δ where W/RTT = bw
    below, above = crossover_ms * 0.9, crossover_ms * 1.1
    emu = NetworkEmulator(2, NETWORK_PRESETS["10gbe"],
                          EpochSchedule({0: {1: below}, 1: {1: crossover_ms}, 2: {1: above}}))
    nbytes = 10_000_000

    def bytes_s(epoch, delay_ms):
        return emu.cost_s(0, 1, nbytes, epoch=epoch) - (LAT + delay_ms / 1e3)

    assert bytes_s(0, below) == pytest.approx(nbytes / BW)
    assert bytes_s(1, crossover_ms) == pytest.approx(nbytes / BW)
    assert bytes_s(2, above) == pytest.approx(nbytes * (2 * LAT + above / 1e3)
                                              / TCP_WINDOW_BYTES)
    assert bytes_s(2, above) > nbytes / BW * 1.09


def test_dilation_scales_the_window_term_too():
    spec = {"preset": "10gbe", "time_dilation": 7,
            "congestion": {"kind": "epochs", "table": {0: {1: 30.0}}}}
    dilated, plain = network_from_spec(spec, 2), network_from_spec(
        {**spec, "time_dilation": 1}, 2)
    assert dilated.request_cost_s(0, 1, 800, 3_000_000, epoch=0) == pytest.approx(
        7 * plain.request_cost_s(0, 1, 800, 3_000_000, epoch=0))


def test_without_a_window_limit_bytes_take_bytes_over_bandwidth():
    emu = network_from_spec({"preset": "10gbe", "tcp_window_bytes": None,
                             "congestion": {"kind": "epochs", "table": {0: {1: 20.0}}}}, 2)
    assert emu.request_cost_s(0, 1, 800, 4_000_000, epoch=0) == pytest.approx(
        100e-6 + 0.020 + 4_000_800 / BW)


def test_network_spec_keys():
    validate({"preset": "10gbe", "tcp_window_bytes": 65536},
             subschema("network"))
    validate({"preset": "10gbe", "tcp_window_bytes": None},
             subschema("network"))
    for bad in ({"tcp_window_bytes": 0}, {"congestion_gamma": 2e-10}):
        with pytest.raises(ConfigError):
            validate({"preset": "10gbe", **bad}, subschema("network"))
    with pytest.raises(ValueError, match="tcp_window_bytes"):
        NetworkEmulator(2, NETWORK_PRESETS["10gbe"], tcp_window_bytes=0)
    with pytest.raises(ValueError, match="congestion_gamma"):
        network_from_spec({"preset": "10gbe", "congestion_gamma": 1e-10}, 2)


def test_charge_request_really_waits_the_window():
    """A 100 kB response with a 100 kB window on a 52 ms round trip takes one RTT for its
    bytes, though the link would carry it in 10 ms."""
    emu = NetworkEmulator(2, LinkModel(0.001, 10e6), EpochSchedule({0: {1: 50.0}}),
                          tcp_window_bytes=100_000)
    expected = 0.002 + 0.050 + (800 + 100_000) * 0.052 / 100_000
    assert emu.request_cost_s(0, 1, 800, 100_000, epoch=0) == pytest.approx(expected)
    t0 = time.monotonic()
    charged = emu.charge_request(0, 1, 800, 100_000, epoch=0)
    assert charged == pytest.approx(expected, rel=0.03)
    assert time.monotonic() - t0 >= expected * 0.99


def test_a_window_limited_flow_leaves_the_link_to_others():
    """Two 0.5 MB transfers leave machine 0 together on a 10 MB/s egress: one to a machine
    200 ms away with a 0.5 MB window (it takes 0.2 s of window and 0.2 s of delay), one
    to a clean machine. The clean one shares the link for its bytes only (≈ 0.1 s for
    both flows' bytes) and does not wait out the other's window."""
    emu = NetworkEmulator(3, LinkModel(0.0, 10e6), EpochSchedule({0: {2: 200.0}}),
                          tcp_window_bytes=500_000)
    emu.set_epoch(0)
    took = {}
    barrier = threading.Barrier(2)

    def send(dst):
        barrier.wait()
        t0 = time.monotonic()
        emu.charge(0, dst, 500_000)
        took[dst] = time.monotonic() - t0

    threads = [threading.Thread(target=send, args=(d,)) for d in (1, 2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert took[1] < 0.15  # link-shared bytes, not the congested flow's 0.4 s
    assert took[2] == pytest.approx(0.2 + 500_000 * 0.2 / 500_000, rel=0.1)
