"""GreenDyGNN's congestion presets: the kinds ``greendygnn`` and ``scenario`` of
:func:`commgnn.network.congestion.congestion_from_spec` (registered through the
``commgnn.congestion`` entry points in ``pyproject.toml``).

GreenDyGNN's pattern (§VI-A, verbatim): "The pattern cycles through clean and congested
phases: epochs 0–2 run clean as a warmup, epochs 3–9 introduce 15–25 ms of additional one-way
delay on one or two nodes at a time, the pattern repeats every 7 epochs, and the final epoch
is forced clean." :func:`greendygnn_schedule` reproduces it deterministically from a seed.
In the paper (§V, §VI-A) the ``tc`` filter delays only the DGL RPC port, "leaving gradient
synchronization traffic on port 29500 unaffected"; that port carries DistDGL's sampling
requests as well as its feature pulls. Which traffic a schedule applies to is the
emulator's ``congested_traffic`` setting (the spec's ``applies_to``), and
:func:`default_congested_traffic` gives the paper's reach, ``["fetch", "sampling"]``, for the
``greendygnn`` and ``scenario`` kinds; :func:`reach_label` names a spec's reach in a word
(``all``, or the classes joined by ``+``: ``fetch+sampling``).

Named scenarios (``{kind: scenario, name: NAME}``, :data:`SCENARIOS`)
--------------------------------------------------------------------
GreenDyGNN §IV-C trains its policy on six congestion archetypes (no congestion, single-link
slow or fast, two-link symmetric or asymmetric, oscillating; severity, onset and duration
randomised); :func:`scenario_schedule` makes them reproducible presets (single-link slow vs
fast is one preset, ``single-link``, at two ``delay_ms`` severities; onset and duration are
``onset_epoch``/``duration_epochs``), plus ``greendygnn`` (the §VI-A pattern above,
restricted to non-coordinator nodes). Every scenario congests only
non-coordinator machines (nodes ``1..P-1``; node 0 hosts rank 0, the coordinator), starts
after a clean warm-up (``onset_epoch``, default 3), keeps the final epoch clean, applies to
the paper's reach by default (``fetch`` and ``sampling`` traffic: the DGL RPC port; set
``applies_to: all`` to congest the whole link, gradients, migrations, shuffles and
activations too), and goes through the emulator like any other schedule (so it is dilated
by ``time_dilation`` like every other delay).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from commgnn.network.congestion import CongestionKind, EpochSchedule

#: GreenDyGNN §VI-A: epochs 0–2 are a clean warm-up.
GREENDYGNN_WARMUP_EPOCHS = 3
#: GreenDyGNN §VI-A: the congested pattern (epochs 3–9) repeats every 7 epochs.
GREENDYGNN_PERIOD = 7
#: GreenDyGNN §VI-A: 15–25 ms of additional one-way delay.
GREENDYGNN_DELAY_MS = (15.0, 25.0)
#: GreenDyGNN §VI-A: "on one or two nodes at a time".
GREENDYGNN_MAX_NODES = 2


def _unit(seed: int, *parts: object) -> float:
    """A uniform number in [0, 1) from SHA-256 of the key: byte-stable across versions."""
    key = "|".join(["commgnn-congestion", str(int(seed)), *map(str, parts)]).encode()
    return int.from_bytes(hashlib.sha256(key).digest()[:8], "big") / 2.0**64


def _greendygnn_table(
    num_workers: int,
    num_epochs: int,
    seed: int,
    warmup_epochs: int,
    period: int,
    delay_ms: Sequence[float],
    max_nodes: int,
    exclude_nodes: Iterable[int],
    final_clean: bool,
) -> tuple[dict[int, dict[int, float]], dict[str, Any]]:
    """The table (ms) and resolved parameters of :func:`greendygnn_schedule`."""
    num_workers = int(num_workers)
    num_epochs = int(num_epochs)
    if num_workers < 1 or num_epochs < 0:
        raise ValueError("num_workers must be >= 1 and num_epochs >= 0")
    lo, hi = float(delay_ms[0]), float(delay_ms[1])
    if not 0 <= lo <= hi:
        raise ValueError(f"bad delay range {delay_ms}")
    if int(period) < 1 or int(warmup_epochs) < 0:
        raise ValueError("period must be >= 1 and warmup_epochs >= 0")
    excluded = sorted({int(n) for n in exclude_nodes})
    candidates = [w for w in range(num_workers) if w not in excluded]
    if not candidates:
        raise ValueError(f"greendygnn congestion: every one of the {num_workers} nodes is "
                         f"excluded ({excluded}); no node left to congest")
    max_nodes = max(1, min(int(max_nodes), len(candidates)))

    cycle: list[dict[int, float]] = []
    for k in range(int(period)):
        n = 1 + int(_unit(seed, k, "count") * max_nodes)
        order = sorted(candidates, key=lambda w, k=k: _unit(seed, k, "node", w))
        nodes = sorted(order[:n])
        delays = {}
        for w in nodes:
            ms = round(lo + (hi - lo) * _unit(seed, k, "delay", w), 1)
            delays[w] = min(max(ms, lo), hi)
        cycle.append(delays)

    table: dict[int, dict[int, float]] = {}
    for e in range(int(warmup_epochs), num_epochs):
        table[e] = dict(cycle[(e - int(warmup_epochs)) % int(period)])
    if num_epochs > 0 and final_clean:
        table.pop(num_epochs - 1, None)  # final epoch forced clean
    params: dict[str, Any] = {
        "num_workers": num_workers,
        "num_epochs": num_epochs,
        "seed": int(seed),
        "warmup_epochs": int(warmup_epochs),
        "period": int(period),
        "delay_ms": [lo, hi],
        "max_nodes": max_nodes,
    }
    # Only non-default extras, so the default pattern's spec is unchanged.
    if excluded:
        params["exclude_nodes"] = excluded
    if not final_clean:
        params["final_clean"] = False
    return table, params


def greendygnn_schedule(
    num_workers: int,
    num_epochs: int,
    seed: int = 0,
    *,
    warmup_epochs: int = GREENDYGNN_WARMUP_EPOCHS,
    period: int = GREENDYGNN_PERIOD,
    delay_ms: tuple[float, float] = GREENDYGNN_DELAY_MS,
    max_nodes: int = GREENDYGNN_MAX_NODES,
    exclude_nodes: Iterable[int] = (),
    final_clean: bool = True,
) -> GreenDyGNNSchedule:
    """GreenDyGNN §VI-A's congestion pattern, drawn deterministically from ``seed``.

    - epochs ``0..warmup_epochs-1`` (0–2) are clean;
    - a cycle of ``period`` (7) congested epochs is drawn once: for each phase ``k`` of the
      cycle, ``n_k ∈ {1, ..., max_nodes}`` (1 or 2, capped at the number of candidate
      nodes) distinct nodes, each with its own delay uniform in ``delay_ms`` (15–25 ms),
      rounded to 0.1 ms;
    - epoch ``e >= warmup_epochs`` uses phase ``(e - warmup_epochs) % period`` (so epochs
      3–9 are the first cycle, 10–16 repeat it, ...);
    - the final epoch ``num_epochs - 1`` is forced clean (unless ``final_clean=False``).

    The candidate nodes are ``0..num_workers-1`` minus ``exclude_nodes``; pass
    ``exclude_nodes=(0,)`` to keep the coordinator (rank 0) clean, as the ``scenario:
    greendygnn`` preset does. With no exclusion the draw is exactly the historical one.

    Every draw is a SHA-256 hash of ``(seed, phase, what)``: same arguments ⇒ same schedule
    on every platform and Python/numpy version.
    """
    table, params = _greendygnn_table(num_workers, num_epochs, seed, warmup_epochs, period,
                                      delay_ms, max_nodes, exclude_nodes, final_clean)
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


#: Named congestion presets (``{kind: scenario, name: NAME}``): GreenDyGNN §IV-C's
#: domain-randomisation archetypes plus its §VI-A evaluation pattern.
SCENARIOS = (
    "clean",
    "single-link",
    "two-link-symmetric",
    "two-link-asymmetric",
    "oscillating",
    "greendygnn",
)
#: The coordinator (rank 0, node 0) is never congested by a scenario.
COORDINATOR_NODE = 0
#: Default first congested epoch: GreenDyGNN's clean warm-up is epochs 0–2.
SCENARIO_ONSET_EPOCH = GREENDYGNN_WARMUP_EPOCHS
#: Default one-way delay (ms) of the fixed-delay scenarios (the middle of 15–25 ms).
SCENARIO_DELAY_MS = 20.0
#: Default ``period_epochs`` of the oscillating scenario (on 2 epochs, off 2 epochs).
SCENARIO_PERIOD_EPOCHS = 2
#: Keys a ``{kind: scenario}`` spec may carry.
SCENARIO_KEYS = frozenset({
    "kind", "name", "delay_ms", "onset_epoch", "duration_epochs", "period_epochs",
    "final_clean", "seed", "nodes", "applies_to", "num_workers", "num_epochs",
})
# How many congested nodes each fixed scenario needs (and the default ones).
_SCENARIO_NODES = {
    "single-link": (1,),
    "two-link-symmetric": (1, 2),
    "two-link-asymmetric": (1, 2),
    "oscillating": (1,),
}


def scenario_names() -> tuple[str, ...]:
    """The congestion scenario presets (the schema's ``congestion.name`` enum)."""
    return SCENARIOS


def _scenario_delay(delay_ms: Any, default: Any) -> float | list[float]:
    d = default if delay_ms is None else delay_ms
    if isinstance(d, (int, float)) and not isinstance(d, bool):
        d = float(d)
        if not math.isfinite(d) or d < 0:
            raise ValueError(f"scenario delay_ms must be a finite value >= 0, got {delay_ms!r}")
        return d
    if isinstance(d, Sequence) and not isinstance(d, str) and len(d) == 2:
        lo, hi = float(d[0]), float(d[1])
        if not (math.isfinite(lo) and math.isfinite(hi) and 0 <= lo <= hi):
            raise ValueError(f"scenario delay_ms range must be 0 <= lo <= hi, got {delay_ms!r}")
        return [lo, hi]
    raise ValueError(f"scenario delay_ms must be a number or [lo, hi], got {delay_ms!r}")


def scenario_schedule(
    name: str,
    num_workers: int,
    num_epochs: int,
    *,
    delay_ms: float | Sequence[float] | None = None,
    onset_epoch: int = SCENARIO_ONSET_EPOCH,
    duration_epochs: int | None = None,
    period_epochs: int | None = None,
    final_clean: bool = True,
    seed: int = 0,
    nodes: Sequence[int] | None = None,
) -> ScenarioSchedule:
    """A named congestion preset as a per-epoch table over ``num_workers`` nodes.

    Only non-coordinator nodes (``1..num_workers-1``; node 0 hosts rank 0) are ever
    congested. A scenario is *active* in epochs ``onset_epoch <= e < onset_epoch +
    duration_epochs`` (``duration_epochs=None``: to the end of the run); the final epoch is
    clean when ``final_clean`` (GreenDyGNN forces it clean). Names:

    - ``clean``: no congestion (the control);
    - ``single-link``: one node (``nodes``, default ``[1]``) with ``delay_ms`` (20);
    - ``two-link-symmetric``: two nodes (default ``[1, 2]``), both with the same delay;
    - ``two-link-asymmetric``: two nodes, the first with ``d`` and the second with
      ``d / 2`` (the same draw halved, so the pair is always 2:1);
    - ``oscillating``: one node (default ``[1]``), congested ``period_epochs`` (2) epochs,
      clean ``period_epochs`` epochs, repeating from the onset;
    - ``greendygnn``: GreenDyGNN §VI-A's pattern (:func:`greendygnn_schedule`) with warm-up
      ``onset_epoch``, cycle length ``period_epochs`` (default 7), ``delay_ms`` (default
      ``[15, 25]``), on one or two nodes at a time drawn from ``nodes`` (default every
      non-coordinator node).

    ``delay_ms`` is a number, or a ``[lo, hi]`` range; for the fixed scenarios a range is
    drawn (uniform, rounded to 0.1 ms, from ``seed``) once per block of ``period_epochs``
    epochs counted from the onset, so the delay changes every few epochs (one draw per
    block, shared by the scenario's nodes). Same arguments ⇒ same table on every platform.
    """
    if name not in SCENARIOS:
        raise ValueError(f"unknown congestion scenario {name!r}; have {list(SCENARIOS)}")
    num_workers = int(num_workers)
    num_epochs = int(num_epochs)
    if num_workers < 1 or num_epochs < 0:
        raise ValueError("num_workers must be >= 1 and num_epochs >= 0")
    onset_epoch = int(onset_epoch)
    if onset_epoch < 0:
        raise ValueError(f"scenario onset_epoch must be >= 0, got {onset_epoch}")
    if duration_epochs is not None:
        duration_epochs = int(duration_epochs)
        if duration_epochs < 1:
            raise ValueError(f"scenario duration_epochs must be >= 1, got {duration_epochs}")
    default_period = GREENDYGNN_PERIOD if name == "greendygnn" else SCENARIO_PERIOD_EPOCHS
    period = default_period if period_epochs is None else int(period_epochs)
    if period < 1:
        raise ValueError(f"scenario period_epochs must be >= 1, got {period}")
    seed = int(seed)
    final_clean = bool(final_clean)
    default_delay = list(GREENDYGNN_DELAY_MS) if name == "greendygnn" else SCENARIO_DELAY_MS
    delay = _scenario_delay(delay_ms, default_delay)

    workers = range(1, num_workers)  # the non-coordinator nodes
    if nodes is not None:
        picked = [int(n) for n in nodes]
        bad = [n for n in picked if n not in workers]
        if bad:
            raise ValueError(f"scenario {name!r}: nodes {bad} are not non-coordinator nodes "
                             f"1..{num_workers - 1} (node 0 is the coordinator)")
        if len(set(picked)) != len(picked):
            raise ValueError(f"scenario {name!r}: repeated nodes in {picked}")
    if name == "clean":
        if nodes:
            raise ValueError("scenario 'clean' takes no nodes")
        picked = []
    elif name == "greendygnn":
        picked = list(workers) if nodes is None else picked
        if not picked:
            raise ValueError(f"scenario 'greendygnn' needs a non-coordinator node; "
                             f"have {num_workers} node(s)")
    else:
        want = _SCENARIO_NODES[name]
        if nodes is None:
            picked = list(want)
            if picked[-1] >= num_workers:
                raise ValueError(f"scenario {name!r} needs {len(want)} non-coordinator "
                                 f"node(s); have {num_workers - 1}")
        elif len(picked) != len(want):
            raise ValueError(f"scenario {name!r} congests {len(want)} node(s); got nodes "
                             f"{picked}")

    end = num_epochs if duration_epochs is None else min(num_epochs,
                                                         onset_epoch + duration_epochs)
    table: dict[int, dict[int, float]] = {}
    if name == "greendygnn":
        lo_hi = delay if isinstance(delay, list) else [delay, delay]
        full, _ = _greendygnn_table(
            num_workers, num_epochs, seed, onset_epoch, period, lo_hi, GREENDYGNN_MAX_NODES,
            [w for w in range(num_workers) if w not in picked], final_clean)
        table = {e: d for e, d in full.items() if e < end}
    elif picked:
        for e in range(onset_epoch, end):
            block = (e - onset_epoch) // period
            if name == "oscillating" and block % 2 == 1:
                continue  # the off half of the oscillation
            if isinstance(delay, list):
                lo, hi = delay
                d = min(max(round(lo + (hi - lo) * _unit(seed, "scenario", block, "delay"),
                                  1), lo), hi)
            else:
                d = delay
            if name == "two-link-asymmetric":
                table[e] = {picked[0]: d, picked[1]: d / 2}
            else:
                table[e] = {n: d for n in picked}
        if num_epochs > 0 and final_clean:
            table.pop(num_epochs - 1, None)

    params: dict[str, Any] = {
        "name": name,
        "num_workers": num_workers,
        "num_epochs": num_epochs,
        "seed": seed,
        "delay_ms": delay,
        "onset_epoch": onset_epoch,
        "period_epochs": period,
        "final_clean": final_clean,
        "nodes": picked,
    }
    if duration_epochs is not None:
        params["duration_epochs"] = duration_epochs
    return ScenarioSchedule(table, params)


class ScenarioSchedule(EpochSchedule):
    """A materialised :func:`scenario_schedule` (an :class:`EpochSchedule` that remembers
    the preset and parameters it was built from)."""

    kind = "scenario"

    def __init__(self, table: Mapping[Any, Mapping[Any, float]], params: dict[str, Any]):
        super().__init__(table)
        self.params = dict(params)

    @property
    def name(self) -> str:
        return str(self.params["name"])

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "scenario", **self.params}

    def table_spec(self) -> dict[str, Any]:
        """The same schedule as an explicit ``epochs`` spec."""
        return EpochSchedule.to_dict(self)


#: GreenDyGNN's reach (§V, §VI-A): the ``tc`` filter on the DGL RPC port delays DistDGL's
#: feature pulls and its sampling requests, not gradient synchronisation (port 29500).
PAPER_REACH = ("fetch", "sampling")


def _build_greendygnn(spec: Mapping[str, Any], num_workers: int | None,
                      num_epochs: int | None) -> GreenDyGNNSchedule:
    """``{kind: greendygnn, seed?: 0, num_epochs?: int, num_workers?: int,
    warmup_epochs?: 3, period?: 7, delay_ms?: [15, 25], max_nodes?: 2,
    exclude_nodes?: [int], final_clean?: true}``"""
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
        exclude_nodes=spec.get("exclude_nodes", ()),
        final_clean=bool(spec.get("final_clean", True)),
    )


def _build_scenario(spec: Mapping[str, Any], num_workers: int | None,
                    num_epochs: int | None) -> ScenarioSchedule:
    """``{kind: scenario, name: NAME, delay_ms?: float | [lo, hi], onset_epoch?: 3,
    duration_epochs?: int, period_epochs?: int, final_clean?: true, seed?: 0,
    nodes?: [int], num_workers?: int, num_epochs?: int}``; names: :data:`SCENARIOS`."""
    unknown = sorted(set(spec) - SCENARIO_KEYS)
    if unknown:
        raise ValueError(f"unknown scenario congestion keys {unknown}; "
                         f"have {sorted(SCENARIO_KEYS)}")
    if "name" not in spec:
        raise ValueError(f"scenario congestion needs a name, one of {list(SCENARIOS)}")
    nw = spec.get("num_workers", num_workers)
    ne = spec.get("num_epochs", num_epochs)
    if nw is None or ne is None:
        raise ValueError("scenario congestion needs num_workers and num_epochs")
    return scenario_schedule(
        str(spec["name"]),
        int(nw),
        int(ne),
        delay_ms=spec.get("delay_ms"),
        onset_epoch=int(spec.get("onset_epoch", SCENARIO_ONSET_EPOCH)),
        duration_epochs=spec.get("duration_epochs"),
        period_epochs=spec.get("period_epochs"),
        final_clean=bool(spec.get("final_clean", True)),
        seed=int(spec.get("seed", 0)),
        nodes=spec.get("nodes"),
    )


def _silent_cause(first_key: str, default_first: int):
    """The ``silent_cause`` of a kind whose first congested epoch is ``first_key``."""

    def cause(spec: Mapping[str, Any], epochs: int) -> tuple[str, str]:
        delay = spec.get("delay_ms")
        if delay is not None and not any(
                float(d) > 0 for d in (delay if isinstance(delay, list) else [delay])):
            return f"delay_ms: {delay!r}", ": no delay"
        first = spec.get(first_key, default_first)
        key = f"{first_key}: {first!r}" + ("" if first_key in spec else " (the default)")
        if first == epochs - 1 and spec.get("final_clean", True):
            return key, (": its first congested epoch is the final one, which final_clean "
                         "keeps clean")
        return key, ""

    return cause


def _listed_nodes(key: str):
    """The ``named_nodes`` of a kind whose spec lists machines under ``key``."""
    return lambda spec: [(f"{key}[{i}]", int(n)) for i, n in enumerate(spec.get(key) or [])]


#: ``{kind: greendygnn}``: §VI-A's evaluation pattern, on the paper's reach.
GREENDYGNN = CongestionKind(build=_build_greendygnn, reach=PAPER_REACH,
                            silent_cause=_silent_cause("warmup_epochs",
                                                       GREENDYGNN_WARMUP_EPOCHS),
                            named_nodes=_listed_nodes("exclude_nodes"))
#: ``{kind: scenario, name: NAME}``: §IV-C's archetypes (and §VI-A's), on the paper's reach.
SCENARIO = CongestionKind(build=_build_scenario, reach=PAPER_REACH,
                          silent_cause=_silent_cause("onset_epoch", SCENARIO_ONSET_EPOCH),
                          named_nodes=_listed_nodes("nodes"))
