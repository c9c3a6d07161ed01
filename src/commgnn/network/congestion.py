"""Congestion schedules: extra one-way delay on emulated nodes, by epoch or by elapsed time.

A schedule says, at any moment, which *nodes* (machines) are congested and by how much
one-way delay. It is consumed by :class:`commgnn.network.netem.NetworkEmulator`, which adds it
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
  (see :meth:`commgnn.network.netem.NetworkEmulator.request_cost_s`): GreenDyGNN (§VI-A) injects
  "15–25 ms of additional one-way delay" with ``tc netem`` on the congested node, which raises
  an RPC's round-trip time by that delay once, not twice.

Delays in tables and specs are in **milliseconds** (as ``tc netem`` takes them); every method
returns **seconds**.

Kinds: ``none``, ``epochs`` (a table by epoch) and ``time`` (segments of elapsed time) are
built in; a system adds its own presets as kinds (:class:`CongestionKind`) through the
``commgnn.congestion`` entry-point group — GreenDyGNN's ``greendygnn`` and ``scenario``
(:mod:`commgnn.systems.greendygnn.congestion`). A kind says which traffic it delays by
default (its reach: :func:`default_congested_traffic`); the spec's ``applies_to`` overrides
it.
"""

from __future__ import annotations

import bisect
import functools
import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

__all__ = [
    "BUILT_IN",
    "CongestionKind",
    "CongestionSchedule",
    "EpochSchedule",
    "NoCongestion",
    "TimeSchedule",
    "congestion_from_spec",
    "congestion_kind",
    "default_congested_traffic",
    "reach_label",
]

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


#: The kinds every schedule spec may name without a registered kind.
BUILT_IN = ("none", "epochs", "time")
#: The entry-point group through which a package adds congestion kinds.
ENTRY_POINT_GROUP = "commgnn.congestion"


@dataclass(frozen=True)
class CongestionKind:
    """A named congestion preset: ``build(spec, num_workers, num_epochs)`` makes its
    schedule; ``reach``: the traffic classes it delays by default (None: all);
    ``silent_cause(spec, epochs)``: for a spec of it that delays nothing in an
    ``epochs``-epoch run, the ``key: value`` that keeps it silent and why;
    ``named_nodes(spec)``: the ``(key, machine)`` pairs its spec names (checked against
    the run's machines)."""

    build: Callable[[Mapping[str, Any], int | None, int | None], CongestionSchedule]
    reach: tuple[str, ...] | None = None
    silent_cause: Callable[[Mapping[str, Any], int], tuple[str, str]] | None = None
    named_nodes: Callable[[Mapping[str, Any]], list[tuple[str, int]]] = lambda spec: []


@functools.cache
def registered_kinds() -> dict[str, CongestionKind]:
    """Every congestion kind the installed packages add (entry points ``commgnn.congestion``:
    ``name = module:attribute``, a :class:`CongestionKind`)."""
    return {entry.name: entry.load() for entry in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def congestion_kind(name: str) -> CongestionKind:
    """The registered kind ``name`` (ValueError naming the known ones)."""
    kinds = registered_kinds()
    if name not in kinds:
        raise ValueError(f"unknown congestion kind {name!r}; known: "
                         f"{sorted([*BUILT_IN, *kinds])}")
    return kinds[name]


def default_congested_traffic(spec: Mapping[str, Any] | None) -> list[str] | None:
    """Traffic classes a congestion spec applies to: ``spec['applies_to']`` if given
    (``all`` or ``None``: every class), else its kind's reach (:class:`CongestionKind`:
    GreenDyGNN's kinds delay ``["fetch", "sampling"]``, the DGL RPC port's traffic, as its
    paper does) and ``None`` (all traffic) for the built-in kinds."""
    if not spec:
        return None
    if "applies_to" in spec:
        a = spec["applies_to"]
        if a is None or a == "all" or a == ["all"]:
            return None
        return [a] if isinstance(a, str) else [str(x) for x in a]
    kind = spec.get("kind", "none")
    if kind in BUILT_IN:
        return None
    reach = congestion_kind(kind).reach
    return None if reach is None else list(reach)


def reach_label(spec: Mapping[str, Any] | None) -> str:
    """The reach of a congestion spec in a word: ``all`` (every traffic class), or its
    classes sorted and joined by ``+`` (``fetch+sampling``: GreenDyGNN's kinds' default;
    see :func:`default_congested_traffic`). It does
    not say whether the schedule delays anything: a run summary's ``congestion_reach`` is
    ``none`` for a run without congestion."""
    traffic = default_congested_traffic(spec)
    return "all" if traffic is None else "+".join(sorted(set(traffic)))


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
        {kind: KIND, ...}   a registered kind (:func:`congestion_kind`), e.g. GreenDyGNN's
                            greendygnn and scenario (commgnn.systems.greendygnn.congestion)

    ``num_workers``/``num_epochs`` fill in what a registered kind's spec leaves out. The
    key
    ``applies_to`` is read by the emulator (see :func:`default_congested_traffic`) and
    ignored here. Mapping keys may be strings (JSON/YAML) and are converted to int.
    """
    if spec is None or spec == "none":
        return NoCongestion()
    if isinstance(spec, str):  # a kind's name alone: {kind: NAME}
        spec = {"kind": spec}
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
    return congestion_kind(kind).build(spec, num_workers, num_epochs)
