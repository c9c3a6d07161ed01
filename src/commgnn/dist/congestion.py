"""Congestion schedules: extra one-way delay on emulated nodes, by epoch or by elapsed time.

A schedule says, at any moment, which *nodes* (machines) are congested and by how much
one-way delay. It is consumed by :class:`commgnn.dist.netem.NetworkEmulator`, which adds it
to the link cost of every transfer the schedule applies to.

Semantics (the one rule every system pays by)
---------------------------------------------
- ``node_delays_s(epoch, t)`` gives the extra one-way delay (seconds) of each congested node;
  nodes not listed are clean.
- A one-way transfer between nodes ``a`` and ``b`` (either direction) pays
  ``extra_delay_s(a, b, epoch, t) = max(delay[a], delay[b])`` once per message: the delay is
  added to any transfer that touches a congested node, as sender or as owner/receiver, and a
  transfer touching two congested nodes pays the larger delay (not the sum). A transfer
  within one node (``a == b``) never pays.
- A request/response round trip pays it **once**
  (see :meth:`commgnn.dist.netem.NetworkEmulator.request_cost_s`): GreenDyGNN (§VI-A) injects
  "15–25 ms of additional one-way delay" with ``tc netem`` on the congested node, which raises
  an RPC's round-trip time by that delay once, not twice.

Delays in tables and specs are in **milliseconds** (as ``tc netem`` takes them); every method
returns **seconds**.

GreenDyGNN's pattern (§VI-A, verbatim): "The pattern cycles through clean and congested
phases: epochs 0–2 run clean as a warmup, epochs 3–9 introduce 15–25 ms of additional one-way
delay on one or two nodes at a time, the pattern repeats every 7 epochs, and the final epoch
is forced clean." :func:`greendygnn_schedule` reproduces it deterministically from a seed.
In the paper the delay hits only the DGL RPC port (feature fetches), "leaving gradient
synchronization traffic on port 29500 unaffected"; which traffic a schedule applies to is the
emulator's ``congested_traffic`` setting, and :func:`congestion_from_spec` returns the paper's
default (``["fetch"]``) for the ``greendygnn`` kind.
"""

from __future__ import annotations

import bisect
import hashlib
import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = [
    "GREENDYGNN_DELAY_MS",
    "GREENDYGNN_MAX_NODES",
    "GREENDYGNN_PERIOD",
    "GREENDYGNN_WARMUP_EPOCHS",
    "CongestionSchedule",
    "EpochSchedule",
    "GreenDyGNNSchedule",
    "NoCongestion",
    "TimeSchedule",
    "congestion_from_spec",
    "default_congested_traffic",
    "greendygnn_schedule",
]

#: GreenDyGNN §VI-A: epochs 0–2 are a clean warm-up.
GREENDYGNN_WARMUP_EPOCHS = 3
#: GreenDyGNN §VI-A: the congested pattern (epochs 3–9) repeats every 7 epochs.
GREENDYGNN_PERIOD = 7
#: GreenDyGNN §VI-A: 15–25 ms of additional one-way delay.
GREENDYGNN_DELAY_MS = (15.0, 25.0)
#: GreenDyGNN §VI-A: "on one or two nodes at a time".
GREENDYGNN_MAX_NODES = 2


def _delays_ms_to_s(delays_ms: Mapping[Any, float]) -> dict[int, float]:
    out: dict[int, float] = {}
    for node, ms in delays_ms.items():
        ms = float(ms)
        if not math.isfinite(ms) or ms < 0:
            raise ValueError(f"congestion delay must be a finite non-negative ms value, got {ms}")
        if ms > 0:
            out[int(node)] = ms / 1e3
    return out


class CongestionSchedule(ABC):
    """Extra one-way delay per node as a function of (epoch, elapsed seconds)."""

    kind: str = "abstract"

    @abstractmethod
    def node_delays_s(self, epoch: int, t: float | None = None) -> dict[int, float]:
        """Congested nodes → extra one-way delay in seconds (clean nodes absent)."""

    def extra_delay_s(self, src: int, dst: int, epoch: int, t: float | None = None) -> float:
        """Delay one message between ``src`` and ``dst`` pays: max of the two nodes' delays.

        Zero when ``src == dst`` (no machine boundary is crossed).
        """
        if src == dst:
            return 0.0
        delays = self.node_delays_s(epoch, t)
        if not delays:
            return 0.0
        return max(delays.get(int(src), 0.0), delays.get(int(dst), 0.0))

    def epoch_table_ms(self, num_epochs: int, t: float | None = None) -> list[dict[int, float]]:
        """The per-epoch node delays (ms) for epochs ``0..num_epochs-1`` (for reports)."""
        return [
            {n: d * 1e3 for n, d in sorted(self.node_delays_s(e, t).items())}
            for e in range(num_epochs)
        ]

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """A spec that :func:`congestion_from_spec` turns back into an equal schedule."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CongestionSchedule) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(repr(self.to_dict()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_dict()!r})"


class NoCongestion(CongestionSchedule):
    """A clean network."""

    kind = "none"

    def node_delays_s(self, epoch: int, t: float | None = None) -> dict[int, float]:
        return {}

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "none"}


class EpochSchedule(CongestionSchedule):
    """An explicit table ``epoch → {node: delay_ms}``; epochs not in the table are clean.

    ``period``/``start`` optionally repeat the table: when ``period`` is set, an epoch
    ``e >= start`` not in the table uses the entry for ``start + (e - start) % period``.
    """

    kind = "epochs"

    def __init__(
        self,
        table: Mapping[Any, Mapping[Any, float]],
        *,
        period: int | None = None,
        start: int = 0,
        clean_epochs: Iterable[int] = (),
    ) -> None:
        self._table: dict[int, dict[int, float]] = {
            int(e): _delays_ms_to_s(d) for e, d in table.items()
        }
        if period is not None and int(period) <= 0:
            raise ValueError("period must be positive")
        self.period = None if period is None else int(period)
        self.start = int(start)
        self.clean_epochs = frozenset(int(e) for e in clean_epochs)

    def node_delays_s(self, epoch: int, t: float | None = None) -> dict[int, float]:
        epoch = int(epoch)
        if epoch in self.clean_epochs:
            return {}
        if epoch in self._table:
            return dict(self._table[epoch])
        if self.period is not None and epoch >= self.start:
            return dict(self._table.get(self.start + (epoch - self.start) % self.period, {}))
        return {}

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "kind": "epochs",
            "table": {
                e: {n: round(s * 1e3, 9) for n, s in sorted(nodes.items())}
                for e, nodes in sorted(self._table.items())
            },
        }
        if self.period is not None:
            d["period"] = self.period
            d["start"] = self.start
        if self.clean_epochs:
            d["clean_epochs"] = sorted(self.clean_epochs)
        return d


class TimeSchedule(CongestionSchedule):
    """Piecewise-constant delays by elapsed seconds ``t``.

    ``segments`` is a sequence of ``(start_s, {node: delay_ms})``: from ``start_s`` until the
    next segment's start the listed nodes are congested. Before the first segment the network
    is clean. With ``period_s``, ``t`` is taken modulo the period (oscillating congestion).
    ``t`` is the emulator's elapsed time (seconds since its clock was reset); the epoch is
    ignored.
    """

    kind = "time"

    def __init__(
        self,
        segments: Sequence[tuple[float, Mapping[Any, float]]],
        *,
        period_s: float | None = None,
    ) -> None:
        segs = sorted(((float(s), _delays_ms_to_s(d)) for s, d in segments), key=lambda x: x[0])
        if any(s < 0 for s, _ in segs):
            raise ValueError("segment starts must be >= 0 s")
        self._starts = [s for s, _ in segs]
        self._delays = [d for _, d in segs]
        if period_s is not None and not float(period_s) > 0:
            raise ValueError("period_s must be positive")
        self.period_s = None if period_s is None else float(period_s)

    def node_delays_s(self, epoch: int, t: float | None = None) -> dict[int, float]:
        if t is None:
            raise ValueError("TimeSchedule needs the elapsed time t")
        if self.period_s is not None:
            t = math.fmod(t, self.period_s)
        i = bisect.bisect_right(self._starts, t) - 1
        return dict(self._delays[i]) if i >= 0 else {}

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "kind": "time",
            "segments": [
                [s, {n: round(v * 1e3, 9) for n, v in sorted(dl.items())}]
                for s, dl in zip(self._starts, self._delays, strict=True)
            ],
        }
        if self.period_s is not None:
            d["period_s"] = self.period_s
        return d


def _unit(seed: int, *parts: object) -> float:
    """A uniform number in [0, 1) from SHA-256 of the key: byte-stable across versions."""
    key = "|".join(["commgnn-congestion", str(int(seed)), *map(str, parts)]).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2.0**64


def greendygnn_schedule(
    num_workers: int,
    num_epochs: int,
    seed: int = 0,
    *,
    warmup_epochs: int = GREENDYGNN_WARMUP_EPOCHS,
    period: int = GREENDYGNN_PERIOD,
    delay_ms: tuple[float, float] = GREENDYGNN_DELAY_MS,
    max_nodes: int = GREENDYGNN_MAX_NODES,
) -> GreenDyGNNSchedule:
    """GreenDyGNN §VI-A's congestion pattern, drawn deterministically from ``seed``.

    - epochs ``0..warmup_epochs-1`` (0–2) are clean;
    - a cycle of ``period`` (7) congested epochs is drawn once: for each phase ``k`` of the
      cycle, ``n_k ∈ {1, ..., max_nodes}`` (1 or 2, capped at ``num_workers``) distinct nodes,
      each with its own delay uniform in ``delay_ms`` (15–25 ms), rounded to 0.1 ms;
    - epoch ``e >= warmup_epochs`` uses phase ``(e - warmup_epochs) % period`` (so epochs
      3–9 are the first cycle, 10–16 repeat it, ...);
    - the final epoch ``num_epochs - 1`` is forced clean.

    Every draw is a SHA-256 hash of ``(seed, phase, what)``: same arguments ⇒ same schedule
    on every platform and Python/numpy version.
    """
    num_workers = int(num_workers)
    num_epochs = int(num_epochs)
    if num_workers < 1 or num_epochs < 0:
        raise ValueError("num_workers must be >= 1 and num_epochs >= 0")
    lo, hi = float(delay_ms[0]), float(delay_ms[1])
    if not 0 <= lo <= hi:
        raise ValueError(f"bad delay range {delay_ms}")
    max_nodes = max(1, min(int(max_nodes), num_workers))

    cycle: list[dict[int, float]] = []
    for k in range(period):
        n = 1 + int(_unit(seed, k, "count") * max_nodes)
        order = sorted(range(num_workers), key=lambda w, k=k: _unit(seed, k, "node", w))
        nodes = sorted(order[:n])
        delays = {}
        for w in nodes:
            ms = round(lo + (hi - lo) * _unit(seed, k, "delay", w), 1)
            delays[w] = min(max(ms, lo), hi)
        cycle.append(delays)

    table: dict[int, dict[int, float]] = {}
    for e in range(warmup_epochs, num_epochs):
        table[e] = dict(cycle[(e - warmup_epochs) % period])
    if num_epochs > 0:
        table.pop(num_epochs - 1, None)  # final epoch forced clean
    params = {
        "num_workers": num_workers,
        "num_epochs": num_epochs,
        "seed": int(seed),
        "warmup_epochs": int(warmup_epochs),
        "period": int(period),
        "delay_ms": [lo, hi],
        "max_nodes": max_nodes,
    }
    return GreenDyGNNSchedule(table, params)


class GreenDyGNNSchedule(EpochSchedule):
    """The materialised :func:`greendygnn_schedule` (an :class:`EpochSchedule` that
    remembers the parameters it was drawn from)."""

    kind = "greendygnn"

    def __init__(self, table: Mapping[Any, Mapping[Any, float]], params: dict[str, Any]):
        super().__init__(table)
        self.params = dict(params)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "greendygnn", **self.params}

    def table_spec(self) -> dict[str, Any]:
        """The same schedule as an explicit ``epochs`` spec."""
        return EpochSchedule.to_dict(self)


def default_congested_traffic(spec: Mapping[str, Any] | None) -> list[str] | None:
    """Traffic classes a congestion spec applies to: ``spec['applies_to']`` if given, else
    ``["fetch"]`` for the ``greendygnn`` kind (the paper delays only the RPC port) and
    ``None`` (all traffic) for every other kind."""
    if not spec:
        return None
    if "applies_to" in spec:
        a = spec["applies_to"]
        if a is None or a == "all" or a == ["all"]:
            return None
        return [a] if isinstance(a, str) else [str(x) for x in a]
    return ["fetch"] if spec.get("kind") == "greendygnn" else None


def congestion_from_spec(
    spec: Mapping[str, Any] | str | None,
    num_workers: int | None = None,
    num_epochs: int | None = None,
) -> CongestionSchedule:
    """Build a schedule from a config mapping (or ``None``/``"none"``).

    Kinds::

        {kind: none}
        {kind: epochs, table: {EPOCH: {NODE: delay_ms}}, period?: int, start?: int,
         clean_epochs?: [int]}
        {kind: time, segments: [[start_s, {NODE: delay_ms}], ...], period_s?: float}
        {kind: greendygnn, seed?: 0, num_epochs?: int, num_workers?: int,
         warmup_epochs?: 3, period?: 7, delay_ms?: [15, 25], max_nodes?: 2}

    ``num_workers``/``num_epochs`` fill in what a ``greendygnn`` spec leaves out. The key
    ``applies_to`` is read by the emulator (see :func:`default_congested_traffic`) and
    ignored here. Mapping keys may be strings (JSON/YAML) and are converted to int.
    """
    if spec is None or spec == "none":
        return NoCongestion()
    if isinstance(spec, str):
        if spec == "greendygnn":
            spec = {"kind": "greendygnn"}
        else:
            raise ValueError(f"unknown congestion spec {spec!r}")
    kind = spec.get("kind", "none")
    if kind == "none":
        return NoCongestion()
    if kind == "epochs":
        return EpochSchedule(
            spec["table"],
            period=spec.get("period"),
            start=spec.get("start", 0),
            clean_epochs=spec.get("clean_epochs", ()),
        )
    if kind == "time":
        segs = []
        for seg in spec["segments"]:
            if isinstance(seg, Mapping):
                segs.append((seg["start_s"], seg.get("delays_ms", {})))
            else:
                start, delays = seg
                segs.append((start, delays))
        return TimeSchedule(segs, period_s=spec.get("period_s"))
    if kind == "greendygnn":
        nw = spec.get("num_workers", num_workers)
        ne = spec.get("num_epochs", num_epochs)
        if nw is None or ne is None:
            raise ValueError("greendygnn congestion needs num_workers and num_epochs")
        return greendygnn_schedule(
            int(nw),
            int(ne),
            int(spec.get("seed", 0)),
            warmup_epochs=int(spec.get("warmup_epochs", GREENDYGNN_WARMUP_EPOCHS)),
            period=int(spec.get("period", GREENDYGNN_PERIOD)),
            delay_ms=tuple(spec.get("delay_ms", GREENDYGNN_DELAY_MS)),
            max_nodes=int(spec.get("max_nodes", GREENDYGNN_MAX_NODES)),
        )
    raise ValueError(f"unknown congestion kind {kind!r}")
