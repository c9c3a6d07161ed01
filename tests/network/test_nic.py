"""Per-machine NICs: concurrent transfers share a machine's links, across threads and
processes; time dilation, the RPC overhead α and the window under delay."""

from __future__ import annotations

import math
import multiprocessing as mp
import threading
import time

import pytest

from commgnn.network.congestion import EpochSchedule
from commgnn.network.netem import ALLREDUCE, LinkModel, NetworkEmulator
from commgnn.network.nic import NicClocks, clock_file, in_turn

BW = 10e6  # bytes/s: one MB takes 0.1 s
MB = 1_000_000


def _timed(fn, *args) -> float:
    t0 = time.monotonic()
    fn(*args)
    return time.monotonic() - t0


def _concurrently(*calls) -> tuple[float, list[float]]:
    """Run ``(fn, *args)`` calls on threads started together; makespan and each duration."""
    durations = [0.0] * len(calls)
    start = threading.Barrier(len(calls))

    def run(i, fn, *args):
        start.wait()
        durations[i] = _timed(fn, *args)

    threads = [threading.Thread(target=run, args=(i, *call)) for i, call in enumerate(calls)]
    t0 = time.monotonic()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return time.monotonic() - t0, durations


@pytest.mark.parametrize("pulls", [2, 4])
def test_concurrent_equal_pulls_share_one_link(pulls):
    emu = NetworkEmulator(2, LinkModel(0.0, BW))
    alone = _timed(emu.charge_request, 0, 1, 8, MB)
    makespan, _ = _concurrently(*[(emu.charge_request, 0, 1, 8, MB)] * pulls)
    assert alone == pytest.approx(0.1, rel=0.1)
    assert makespan / alone == pytest.approx(pulls, rel=0.1)


def test_a_background_pull_slows_a_foreground_pull():
    emu = NetworkEmulator(3, LinkModel(0.0, BW))
    alone = _timed(emu.charge_request, 0, 2, 8, MB // 2)

    def background():
        emu.charge_request(0, 1, 8, 4 * MB)  # shares worker 0's ingress for 0.4 s

    bg = threading.Thread(target=background)
    bg.start()
    time.sleep(0.05)
    slowed = _timed(emu.charge_request, 0, 2, 8, MB // 2)
    bg.join()
    assert alone == pytest.approx(0.05, rel=0.15)
    assert slowed == pytest.approx(2 * alone, rel=0.2)  # half the ingress while both run


def test_allreduce_and_fetch_traffic_slow_each_other():
    emu = NetworkEmulator(2, LinkModel(0.0, BW))
    # worker 0's all-reduce share (0 -> 1) and an RPC response from 0 to 1 use 0's egress
    # and 1's ingress
    ring = 2 * MB  # ceil(2 (P-1) B / P) with P = 2 sends B
    ar_alone = _timed(emu.charge_ring_allreduce, 0, 2, ring)
    fetch_alone = _timed(emu.charge_request, 1, 0, 8, 2 * MB)
    makespan, (ar, fetch) = _concurrently((emu.charge_ring_allreduce, 0, 2, ring),
                                          (emu.charge_request, 1, 0, 8, 2 * MB))
    assert ar > 1.5 * ar_alone and fetch > 1.5 * fetch_alone
    assert makespan == pytest.approx(ar_alone + fetch_alone, rel=0.1)
    assert emu.totals(ALLREDUCE).bytes == 2 * 2 * MB  # alone, then concurrently


def test_other_machines_links_are_independent():
    emu = NetworkEmulator(4, LinkModel(0.0, BW))
    alone = _timed(emu.charge, 0, 1, MB)
    makespan, _ = _concurrently((emu.charge, 0, 1, MB), (emu.charge, 2, 3, MB))
    assert makespan == pytest.approx(alone, rel=0.1)


def _pull_in_process(path: str, start_at: float, out) -> None:
    emu = NetworkEmulator(2, LinkModel(0.0, BW), nic=NicClocks(2, path))
    while time.monotonic() < start_at:
        time.sleep(0.001)
    out.put(_timed(emu.charge_request, 0, 1, 8, MB))


def test_processes_of_a_host_share_the_links(tmp_path):
    path = tmp_path / "nic"
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    start_at = time.monotonic() + 2.0  # after both interpreters are up
    procs = [ctx.Process(target=_pull_in_process, args=(str(path), start_at, out))
             for _ in range(2)]
    for p in procs:
        p.start()
    durations = sorted(out.get(timeout=30) for _ in procs)
    for p in procs:
        p.join(timeout=30)
    assert durations[-1] == pytest.approx(0.2, rel=0.1)  # the later one waited for both
    assert clock_file("x").name == "commgnn-nic-x"


def test_time_dilation_slows_the_network_and_its_clock():
    now = [0.0]
    emu = NetworkEmulator(2, LinkModel(0.001, BW), EpochSchedule({0: {1: 2.0}}),
                          time_dilation=10, clock=lambda: now[0])
    assert emu.cost_s(0, 1, MB // 10, epoch=0) == pytest.approx(10 * (0.001 + 0.002 + 0.01))
    charged = emu.charge(0, 1, MB // 10, epoch=0)
    assert charged == pytest.approx(0.13, rel=0.05)
    now[0] = 5.0
    assert emu.elapsed() == pytest.approx(0.5)
    with pytest.raises(ValueError, match="time dilation"):
        emu.set_time_dilation(0.5)


def test_rpc_overhead_and_the_window_under_delay():
    emu = NetworkEmulator(2, LinkModel(0.001, BW), EpochSchedule({0: {1: 4.0}}),
                          rpc_overhead_s=0.0005, tcp_window_bytes=50_000)
    # α + 2·latency + δ + (req + resp) / min(bw, W / RTT); RTT = 6 ms: 8.3 MB/s < 10 MB/s
    expected = 0.0005 + 0.002 + 0.004 + (800 + MB) * 0.006 / 50_000
    assert emu.request_cost_s(0, 1, 800, MB, epoch=0) == pytest.approx(expected)
    assert emu.charge_request(0, 1, 800, MB, epoch=0) == pytest.approx(expected, rel=0.02)
    clean = NetworkEmulator(2, LinkModel(0.001, math.inf), tcp_window_bytes=None)
    assert clean.request_cost_s(0, 1, 800, MB) == pytest.approx(0.002)


def test_a_link_lends_its_gap_to_the_next_transfer_that_fits():
    clocks = NicClocks(4)
    t0 = time.monotonic() + 100.0  # far enough ahead that nothing has passed
    assert clocks.reserve(0, 1, 1.0, t0) == pytest.approx(t0 + 1.0)  # ingress 1: [0, 1)
    # 2 -> 1 waits for ingress 1, so egress 2 is booked [1, 2) and idle over [0, 1) ...
    assert clocks.reserve(2, 1, 1.0, t0) == pytest.approx(t0 + 2.0)
    # ... which 2 -> 3 takes (with one "free at" time a link it would start at 2)
    assert clocks.reserve(2, 3, 0.5, t0) == pytest.approx(t0 + 0.5)
    # a transfer longer than the gap goes after the last reservation on either link
    assert clocks.reserve(2, 3, 1.5, t0) == pytest.approx(t0 + 3.5)
    assert clocks.busy_until(2 * 2) == pytest.approx(t0 + 3.5)  # egress 2


def test_a_full_calendar_gives_up_its_smallest_gap():
    from commgnn.network.nic import CALENDAR_SLOTS

    clocks = NicClocks(2)
    t0 = time.monotonic() + 100.0
    n = CALENDAR_SLOTS + 1  # one more than it holds, 2 s apart, each shorter than the last
    for k in range(n):
        clocks.reserve(0, 1, 0.5 + 0.001 * (n - k), t0 + 2.0 * k)
    assert int(clocks._count[0]) == CALENDAR_SLOTS
    assert clocks.busy_until(0) == pytest.approx(t0 + 2.0 * (n - 1) + 0.501)
    # the first two (the smallest gap, 1.5 s - 0.257 s) were joined: 1 s no longer fits there
    assert clocks.reserve(0, 1, 1.0, t0 + 0.5) > t0 + 2.0
    # the next gap, as wide, was not
    assert clocks.reserve(0, 1, 1.0, t0 + 4.5) == pytest.approx(t0 + 4.0 + 0.5 + 0.001 * (n - 2)
                                                                + 1.0)


def test_in_turn_makes_every_round_of_an_all_to_all_a_permutation():
    world = 5
    orders = {r: in_turn(r, [p for p in range(world) if p != r]) for r in range(world)}
    assert orders[0] == [1, 2, 3, 4] and orders[2] == [3, 4, 0, 1] and orders[4] == [0, 1, 2, 3]
    for k in range(world - 1):
        assert sorted(orders[r][k] for r in range(world)) == list(range(world))
    assert in_turn(1, [3, 0]) == [3, 0]  # peers missing from the list keep the turn's order


def test_an_all_to_all_of_requests_in_turn_runs_near_the_links_rate():
    machines = 4
    emu = NetworkEmulator(machines, LinkModel(0.0, BW))
    share = MB // 3  # each machine pulls 1 MB in all: 0.1 s at the ideal fair share

    def pull_all(rank):
        for owner in in_turn(rank, [o for o in range(machines) if o != rank]):
            emu.charge_request(rank, owner, 8, share)

    makespan, _ = _concurrently(*[(pull_all, r) for r in range(machines)])
    # in plain ascending order every machine asks owner 0 first: 2.2x the ideal
    assert makespan < 1.6 * 0.1
