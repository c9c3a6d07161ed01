"""Network emulation: every byte that would cross a machine boundary pays one emulated cost.

The host running the workers has no real network between them (and no ``netem``), so each
transfer that would cross a machine boundary — feature fetches, neighbour-list requests,
gradient all-reduce, model migration, repartition shuffles — is *charged* by the thread
that makes it: it really waits, so overlap with compute on other threads is real. Every
system pays through the same :class:`NetworkEmulator`.

NICs (:mod:`commgnn.network.nic`): each machine has one egress and one ingress link, shared
by every thread and process on it. A transfer's bytes occupy the sender's egress and the
receiver's ingress (virtual clocks shared by all processes of the host), so concurrent
transfers share bandwidth: a background cache fill slows a foreground fetch, RPC
responses and the all-reduce of a machine queue on its egress. Latencies and congestion
delays are waited for after the bytes and do not occupy the links.

Cost of a one-way transfer of ``nbytes`` in ``m`` messages on idle links (``f`` = time
dilation, ``δ`` = congestion delay)::

    cost = f · [m · (latency + δ) + nbytes / throughput]                  (0 on one machine)
    throughput = min(bandwidth, W / RTT),   RTT = latency(src→dst) + latency(dst→src) + δ

The throughput is that of a TCP flow limited by its window (Padhye, Firoiu, Towsley and
Kurose, "Modeling TCP Throughput: A Simple Model and its Empirical Validation", SIGCOMM
1998: ``B = min(W_max / RTT, …)``, the loss term vanishing because netem's delay drops
nothing): a flow cannot have more than its window ``W`` in flight, so on a long path it
sends ``W`` bytes per round trip however fast the link is. ``W`` is
:data:`TCP_WINDOW_BYTES`, fixed before any run from a documented default: the largest
receive buffer Linux's autotuning gives a TCP socket (``net.ipv4.tcp_rmem``'s maximum,
6 MiB on hosts with enough memory; Documentation/networking/ip-sysctl.rst), the most a
receiver can advertise; ``tcp_window_bytes`` in the network spec overrides it and
``null`` lifts the limit. On a clean 10 GbE path (RTT 100 µs) the window allows 63 GB/s
and the link's 1.25 GB/s rules; past ``RTT = W / bandwidth`` (5 ms at 10 GbE, 2 ms at 25
GbE) the window rules, and a transfer's time grows with bytes × delay: the term
GreenDyGNN's Eq. 4 fits as ``γ·N·F_b·δ``, which tends to ``γ = 1 / W`` s/byte/s
(``1e-3 / W`` s/byte/ms) for delays well past that point (:meth:`NetworkEmulator.
window_gamma_s_per_byte_ms`).

With the NICs: a transfer's bytes occupy the sender's egress and the receiver's ingress
at the link's bandwidth (``nbytes / bandwidth``, queued behind other transfers there), and
the transfer ends when both the link and its window allow, ``max(link finish, asked +
nbytes · RTT / W)``: a window-limited flow leaves the rest of the link to others (its
bytes are reserved back to back rather than spread over its round trips, which only
shifts when, not how much, the link is busy).

An RPC round trip (requester asks, owner answers) — GreenDyGNN's Eq. 4,
``T = α + β·N·F_b + γ_c·N·F_b·δ``, with the links' latencies in α::

    rtt = f · [α + latency(req→own) + latency(own→req) + δ
               + request_bytes / throughput(req→own) + response_bytes / throughput(own→req)]

``α`` (``rpc_overhead_us``) defaults to 0. The congestion delay is paid once per round
trip because GreenDyGNN §VI-A injects *one-way* delay with ``tc netem`` on the congested
node. (The paper's fitted α, β, γ are not legible in the copy under ``../shared/papers``;
presets carry the links' latency and bandwidth only; :mod:`commgnn.systems.greendygnn.
rpc_calibration` fits Eq. 4 to this model.)

A ring all-reduce of a ``B``-byte bucket over ``P`` workers (reduce-scatter then all-gather,
``P−1`` steps each, one chunk of ``B/P`` bytes per step to the ring neighbour ``rank+1``)
makes each worker send ``ceil(2 (P−1) B / P)`` bytes in ``2 (P−1)`` messages on the link
``rank → (rank+1) mod P`` (see :func:`ring_allreduce_bytes` and :func:`allreduce_hook`).
The real all-reduce that follows blocks on the slowest worker, so one congested node
delays everyone, as on a real ring.

Time dilation (Gupta et al., "To Infinity and Beyond: Time-Warped Network Emulation",
NSDI 2006): compute here is ``f`` times slower than on the target accelerator, so the
emulated network is slowed by the same ``f`` (bandwidth ÷ f, latencies and delays × f)
and compute and communication keep the target's proportions; reported times divided by
``f`` are target times. ``f = 1`` is no dilation.

Traffic classes (``traffic=`` on every charge): :data:`FETCH` (feature-fetch RPCs, the DGL
RPC port of the paper), :data:`SAMPLING` (remote neighbour lists), :data:`ALLREDUCE`
(gradient and parameter sync), :data:`MIGRATION` (model migration), :data:`SHUFFLE`
(repartition shuffles), :data:`GRAPH` (computation graphs pushed to other workers),
:data:`ACTIVATION` and :data:`ACTIVATION_GRAD` (model-parallel activations and their
gradients: P3's first layer), :data:`OTHER`.

Time: ``t`` for time-based schedules is the emulator's elapsed target seconds since
construction or :meth:`NetworkEmulator.reset_clock`.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from commgnn.network.congestion import (
    CongestionSchedule,
    NoCongestion,
    congestion_from_spec,
    default_congested_traffic,
)
from commgnn.network.nic import NicClocks, in_turn, transfer

__all__ = [
    "ACTIVATION",
    "ACTIVATION_GRAD",
    "ALLREDUCE",
    "DEFAULT_SPIN_S",
    "FETCH",
    "GRAPH",
    "MIGRATION",
    "NETWORK_PRESETS",
    "OTHER",
    "SAMPLING",
    "SHUFFLE",
    "TCP_WINDOW_BYTES",
    "CollectiveWait",
    "LinkModel",
    "LinkStats",
    "NetworkEmulator",
    "allreduce_hook",
    "dilation_of",
    "in_turn",
    "network_from_spec",
    "ring_allreduce_bytes",
    "ring_allreduce_messages",
]

FETCH = "fetch"
SAMPLING = "sampling"
ALLREDUCE = "allreduce"
MIGRATION = "migration"
SHUFFLE = "shuffle"
GRAPH = "graph"
ACTIVATION = "activation"
ACTIVATION_GRAD = "activation_grad"
OTHER = "other"

#: Busy-wait tail of each charge (seconds): sleep until ``deadline - DEFAULT_SPIN_S``, then
#: spin. Linux ``time.sleep`` overshoots by ~50–100 µs; the tail makes sub-ms charges
#: accurate while spending at most this much CPU per charge.
DEFAULT_SPIN_S = 200e-6

#: A TCP flow's window (bytes): Linux's default ``net.ipv4.tcp_rmem`` maximum, 6 MiB (the
#: largest receive buffer autotuning gives a socket; ``4096 131072 6291456`` since Linux
#: 4.20), fixed before any run. See the module doc.
TCP_WINDOW_BYTES = 6 * 1024 * 1024


@dataclass(frozen=True)
class LinkModel:
    """A directed link: fixed one-way latency plus serialisation at a bandwidth."""

    latency_s: float
    bandwidth_bytes_per_s: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.latency_s) and self.latency_s >= 0):
            raise ValueError(f"latency_s must be finite and >= 0, got {self.latency_s}")
        if not self.bandwidth_bytes_per_s > 0:
            raise ValueError(f"bandwidth must be > 0, got {self.bandwidth_bytes_per_s}")

    def transfer_time(self, nbytes: float) -> float:
        """``latency + nbytes / bandwidth`` (the byte term is 0 for infinite bandwidth)."""
        return self.latency_s + self.serialisation_time(nbytes)

    def serialisation_time(self, nbytes: float) -> float:
        if math.isinf(self.bandwidth_bytes_per_s):
            return 0.0
        return float(nbytes) / self.bandwidth_bytes_per_s

    @classmethod
    def from_ms_gbps(cls, latency_ms: float, bandwidth_gbps: float | None) -> LinkModel:
        """From one-way latency in ms and bandwidth in Gb/s (10⁹ bits/s; None/inf = ∞)."""
        bw = math.inf if bandwidth_gbps is None else float(bandwidth_gbps) * 1e9 / 8
        return cls(float(latency_ms) / 1e3, bw)

    def to_dict(self) -> dict[str, Any]:
        bw = self.bandwidth_bytes_per_s
        return {
            "latency_ms": self.latency_s * 1e3,
            "bandwidth_gbps": None if math.isinf(bw) else bw * 8 / 1e9,
        }


#: Link presets. One-way latencies are those of a small TCP message through the kernel
#: stack, NIC and one top-of-rack switch hop (request/response round trips of
#: ~2× these values, the range sockperf/netperf TCP_RR report on such NICs):
#:
#: - ``none``: zero cost (an ideal network; emulation off);
#: - ``1gbe``: 1 Gb/s, 100 µs one-way;
#: - ``10gbe``: 10 Gb/s, 50 µs one-way (≈100 µs RTT);
#: - ``25gbe``: 25 Gb/s, 25 µs one-way (≈50 µs RTT; GreenDyGNN's cluster is 25 Gb/s).
NETWORK_PRESETS: dict[str, LinkModel] = {
    "none": LinkModel(0.0, math.inf),
    "1gbe": LinkModel(100e-6, 1e9 / 8),
    "10gbe": LinkModel(50e-6, 10e9 / 8),
    "25gbe": LinkModel(25e-6, 25e9 / 8),
}


def ring_allreduce_bytes(nbytes: int, world_size: int) -> int:
    """Bytes each worker sends in a ring all-reduce of ``nbytes``: ``ceil(2(P−1)·B/P)``."""
    p = int(world_size)
    if p <= 1:
        return 0
    return -(-2 * (p - 1) * int(nbytes) // p)


def ring_allreduce_messages(world_size: int) -> int:
    """Messages each worker sends in a ring all-reduce: ``2(P−1)``."""
    return 2 * (int(world_size) - 1) if world_size > 1 else 0


@dataclass
class LinkStats:
    """Counters of one directed link (and traffic class, where split)."""

    bytes: int = 0
    messages: int = 0
    charged_s: float = 0.0  # emulated cost charged
    waited_s: float = 0.0  # wall time actually spent waiting (>= charged_s)
    rpcs: int = 0  # request-response pairs among the messages (each is two)

    def add(self, other: LinkStats) -> None:
        self.bytes += other.bytes
        self.messages += other.messages
        self.charged_s += other.charged_s
        self.waited_s += other.waited_s
        self.rpcs += other.rpcs

    def __sub__(self, other: LinkStats) -> LinkStats:
        """What was counted between two readings (``later - earlier``)."""
        return LinkStats(self.bytes - other.bytes, self.messages - other.messages,
                         self.charged_s - other.charged_s, self.waited_s - other.waited_s,
                         self.rpcs - other.rpcs)

    @property
    def initiations(self) -> int:
        """Sends a worker starts: every message, an RPC's request and response counting
        once (as a feature RPC does in the energy model)."""
        return self.messages - self.rpcs


def _wait_until(deadline: float, spin_s: float) -> None:
    """Sleep until ``deadline - spin_s`` (``time.monotonic``), then spin to the deadline."""
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        if remaining > spin_s:
            time.sleep(remaining - spin_s)
        else:
            break
    while time.monotonic() < deadline:
        pass


class NetworkEmulator:
    """Emulated links between ``num_workers`` workers, with a congestion schedule.

    Parameters
    ----------
    num_workers:
        Number of workers (ranks).
    links:
        One :class:`LinkModel` for every directed link, or a ``num_workers × num_workers``
        matrix of them (``links[src][dst]``; the diagonal is ignored).
    congestion:
        A :class:`~commgnn.network.congestion.CongestionSchedule` (default: clean).
    congested_traffic:
        Traffic classes the congestion applies to; ``None`` = all.
    node_of:
        Machine of each worker (default: each worker is its own machine). Transfers between
        workers on one machine are free; congestion schedules index machines.
    spin_s:
        Busy-wait tail of each wait (see :data:`DEFAULT_SPIN_S`); 0 = sleep only.

    One instance per process; charges from many threads are safe (counters are locked).
    Counters record only transfers that cross machines (whatever their cost, so a ``none``
    network still counts bytes and messages).
    """

    def __init__(
        self,
        num_workers: int,
        links: LinkModel | Sequence[Sequence[LinkModel]] | None = None,
        congestion: CongestionSchedule | None = None,
        *,
        congested_traffic: Iterable[str] | None = None,
        node_of: Sequence[int] | None = None,
        spin_s: float = DEFAULT_SPIN_S,
        clock: Callable[[], float] = time.perf_counter,
        nic: NicClocks | None = None,
        time_dilation: float = 1.0,
        rpc_overhead_s: float = 0.0,
        tcp_window_bytes: float | None = TCP_WINDOW_BYTES,
    ) -> None:
        self.num_workers = int(num_workers)
        if self.num_workers < 1:
            raise ValueError("num_workers must be >= 1")
        if links is None:
            links = NETWORK_PRESETS["none"]
        if isinstance(links, LinkModel):
            self._uniform: LinkModel | None = links
            self._links = [[links] * self.num_workers for _ in range(self.num_workers)]
        else:
            rows = [list(r) for r in links]
            if len(rows) != self.num_workers or any(len(r) != self.num_workers for r in rows):
                raise ValueError("links matrix must be num_workers × num_workers")
            self._uniform = None
            self._links = rows
        self.congestion = congestion if congestion is not None else NoCongestion()
        self.congested_traffic = (
            None if congested_traffic is None else frozenset(map(str, congested_traffic))
        )
        self.node_of = list(range(self.num_workers)) if node_of is None else list(node_of)
        if len(self.node_of) != self.num_workers:
            raise ValueError("node_of must have one entry per worker")
        self.spin_s = max(0.0, float(spin_s))
        self.nic = nic if nic is not None else NicClocks(max(self.node_of) + 1)
        if self.nic.machines <= max(self.node_of):
            raise ValueError(f"NIC clocks for {self.nic.machines} machines, the workers sit on "
                             f"{max(self.node_of) + 1}")
        self.time_dilation = 1.0
        self.set_time_dilation(time_dilation)
        self.rpc_overhead_s = float(rpc_overhead_s)
        if self.rpc_overhead_s < 0:
            raise ValueError("rpc_overhead_s must be >= 0")
        self.tcp_window_bytes = math.inf if tcp_window_bytes is None else float(tcp_window_bytes)
        if not self.tcp_window_bytes > 0:
            raise ValueError(f"tcp_window_bytes must be > 0, got {tcp_window_bytes}")
        self._clock = clock
        self._t0 = clock()
        self.collectives = CollectiveWait()
        self._mine = threading.local()  # what each thread waited for (thread_waited_s)
        self._epoch = 0
        self._lock = threading.Lock()
        self._stats: dict[tuple[int, int, str], LinkStats] = {}

    # -- state ---------------------------------------------------------------------------
    def emulates(self) -> bool:
        """Whether any transfer costs time here (a link with latency or finite bandwidth,
        a congestion schedule, a per-request overhead): False for the ``none`` network."""
        return (any(link.latency_s > 0 or math.isfinite(link.bandwidth_bytes_per_s)
                    for row in self._links for link in row)
                or not isinstance(self.congestion, NoCongestion) or self.rpc_overhead_s > 0)

    @property
    def epoch(self) -> int:
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Current epoch, used by every call that does not pass one."""
        self._epoch = int(epoch)

    def set_time_dilation(self, factor: float) -> None:
        """Slow the emulated network by ``factor`` (bandwidth ÷ f, latencies and delays × f;
        time-based schedules see elapsed time ÷ f). See the module doc."""
        factor = float(factor)
        if not (math.isfinite(factor) and factor >= 1.0):
            raise ValueError(f"time dilation must be a finite factor >= 1, got {factor}")
        self.time_dilation = factor

    def elapsed(self) -> float:
        """Target-time seconds since construction or the last :meth:`reset_clock` (wall
        seconds ÷ the time dilation)."""
        return (self._clock() - self._t0) / self.time_dilation

    def reset_clock(self) -> None:
        self._t0 = self._clock()

    @property
    def is_free(self) -> bool:
        """True when every transfer costs nothing (no latency, ∞ bandwidth, clean)."""
        free_links = all(
            lk.latency_s == 0 and math.isinf(lk.bandwidth_bytes_per_s)
            for row in self._links
            for lk in row
        )
        return free_links and isinstance(self.congestion, NoCongestion)

    def crosses_machines(self, src: int, dst: int) -> bool:
        return self.node_of[src] != self.node_of[dst]

    # -- pure costs ----------------------------------------------------------------------
    def _congestion_s(self, src: int, dst: int, epoch: int | None, t: float | None,
                      traffic: str) -> float:
        if self.congested_traffic is not None and traffic not in self.congested_traffic:
            return 0.0
        if isinstance(self.congestion, NoCongestion):
            return 0.0
        e = self._epoch if epoch is None else int(epoch)
        tt = self.elapsed() if t is None else float(t)
        return self.congestion.extra_delay_s(self.node_of[src], self.node_of[dst], e, tt)

    def cost_s(
        self,
        src: int,
        dst: int,
        nbytes: float,
        epoch: int | None = None,
        t: float | None = None,
        *,
        messages: int = 1,
        traffic: str = FETCH,
    ) -> float:
        """Emulated wall seconds of a one-way transfer on idle links:
        ``f · [m·(latency + δ) + bytes / min(bw, W / RTT)]`` (see the module doc).

        Pure (no waiting, no counting). ``epoch`` defaults to :meth:`set_epoch`'s, ``t`` to
        :meth:`elapsed`. Zero between workers on the same machine. Concurrent transfers
        through the same NIC take longer (:meth:`charge` queues them).
        """
        self._check(src, dst)
        if not self.crosses_machines(src, dst) or (nbytes <= 0 and messages <= 0):
            return 0.0
        cong = self._congestion_s(src, dst, epoch, t, traffic)
        return self._bytes_s(src, dst, nbytes, cong) + \
            self._one_way_delay_s(src, dst, messages, cong)

    @property
    def window_gamma_s_per_byte_ms(self) -> float:
        """The γ of GreenDyGNN's Eq. 4 (s per byte per ms of delay) the window implies for
        delays well past ``W / bandwidth``: ``1e-3 / W`` (0 without a window limit)."""
        return 0.0 if math.isinf(self.tcp_window_bytes) else 1e-3 / self.tcp_window_bytes

    def round_trip_s(self, src: int, dst: int, congestion_s: float) -> float:
        """A flow's round trip (undilated seconds): both links' latencies and the
        congestion delay ``δ``, paid once."""
        return (self._links[src][dst].latency_s + self._links[dst][src].latency_s
                + congestion_s)

    def _serialisation_s(self, src: int, dst: int, nbytes: float) -> float:
        """Dilated seconds ``nbytes`` occupy the links from ``src`` to ``dst``."""
        return self.time_dilation * self._links[src][dst].serialisation_time(nbytes)

    def _window_s(self, src: int, dst: int, nbytes: float, congestion_s: float) -> float:
        """Dilated seconds the window lets ``nbytes`` take at the least:
        ``bytes · RTT / W`` (0 without a window limit)."""
        if math.isinf(self.tcp_window_bytes) or nbytes <= 0:
            return 0.0
        return (self.time_dilation * float(nbytes) * self.round_trip_s(src, dst, congestion_s)
                / self.tcp_window_bytes)

    def _bytes_s(self, src: int, dst: int, nbytes: float, congestion_s: float) -> float:
        """Dilated seconds of ``nbytes`` on idle links: ``bytes / min(bw, W / RTT)``."""
        return max(self._serialisation_s(src, dst, nbytes),
                   self._window_s(src, dst, nbytes, congestion_s))

    def _one_way_delay_s(self, src: int, dst: int, messages: int, cong: float) -> float:
        """Dilated seconds a one-way transfer waits besides its bytes: ``m·(latency + δ)``."""
        return self.time_dilation * messages * (self._links[src][dst].latency_s + cong)

    def _request_delays_s(self, requester: int, owner: int,
                          cong: float) -> tuple[float, float]:
        """Dilated waits of a round trip besides its bytes: the request's latency, α and δ
        (paid once), the response's latency."""
        f = self.time_dilation
        up = f * (self._links[requester][owner].latency_s + self.rpc_overhead_s + cong)
        down = f * self._links[owner][requester].latency_s
        return up, down

    def request_cost_s(
        self,
        requester: int,
        owner: int,
        request_bytes: float,
        response_bytes: float,
        epoch: int | None = None,
        t: float | None = None,
        *,
        traffic: str = FETCH,
    ) -> float:
        """Emulated wall seconds of a round trip on idle links (see module doc):
        ``f · [α + lat·2 + δ + req / min(bw, W/RTT) + resp / min(bw, W/RTT)]``."""
        self._check(requester, owner)
        if not self.crosses_machines(requester, owner):
            return 0.0
        cong = self._congestion_s(requester, owner, epoch, t, traffic)
        return (self._bytes_s(requester, owner, request_bytes, cong)
                + self._bytes_s(owner, requester, response_bytes, cong)
                + sum(self._request_delays_s(requester, owner, cong)))

    def ring_allreduce_cost_s(self, rank: int, world_size: int, nbytes: int,
                              epoch: int | None = None, t: float | None = None) -> float:
        """Emulated seconds worker ``rank`` spends sending its share of a ring all-reduce."""
        if world_size <= 1:
            return 0.0
        return self.cost_s(rank, (rank + 1) % world_size, ring_allreduce_bytes(nbytes, world_size),
                           epoch, t, messages=ring_allreduce_messages(world_size),
                           traffic=ALLREDUCE)

    # -- charging (really waits) ---------------------------------------------------------
    def _leg(self, src: int, dst: int, nbytes: float, delay_s: float,
             congestion_s: float) -> float:
        """Carry ``nbytes`` through ``src``'s egress and ``dst``'s ingress (shared with every
        other transfer of those machines) and through the flow's window — the bytes are
        through when both allow, ``max(link finish, asked + bytes·RTT/W)`` — then wait
        ``delay_s`` (latencies, congestion); returns the modelled seconds from asking for
        the links to the end."""
        lk = self._links[src][dst]
        bytes_per_s = lk.bandwidth_bytes_per_s / self.time_dilation
        start, finish = transfer(self.nic, self.node_of[src], self.node_of[dst], nbytes,
                                 bytes_per_s, lambda deadline: _wait_until(deadline, self.spin_s))
        end = max(finish, start + self._window_s(src, dst, nbytes, congestion_s)) + delay_s
        _wait_until(end, self.spin_s)
        return end - start

    def charge(
        self,
        src: int,
        dst: int,
        nbytes: float,
        epoch: int | None = None,
        *,
        messages: int = 1,
        traffic: str = FETCH,
    ) -> float:
        """Carry a one-way transfer through the NICs and wait for it on the calling thread;
        count it and return the modelled seconds (:meth:`cost_s` when the links are idle,
        more when other transfers share them)."""
        self._check(src, dst)
        if not self.crosses_machines(src, dst):
            return 0.0
        start = time.monotonic()
        cong = self._congestion_s(src, dst, epoch, None, traffic)
        charged = self._leg(src, dst, nbytes, self._one_way_delay_s(src, dst, messages, cong),
                            cong)
        self._count(src, dst, traffic, int(nbytes), messages, charged, time.monotonic() - start)
        return charged

    def charge_request(
        self,
        requester: int,
        owner: int,
        request_bytes: float,
        response_bytes: float,
        epoch: int | None = None,
        *,
        traffic: str = FETCH,
    ) -> float:
        """A round trip through the NICs: the request (``requester → owner``, with the
        per-request overhead α and the congestion delay once), then the response (``owner
        → requester``), each through its window; counts both legs (one message each) and returns the
        modelled seconds (:meth:`request_cost_s` when the links are idle)."""
        self._check(requester, owner)
        if not self.crosses_machines(requester, owner):
            return 0.0
        start = time.monotonic()
        cong = self._congestion_s(requester, owner, epoch, None, traffic)
        up_delay, down_delay = self._request_delays_s(requester, owner, cong)
        up = self._leg(requester, owner, request_bytes, up_delay, cong)
        mid = time.monotonic()
        down = self._leg(owner, requester, response_bytes, down_delay, cong)
        end = time.monotonic()
        self._count(requester, owner, traffic, int(request_bytes), 1, up, mid - start,
                    rpcs=1)
        self._count(owner, requester, traffic, int(response_bytes), 1, down, end - mid)
        return up + down

    def charge_ring_allreduce(self, rank: int, world_size: int, nbytes: int,
                              epoch: int | None = None) -> float:
        """Charge worker ``rank``'s share of a ring all-reduce of ``nbytes`` (see module doc)."""
        if world_size <= 1:
            return 0.0
        return self.charge(rank, (rank + 1) % world_size, ring_allreduce_bytes(nbytes, world_size),
                           epoch, messages=ring_allreduce_messages(world_size),
                           traffic=ALLREDUCE)

    # -- counters ------------------------------------------------------------------------
    def _check(self, src: int, dst: int) -> None:
        if not (0 <= src < self.num_workers and 0 <= dst < self.num_workers):
            raise IndexError(f"worker out of range: {src} → {dst} (P={self.num_workers})")

    def _count(self, src, dst, traffic, nbytes, messages, charged, waited,
               rpcs: int = 0) -> None:
        with self._lock:
            st = self._stats.get((src, dst, traffic))
            if st is None:
                st = self._stats[(src, dst, traffic)] = LinkStats()
            st.bytes += nbytes
            st.messages += messages
            st.rpcs += rpcs
            st.charged_s += charged
            st.waited_s += waited
        mine = self._mine.__dict__  # the calling thread is the one that waited
        mine["waited"] = mine.get("waited", 0.0) + waited
        if traffic == ALLREDUCE:
            mine["allreduce"] = mine.get("allreduce", 0.0) + waited

    def thread_waited_s(self) -> tuple[float, float]:
        """Wall seconds the calling thread has waited on emulated transfers so far: of
        every class, and of them the all-reduce's (the training loop takes the difference
        over a step: the communication a trainer blocked on inside it)."""
        mine = self._mine.__dict__
        return mine.get("waited", 0.0), mine.get("allreduce", 0.0)

    def link_stats(self, src: int, dst: int, traffic: str | None = None) -> LinkStats:
        """Counters of the directed link ``src → dst`` (one traffic class, or all)."""
        out = LinkStats()
        with self._lock:
            for (s, d, tr), st in self._stats.items():
                if s == src and d == dst and (traffic is None or tr == traffic):
                    out.add(st)
        return out

    def totals(self, traffic: str | None = None) -> LinkStats:
        out = LinkStats()
        with self._lock:
            for (_, _, tr), st in self._stats.items():
                if traffic is None or tr == traffic:
                    out.add(st)
        return out

    def stats(self) -> list[dict[str, Any]]:
        """Tidy records, one per (src, dst, traffic) with any traffic."""
        with self._lock:
            items = sorted(self._stats.items())
            return [
                {"src": s, "dst": d, "traffic": tr, "bytes": st.bytes,
                 "messages": st.messages, "charged_s": st.charged_s, "waited_s": st.waited_s}
                for (s, d, tr), st in items
            ]

    def reset_counters(self) -> None:
        with self._lock:
            self._stats.clear()

    def describe(self) -> dict[str, Any]:
        """The emulator's settings, for run records."""
        links: Any
        if self._uniform is not None:
            links = self._uniform.to_dict()
        else:
            links = [[lk.to_dict() for lk in row] for row in self._links]
        return {
            "num_workers": self.num_workers,
            "links": links,
            "congestion": self.congestion.to_dict(),
            "congested_traffic": None if self.congested_traffic is None
            else sorted(self.congested_traffic),
            "node_of": list(self.node_of),
            "rpc_overhead_us": self.rpc_overhead_s * 1e6,
            "tcp_window_bytes": None if math.isinf(self.tcp_window_bytes)
            else self.tcp_window_bytes,
        }


def _link_from_mapping(base: LinkModel, d: Mapping[str, Any]) -> LinkModel:
    lat = base.latency_s
    bw = base.bandwidth_bytes_per_s
    if "preset" in d:
        p = NETWORK_PRESETS[d["preset"]]
        lat, bw = p.latency_s, p.bandwidth_bytes_per_s
    if "latency_ms" in d:
        lat = float(d["latency_ms"]) / 1e3
    if "latency_us" in d:
        lat = float(d["latency_us"]) / 1e6
    if "bandwidth_gbps" in d:
        g = d["bandwidth_gbps"]
        bw = math.inf if g is None or g == "inf" else float(g) * 1e9 / 8
    return LinkModel(lat, bw)


def network_from_spec(
    spec: str | Mapping[str, Any] | None,
    num_workers: int,
    num_epochs: int | None = None,
    nic_path: str | None = None,
) -> NetworkEmulator:
    """Build an emulator from a preset name or a mapping.

    Mapping keys (all optional)::

        preset: none | 1gbe | 10gbe | 25gbe        base link (default none)
        latency_ms / latency_us: float             override the one-way latency
        bandwidth_gbps: float | null               override the bandwidth (null = ∞)
        links: [{src, dst, symmetric?: true, preset? | latency_ms? | bandwidth_gbps?}]
                                                   per-link overrides on top of the base
        congestion: {kind: ..., applies_to?: [fetch, allreduce, ...] | all, ...}
                                                   see commgnn.network.congestion
        workers_per_node: int                      workers sharing one machine (default 1)
        spin_us: float                             busy-wait tail per charge (default 200)
        rpc_overhead_us: float                     α: fixed cost per request (default 0)
        tcp_window_bytes: float | null             a flow's TCP window (default
                                                   TCP_WINDOW_BYTES; null: no limit)
        time_dilation: float >= 1 | "auto"         f (default 1; "auto": 1 here, the
                                                   training loop measures and sets it)
        reference_step_ms: float                   accelerator step time for "auto"

    ``num_epochs`` fills in a ``greendygnn`` congestion spec that leaves it out;
    ``nic_path`` is the file of the NIC clocks shared by the run's processes (default:
    clocks private to this emulator).
    """
    if spec is None:
        spec = "none"
    if isinstance(spec, str):
        if spec not in NETWORK_PRESETS:
            raise ValueError(f"unknown network preset {spec!r}; have {sorted(NETWORK_PRESETS)}")
        spec = {"preset": spec}
    unknown = set(spec) - {"preset", "latency_ms", "latency_us", "bandwidth_gbps", "links",
                           "congestion", "workers_per_node", "spin_us", "name",
                           "rpc_overhead_us", "tcp_window_bytes", "time_dilation",
                           "reference_step_ms"}
    if unknown:
        raise ValueError(f"unknown network spec keys {sorted(unknown)}")
    base = _link_from_mapping(NETWORK_PRESETS["none"], spec)
    links: LinkModel | list[list[LinkModel]] = base
    if spec.get("links"):
        matrix = [[base] * num_workers for _ in range(num_workers)]
        for ov in spec["links"]:
            s, d = int(ov["src"]), int(ov["dst"])
            lk = _link_from_mapping(base, ov)
            matrix[s][d] = lk
            if ov.get("symmetric", True):
                matrix[d][s] = lk
        links = matrix
    cong_spec = spec.get("congestion")
    wpn = int(spec.get("workers_per_node", 1))
    node_of = [w // wpn for w in range(num_workers)]
    # schedules index machines, not workers
    congestion = congestion_from_spec(cong_spec, node_of[-1] + 1, num_epochs)
    nic = NicClocks(node_of[-1] + 1, nic_path) if nic_path else None
    mode, factor = dilation_of(spec)
    return NetworkEmulator(
        num_workers,
        links,
        congestion,
        congested_traffic=default_congested_traffic(cong_spec),
        node_of=node_of,
        spin_s=float(spec.get("spin_us", DEFAULT_SPIN_S * 1e6)) / 1e6,
        nic=nic,
        time_dilation=factor if mode == "fixed" else 1.0,
        rpc_overhead_s=float(spec.get("rpc_overhead_us", 0.0)) / 1e6,
        tcp_window_bytes=spec.get("tcp_window_bytes", TCP_WINDOW_BYTES),
    )


def dilation_of(spec: str | Mapping[str, Any] | None) -> tuple[str, float | None]:
    """``("fixed", f)`` or ``("auto", the config's reference step in seconds or None)``
    from a network spec (``auto`` without ``reference_step_ms`` takes the workload's from
    :mod:`commgnn.train.references`)."""
    if not isinstance(spec, Mapping) or spec.get("time_dilation", 1) != "auto":
        factor = spec.get("time_dilation", 1) if isinstance(spec, Mapping) else 1
        return "fixed", float(factor)
    ms = spec.get("reference_step_ms")
    return "auto", None if ms is None else float(ms) / 1e3


class CollectiveWait:
    """How long this worker sat in real collectives waiting for its peers.

    A gradient all-reduce issued asynchronously (the DDP hook) overlaps the rest of the
    backward pass; the worker idles only from when its last bucket is issued (its backward
    is done) until the last result arrives — the straggler wait, plus the real transfer on
    this host (the emulated one is charged before the issue, as ``sync_s``). :meth:`take`
    returns ``max(done) − max(issued)`` over the collectives since the last call (0 if
    none), which the training loop calls after every step. Not seen: waits in collectives
    outside the hook — DDP's one-off bucket rebuild in its second forward pass, a system's
    own ``all_reduce`` calls — and every wait under NCCL (one GPU per worker): its future
    completes when the all-reduce is enqueued, so the wait falls in the step's final
    device synchronisation and counts busy (gloo, on the CPU and on shared GPUs, completes
    it when the data has arrived)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._issued: float | None = None
        self._done: float | None = None

    def issued(self, at: float | None = None) -> None:
        now = time.perf_counter() if at is None else at
        with self._lock:
            self._issued = now if self._issued is None else max(self._issued, now)

    def done(self, at: float | None = None) -> None:
        now = time.perf_counter() if at is None else at
        with self._lock:
            self._done = now if self._done is None else max(self._done, now)

    def take(self) -> float:
        with self._lock:
            issued, done = self._issued, self._done
            self._issued = self._done = None
        if issued is None or done is None:
            return 0.0
        return max(0.0, done - issued)


def allreduce_hook(
    emulator: NetworkEmulator,
    rank: int,
    world_size: int,
    process_group: Any = None,
    *,
    ring: Sequence[int] | None = None,
    scale: Callable[[], float] | None = None,
) -> Callable[[Any, Any], Any]:
    """A DDP communication hook that pays the emulated ring all-reduce, then all-reduces.

    Use as ``ddp.register_comm_hook(None, allreduce_hook(emu, rank, world_size))``. For each
    gradient bucket of ``B`` bytes the calling (autograd) thread first waits for its share
    of a ring all-reduce (``ceil(2(P−1)B/P)`` bytes in ``2(P−1)`` messages to its ring
    successor, traffic ``allreduce``), then follows torch's
    ``default_hooks.allreduce_hook``: divide by the group size and ``all_reduce`` (sum)
    asynchronously, returning the future of the averaged bucket. The hook's ``state``
    argument is used as the process group when it is one and ``process_group`` is not given
    (else the default group).

    ``ring`` lists the global ranks of a subgroup (``process_group``'s, in ring order;
    default ``0..world_size-1``); ``scale()``, when given, multiplies the bucket before the
    reduction, so the result is ``(1/P)·Σ_w scale_w·g_w`` (Grappa's coverage correction).
    """
    import torch.distributed as dist  # deferred: imports torch

    members = list(range(world_size)) if ring is None else [int(r) for r in ring]
    size = len(members)
    successor = members[(members.index(rank) + 1) % size]

    # No annotations on purpose: DDP's _check_comm_hook compares them with dist.GradBucket
    # and Future[Tensor], and postponed (string) annotations would fail that check.
    def hook(state, bucket):  # type: ignore[no-untyped-def]
        tensor = bucket.buffer()
        if scale is not None:
            tensor.mul_(float(scale()))
        nbytes = tensor.numel() * tensor.element_size()
        if size > 1:
            emulator.charge(rank, successor, ring_allreduce_bytes(nbytes, size),
                            messages=ring_allreduce_messages(size), traffic=ALLREDUCE)
        group = process_group
        if group is None:
            group = state if isinstance(state, dist.ProcessGroup) else dist.group.WORLD
        tensor.div_(size)
        emulator.collectives.issued()
        fut = dist.all_reduce(tensor, group=group, async_op=True).get_future()

        def finished(f):  # type: ignore[no-untyped-def]
            emulator.collectives.done()
            return f.value()[0]

        return fut.then(finished)

    return hook
