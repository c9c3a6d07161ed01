"""Network emulation: every byte that would cross a machine boundary pays one emulated cost.

The host running the workers has no real network between them (and no ``netem``), so each
transfer that would cross a machine boundary — feature fetches, gradient all-reduce, model
migration, repartition shuffles — is *charged* by the sending thread: it really waits
(``time.sleep`` + a short bounded busy-wait tail) for the emulated cost, so overlap with
compute on other threads is real. Every system pays through the same :class:`NetworkEmulator`.

Cost of a one-way transfer of ``nbytes`` in ``m`` messages from worker ``src`` to ``dst``::

    cost = m · (latency + congestion) + nbytes / bandwidth          (0 if same machine)

- ``latency``/``bandwidth`` come from the directed link's :class:`LinkModel`;
- ``congestion = schedule.extra_delay_s(node(src), node(dst), epoch, t)`` — the larger of
  the two nodes' extra one-way delays (see :mod:`commgnn.dist.congestion`) — and only for
  traffic classes the schedule applies to (``congested_traffic``; ``None`` = all).

A request/response round trip (an RPC: the requester asks, the owner answers) costs::

    rtt = [latency(req→own) + request_bytes / bw(req→own)]
        + [latency(own→req) + response_bytes / bw(own→req)]
        + congestion(req, own)                                  (once per round trip)

The congestion term is paid once because GreenDyGNN §VI-A injects *one-way* delay with
``tc netem`` on the congested node: the RPC's round-trip time rises by that delay once.

A ring all-reduce of a ``B``-byte bucket over ``P`` workers (reduce-scatter then all-gather,
``P−1`` steps each, one chunk of ``B/P`` bytes per step to the ring neighbour ``rank+1``)
makes each worker send::

    bytes    = ceil(2 (P−1) B / P)
    messages = 2 (P−1)
    cost     = 2 (P−1) · (latency + congestion) + bytes / bandwidth

charged to the link ``rank → (rank+1) mod P`` (see :func:`ring_allreduce_bytes` and
:func:`allreduce_hook`). The real all-reduce that follows blocks on the slowest worker, so one
congested node delays everyone, as on a real ring.

Traffic classes (``traffic=`` on every charge): :data:`FETCH` (feature-fetch RPCs, the DGL
RPC port of the paper), :data:`ALLREDUCE` (gradient sync), :data:`MIGRATION` (model or
activation migration), :data:`SHUFFLE` (repartition shuffles), :data:`OTHER`.

Time: ``t`` for time-based schedules is the emulator's elapsed seconds since construction or
:meth:`NetworkEmulator.reset_clock` (``time.perf_counter`` based; reset it after a barrier so
that all workers share an origin).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from commgnn.dist.congestion import (
    CongestionSchedule,
    NoCongestion,
    congestion_from_spec,
    default_congested_traffic,
)

__all__ = [
    "ALLREDUCE",
    "DEFAULT_SPIN_S",
    "FETCH",
    "MIGRATION",
    "NETWORK_PRESETS",
    "OTHER",
    "SHUFFLE",
    "LinkModel",
    "LinkStats",
    "NetworkEmulator",
    "allreduce_hook",
    "network_from_spec",
    "ring_allreduce_bytes",
    "ring_allreduce_messages",
]

FETCH = "fetch"
ALLREDUCE = "allreduce"
MIGRATION = "migration"
SHUFFLE = "shuffle"
OTHER = "other"

#: Busy-wait tail of each charge (seconds): sleep until ``deadline - DEFAULT_SPIN_S``, then
#: spin. Linux ``time.sleep`` overshoots by ~50–100 µs; the tail makes sub-ms charges
#: accurate while spending at most this much CPU per charge.
DEFAULT_SPIN_S = 200e-6


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

    def add(self, other: LinkStats) -> None:
        self.bytes += other.bytes
        self.messages += other.messages
        self.charged_s += other.charged_s
        self.waited_s += other.waited_s


def _wait_until(deadline: float, spin_s: float) -> None:
    """Sleep until ``deadline - spin_s`` (perf_counter), then spin to the deadline."""
    while True:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            return
        if remaining > spin_s:
            time.sleep(remaining - spin_s)
        else:
            break
    while time.perf_counter() < deadline:
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
        A :class:`~commgnn.dist.congestion.CongestionSchedule` (default: clean).
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
        self._clock = clock
        self._t0 = clock()
        self._epoch = 0
        self._lock = threading.Lock()
        self._stats: dict[tuple[int, int, str], LinkStats] = {}

    # -- state ---------------------------------------------------------------------------
    @property
    def epoch(self) -> int:
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Current epoch, used by every call that does not pass one."""
        self._epoch = int(epoch)

    def elapsed(self) -> float:
        """Seconds since construction or the last :meth:`reset_clock`."""
        return self._clock() - self._t0

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
        """Emulated seconds of a one-way transfer: ``m·(latency + congestion) + bytes/bw``.

        Pure (no waiting, no counting). ``epoch`` defaults to :meth:`set_epoch`'s, ``t`` to
        :meth:`elapsed`. Zero between workers on the same machine.
        """
        self._check(src, dst)
        if not self.crosses_machines(src, dst) or (nbytes <= 0 and messages <= 0):
            return 0.0
        lk = self._links[src][dst]
        cong = self._congestion_s(src, dst, epoch, t, traffic)
        return messages * (lk.latency_s + cong) + lk.serialisation_time(nbytes)

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
        """Emulated round trip: request one way + response back + congestion once."""
        return sum(self._request_legs(requester, owner, request_bytes, response_bytes,
                                      epoch, t, traffic))

    def _request_legs(self, requester, owner, request_bytes, response_bytes, epoch, t,
                      traffic) -> tuple[float, float]:
        self._check(requester, owner)
        if not self.crosses_machines(requester, owner):
            return 0.0, 0.0
        up = self._links[requester][owner].transfer_time(request_bytes)
        down = self._links[owner][requester].transfer_time(response_bytes)
        cong = self._congestion_s(requester, owner, epoch, t, traffic)
        return up + cong, down

    def ring_allreduce_cost_s(self, rank: int, world_size: int, nbytes: int,
                              epoch: int | None = None, t: float | None = None) -> float:
        """Emulated seconds worker ``rank`` spends sending its share of a ring all-reduce."""
        if world_size <= 1:
            return 0.0
        return self.cost_s(rank, (rank + 1) % world_size, ring_allreduce_bytes(nbytes, world_size),
                           epoch, t, messages=ring_allreduce_messages(world_size),
                           traffic=ALLREDUCE)

    # -- charging (really waits) ---------------------------------------------------------
    def wait(self, seconds: float) -> float:
        """Block the calling thread for ``seconds``; returns the wall time actually waited."""
        start = time.perf_counter()
        if seconds > 0:
            _wait_until(start + seconds, self.spin_s)
        return time.perf_counter() - start

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
        """Wait for :meth:`cost_s` on the calling thread, count it, return the seconds charged."""
        cost = self.cost_s(src, dst, nbytes, epoch, messages=messages, traffic=traffic)
        waited = self.wait(cost)
        if self.crosses_machines(src, dst):
            self._count(src, dst, traffic, int(nbytes), messages, cost, waited)
        return cost

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
        """Wait for a round trip (:meth:`request_cost_s`), count both legs, return the cost.

        The request is counted on ``requester → owner`` (with the congestion delay), the
        response on ``owner → requester``; one message each.
        """
        up, down = self._request_legs(requester, owner, request_bytes, response_bytes,
                                      epoch, None, traffic)
        cost = up + down
        waited = self.wait(cost)
        if self.crosses_machines(requester, owner):
            share = waited / cost if cost > 0 else 0.0
            self._count(requester, owner, traffic, int(request_bytes), 1, up, up * share)
            self._count(owner, requester, traffic, int(response_bytes), 1, down, down * share)
        return cost

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

    def _count(self, src, dst, traffic, nbytes, messages, charged, waited) -> None:
        with self._lock:
            st = self._stats.get((src, dst, traffic))
            if st is None:
                st = self._stats[(src, dst, traffic)] = LinkStats()
            st.bytes += nbytes
            st.messages += messages
            st.charged_s += charged
            st.waited_s += waited

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
) -> NetworkEmulator:
    """Build an emulator from a preset name or a mapping.

    Mapping keys (all optional)::

        preset: none | 1gbe | 10gbe | 25gbe        base link (default none)
        latency_ms / latency_us: float             override the one-way latency
        bandwidth_gbps: float | null               override the bandwidth (null = ∞)
        links: [{src, dst, symmetric?: true, preset? | latency_ms? | bandwidth_gbps?}]
                                                   per-link overrides on top of the base
        congestion: {kind: ..., applies_to?: [fetch, allreduce, ...] | all, ...}
                                                   see commgnn.dist.congestion
        workers_per_node: int                      workers sharing one machine (default 1)
        spin_us: float                             busy-wait tail per charge (default 200)

    ``num_epochs`` fills in a ``greendygnn`` congestion spec that leaves it out.
    """
    if spec is None:
        spec = "none"
    if isinstance(spec, str):
        if spec not in NETWORK_PRESETS:
            raise ValueError(f"unknown network preset {spec!r}; have {sorted(NETWORK_PRESETS)}")
        return NetworkEmulator(num_workers, NETWORK_PRESETS[spec])
    unknown = set(spec) - {"preset", "latency_ms", "latency_us", "bandwidth_gbps", "links",
                           "congestion", "workers_per_node", "spin_us", "name"}
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
    congestion = congestion_from_spec(cong_spec, num_workers, num_epochs)
    wpn = int(spec.get("workers_per_node", 1))
    node_of = [w // wpn for w in range(num_workers)]
    return NetworkEmulator(
        num_workers,
        links,
        congestion,
        congested_traffic=default_congested_traffic(cong_spec),
        node_of=node_of,
        spin_s=float(spec.get("spin_us", DEFAULT_SPIN_S * 1e6)) / 1e6,
    )


def allreduce_hook(
    emulator: NetworkEmulator,
    rank: int,
    world_size: int,
    process_group: Any = None,
) -> Callable[[Any, Any], Any]:
    """A DDP communication hook that pays the emulated ring all-reduce, then all-reduces.

    Use as ``ddp.register_comm_hook(None, allreduce_hook(emu, rank, world_size))``. For each
    gradient bucket of ``B`` bytes the calling (autograd) thread first waits for
    :meth:`NetworkEmulator.charge_ring_allreduce` (``ceil(2(P−1)B/P)`` bytes in ``2(P−1)``
    messages to ``rank+1``, traffic ``allreduce``), then follows torch's
    ``default_hooks.allreduce_hook``: divide by the world size and ``all_reduce`` (sum)
    asynchronously, returning the future of the averaged bucket. The hook's ``state``
    argument is used as the process group when it is one and ``process_group`` is not given
    (else the default group).
    """
    import torch.distributed as dist

    # No annotations on purpose: DDP's _check_comm_hook compares them with dist.GradBucket
    # and Future[Tensor], and postponed (string) annotations would fail that check.
    def hook(state, bucket):  # type: ignore[no-untyped-def]
        tensor = bucket.buffer()
        nbytes = tensor.numel() * tensor.element_size()
        emulator.charge_ring_allreduce(rank, world_size, nbytes)
        group = process_group
        if group is None:
            group = state if isinstance(state, dist.ProcessGroup) else dist.group.WORLD
        tensor.div_(world_size)
        fut = dist.all_reduce(tensor, group=group, async_op=True).get_future()
        return fut.then(lambda f: f.value()[0])

    return hook
