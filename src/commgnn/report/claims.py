"""The claims ledger: each headline claim of the four papers, our value measured from the
figure tables the pipeline built, and a verdict.

A :class:`Claim` names the figure whose CSV (``results/figures/<figure>.csv``, written by
the ``system_figure`` or ``compare`` rule) measures it, and a ``measure`` function that
reads the value from that table: a :class:`Measured` (our value, its spread over seeds or
cells, the paper's value for the same cells, the rows it came from) or
:class:`NotMeasured` (no such rows: why). Verdicts:

- ``reproduced``: our value inside the claim's band around the paper's value;
- ``direction``: outside the band, on the paper's side of the claim's :class:`Direction`
  (e.g. a speedup > 1 where the paper's is 2.5: the effect holds, not its size) by more
  than the noise floor — twice the seeds' spread (``Measured.noise``: pooled over the
  cells from the figure's per-cell standard deviations) and at least the direction's
  minimum effect (2 % by default; the minimum alone with one seed or no recorded spread)
  — and with the arithmetic and the geometric mean of per-cell ratios on the same side;
- ``not reproduced``: on the other side, inside the noise floor, or with the two means
  apart (a parity claim has no direction: outside its tolerance is not reproduced);
- ``by construction``: the claim's value cannot come out otherwise on this substrate
  (``Claim.by_construction`` says why: e.g. RapidGNN trains on the very batches DGL-METIS
  does, so their accuracy gap is 0): shown, never counted as evidence;
- ``not comparable``: a claim on time or modelled energy whose runs are on a clock that
  cannot judge it (:mod:`commgnn.train.clocks`): undilated CPU runs (raw CPU time is
  compute-bound here, so a communication speedup says nothing of a GPU cluster) or GPUs
  with no network at all. Dilated runs, and runs computing on a GPU over the emulated
  network at f = 1 or over a real network, are judged alike;
- ``not applicable``: the runs behind the figure do not include what the claim needs (the
  figure said so by raising :class:`commgnn.core.errors.NotApplicable`, and ``commgnn figure``
  wrote its CSV as the reason: :mod:`commgnn.report.figure_tables`);
- ``not measured``: its figure was not built (its systems did not run), or has no rows
  for it.

Averages are arithmetic means of per-cell values, as the papers' are (RapidGNN Table 2's
2.46 is the arithmetic mean of its cells); for ratios the geometric mean is reported
beside it (``geomean``).

Bands (see each claim): a single paper value X is reproduced within ``×1.33`` (X/1.33 to
1.33·X: the substrate — synthetic stand-in graphs, CPU compute, an emulated network with
an estimated dilation — moves compute-to-communication proportions by about that much on
its own); a paper range is used as printed.

Every row says which clock its runs were on (``clock``: the clocks of the runs behind it),
which traffic their congestion delayed (``reach``: the runs' ``congestion_reach``, e.g.
``none, fetch+sampling``; ``unknown`` for congested runs recorded before the reach was)
and, for a claim on energy, where the energy came from (``energy``: the target-machine
model, or the runs' meters). A system whose figure label names a setting beside its method
(``BGL (no cache)``, ``BGL (FIFO 20,000 rows)``) is named with it in the row's workload.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from commgnn.core.testbed import EVALUATION_SAMPLE, TESTBED_SEPARATOR, apart_from_energy
from commgnn.report.figure_tables import not_applicable_reason, read_figure_table
from commgnn.report.labels import reach_column
from commgnn.train.clocks import DILATED, JUDGED, RAW_CPU

VERDICTS = ("reproduced", "direction", "not reproduced", "by construction", "not comparable",
            "not applicable", "not measured")
#: The smallest effect a direction counts (a fraction: 2 % of a ratio's 1, 2 points of a
#: fraction); claims in percent units declare theirs (2.0).
MIN_EFFECT = 0.02
#: The ledger's columns, in order.
COLUMNS = ("id", "paper", "claim", "paper_value", "paper_x", "workload", "our_value",
           "our_spread", "geomean", "n", "band_low", "band_high", "verdict", "reason",
           "clock", "reach", "energy", "provenance", "rule", "output")
#: Where a claim's energy comes from (``Claim.energy``).
TARGET_ENERGY, METERED_ENERGY = "target", "meter"


class NotMeasured(Exception):
    """The figure's table has no rows for the claim (the message says which)."""


@dataclass(frozen=True)
class Measured:
    """Our value, its spread (std over seeds or cells; NaN if one), the paper's value for
    the same cells (``paper_x``: what the band is around), and the rows behind it.
    ``holds``: whether the effect holds, where that takes more than the value (e.g. a
    scaling efficiency above the baseline's); None: the claim's ``direction`` decides.
    ``band``: the band for these cells, where the rule sets its own (e.g. the paper's
    printed range when no paper value matches our cells); None: the claim's.
    ``unmet``: a condition beyond the band our rows fail (e.g. "slower in a cell"): the
    value cannot count as reproduced, whatever the band says. ``geomean``: for a mean of
    per-cell ratios, their geometric mean (NaN otherwise). ``noise``: the seeds' spread of
    the value (:func:`seed_noise`), which a direction must clear twice over; ``spread`` is
    the spread of what was averaged (seeds or cells, which may differ by design)."""

    value: float
    spread: float
    paper_x: float
    rows: pd.DataFrame
    note: str = ""
    holds: bool | None = None
    band: tuple[float, float] | None = None
    unmet: str = ""
    geomean: float = math.nan  # the geometric mean of the per-cell ratios, where ratios
    noise: float = math.nan  # the seeds' spread of the value (NaN: not recorded)
    seeds: int | None = None  # the fewest seeds behind a cell, where known


Band = Callable[[float], tuple[float, float]]


@dataclass(frozen=True)
class Direction:
    """The side of ``null`` (no effect) the paper's effect lies on: above it (a speedup
    over 1, a saving over 0) or below it. An effect counts only when it clears the noise
    floor: ``min_effect`` (in the value's units) and twice the seeds' spread (the minimum
    alone where that is unknown: one seed, or none recorded)."""

    above: bool
    null: float
    min_effect: float = MIN_EFFECT

    def holds(self, value: float) -> bool:
        return value > self.null if self.above else value < self.null

    def effect(self, value: float) -> float:
        """How far past ``null`` the value lies on the paper's side (negative: the other)."""
        return value - self.null if self.above else self.null - value

    def floor(self, noise: float) -> float:
        return self.min_effect if math.isnan(noise) else max(self.min_effect, 2 * noise)

    def __str__(self) -> str:
        return f"{'>' if self.above else '<'} {self.null:g}"


def above(null: float, min_effect: float = MIN_EFFECT) -> Direction:
    """The paper's effect: our value above ``null``."""
    return Direction(True, null, min_effect)


def below(null: float, min_effect: float = MIN_EFFECT) -> Direction:
    """The paper's effect: our value below ``null``."""
    return Direction(False, null, min_effect)


def fewest_seeds(rows: pd.DataFrame) -> int | None:
    """The fewest seeds behind a row (its ``seeds`` column), None where not recorded."""
    seeds = pd.to_numeric(rows["seeds"], errors="coerce") if "seeds" in rows else None
    return None if seeds is None or seeds.isna().all() else int(seeds.min())


def seed_noise(rows: pd.DataFrame, column: str) -> tuple[float, int | None]:
    """The seeds' spread of ``column`` pooled over ``rows``' cells (the root mean square of
    its per-cell standard deviation: ``<column>_std``, or ``<name>_std_<unit>`` for
    ``<name>_<unit>``; NaN where none is recorded) and the fewest seeds of a cell."""
    name, _, unit = column.rpartition("_")
    seeds = fewest_seeds(rows)
    for std in (f"{column}_std", f"{name}_std_{unit}" if name else ""):
        if std and std in rows:
            known = pd.to_numeric(rows[std], errors="coerce").dropna()
            if not known.empty:
                return float(math.sqrt((known ** 2).mean())), seeds
    return math.nan, seeds


def ratio_means(values: pd.Series) -> tuple[float, float, float]:
    """Arithmetic mean, standard deviation (NaN for one) and geometric mean (NaN where a
    ratio is not positive) of per-cell ratios."""
    mean, spread = mean_spread(values)
    known = pd.to_numeric(values, errors="coerce").dropna()
    geomean = math.exp(float(known.map(math.log).mean())) if (known > 0).all() else math.nan
    return mean, spread, geomean


def ratio_band(factor: float = 1.33) -> Band:
    """X / factor to X · factor (a ratio claim's magnitude)."""
    return lambda x: (x / factor, x * factor)


def fixed_band(low: float, high: float) -> Band:
    """The paper's range as printed, whatever X."""
    return lambda _x: (low, high)


def relative_band(fraction: float = 0.25) -> Band:
    """X ± fraction · |X| (a percentage claim)."""
    return lambda x: (x - fraction * abs(x), x + fraction * abs(x))


def tolerance(limit: float) -> Band:
    """|value| ≤ limit (a parity claim)."""
    return lambda _x: (-limit, limit)


@dataclass(frozen=True)
class Claim:
    """One headline claim. ``dilated``: a claim on times or modelled energy, comparable
    only when every run of ``systems`` (base systems) in the runs table ran on a judged
    clock (:data:`commgnn.train.clocks.JUDGED`). ``direction``: the side a value outside
    the band must lie on, past the noise floor, to count as the same effect (None: a
    parity claim, or one whose sign cannot come out otherwise). ``energy``: a claim on
    energy read from the target-machine model (:data:`TARGET_ENERGY`) or from the runs'
    meters (:data:`METERED_ENERGY`); "" for any other claim, whose runs pool across
    energy models (:func:`commgnn.core.testbed.apart_from_energy`). ``by_construction``: why
    the value cannot come out otherwise on this substrate ("": it can). ``accuracy``: a
    claim comparing test accuracies of runs on different partitionings, judged only on
    recorded runs scored on one sample of each split (testbed "evaluation v2",
    :data:`commgnn.core.testbed.EVALUATION_SAMPLE`; see :func:`scored_apart`)."""

    id: str
    paper: str
    claim: str
    paper_value: str
    figure: str
    measure: Callable[[pd.DataFrame], Measured]
    band: Band
    direction: Direction | None
    systems: tuple[str, ...] = ()
    dilated: bool = True
    where: str = ""  # where the paper states it
    notes: tuple[str, ...] = field(default_factory=tuple)
    energy: str = ""
    by_construction: str = ""
    accuracy: bool = False


def mean_spread(values: pd.Series) -> tuple[float, float]:
    """Mean and standard deviation (NaN for fewer than two) of the known values."""
    values = pd.to_numeric(values, errors="coerce").dropna()
    if values.empty:
        raise NotMeasured("no values")
    return float(values.mean()), float(values.std()) if len(values) > 1 else math.nan


def paper_name(name: str, names: dict[str, str]) -> str | None:
    """The paper's name (``names``' value) of the dataset ``name``: its entry, or the entry
    of the stand-in ``name`` is a scaled copy of (``products-like-10``: the key, a dash and
    a suffix; the longest key first); None for any other dataset."""
    name = str(name)
    for key in sorted(names, key=len, reverse=True):
        if name == key or name.startswith(f"{key}-"):
            return names[key]
    return None


def select(table: pd.DataFrame, what: str, **equal) -> pd.DataFrame:
    """The rows whose columns equal ``equal`` (a tuple: any of); NotMeasured naming
    ``what`` when none."""
    rows = table
    for column, value in equal.items():
        if column not in rows:
            raise NotMeasured(f"no {column!r} column")
        allowed = value if isinstance(value, tuple) else (value,)
        rows = rows[rows[column].isin(allowed)]
    if rows.empty:
        raise NotMeasured(f"no {what} rows")
    return rows


def workload(rows: pd.DataFrame) -> str:
    """Where our value comes from, from the columns the rows have."""
    parts = []
    for column, name in (("dataset", ""), ("model", ""), ("layers", "layers "),
                         ("workers", "workers "), ("batch_size", "batch "), ("network", "")):
        if column in rows:
            values = sorted({_text(v) for v in rows[column].dropna()})
            if values:
                parts.append(name + "/".join(values))
    if "seeds" in rows:
        parts.append(f"seeds {int(pd.to_numeric(rows['seeds'], errors='coerce').min())}")
    named = settings(rows)
    if named:
        parts.append(", ".join(named))
    return " · ".join(parts)


def settings(rows: pd.DataFrame) -> list[str]:
    """The labels among ``rows`` that name a setting beside their method (``label`` is
    ``<method> (<setting>)``: ``BGL (no cache)``, ``BGL (FIFO 20,000 rows)``)."""
    if "label" not in rows or "method" not in rows:
        return []
    return sorted({label for method, label in zip(rows["method"], rows["label"], strict=True)
                   if isinstance(method, str) and isinstance(label, str)
                   and label.startswith(f"{method} (")})


def _text(value) -> str:
    """A cell value as text (a whole float without its ``.0``)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _runs_behind(runs: pd.DataFrame | None, systems: tuple[str, ...],
                 rows: pd.DataFrame) -> pd.DataFrame | None:
    """The runs of ``systems`` on the measured rows' datasets and networks (None: no such
    runs to tell). Rows that name their dataset or network otherwise than the runs do (a
    paper's name, an average row) narrow nothing: all the systems' runs count then."""
    if runs is None or "time_dilation" not in runs:
        return None
    mine = runs[runs["base_system"].isin(systems)] if systems else runs
    for column in ("dataset", "network"):
        if column in rows and column in mine:
            narrowed = mine[mine[column].isin(set(rows[column].dropna()))]
            mine = narrowed if not narrowed.empty else mine
    return None if mine.empty else mine


def clocks_of(runs: pd.DataFrame) -> list[str]:
    """The clocks the runs were on (a runs table from before the ``clock`` column: by
    dilation alone)."""
    if "clock" in runs:
        known = runs["clock"].dropna()
        if len(known) == len(runs):
            return sorted(set(known))
    dilation = pd.to_numeric(runs["time_dilation"], errors="coerce")
    return sorted({DILATED if f > 1 else RAW_CPU for f in dilation})


def reaches_of(runs: pd.DataFrame | None) -> list[str]:
    """Which traffic the runs' congestion delayed (``congestion_reach``: ``none`` for clean
    runs, ``all``, ``fetch+sampling``…; ``unknown`` for a congested run of a runs table
    from before the column)."""
    return [] if runs is None else sorted({str(r) for r in reach_column(runs)})


def _energy_source(claim: Claim, runs: pd.DataFrame | None) -> str:
    """Where the claim's energy came from, in words ("" for a claim not on energy)."""
    if claim.energy == TARGET_ENERGY:
        return "modelled: target-machine model"
    if claim.energy != METERED_ENERGY:
        return ""
    meters = sorted(set(runs["energy_meter"].dropna())) if (
        runs is not None and "energy_meter" in runs) else []
    kind = "modelled" if not meters or any("modelled" in m for m in meters) else "metered"
    return f"{kind}: {', '.join(meters) or 'no meter recorded'}"


def _provenance(runs: pd.DataFrame | None) -> list[str]:
    """The testbeds the runs were made on (``testbed`` column; "unrecorded" where absent)."""
    if runs is None:
        return []
    if "testbed" not in runs:
        return ["unrecorded"]
    return sorted({str(t) if isinstance(t, str) and t else "unrecorded"
                   for t in runs["testbed"]})


def scored_apart(runs: pd.DataFrame | None) -> str:
    """Why the accuracies of ``runs`` may have been scored on different nodes ("" when
    not): runs on several partitionings of which some predate one evaluation sample for
    all (a testbed without :data:`EVALUATION_SAMPLE`: each worker sampled the nodes its
    own partition owns), or runs not recorded at all (nothing tells)."""
    if runs is None:
        return (f"no runs recorded behind it, so nothing tells whether they were scored on "
                f"one sample ({EVALUATION_SAMPLE})")
    parts = sorted({str(p) for p in runs["partitioning"].dropna()}) \
        if "partitioning" in runs else []
    testbeds = runs["testbed"] if "testbed" in runs else pd.Series([""] * len(runs))
    if len(parts) == 1 or testbeds.map(lambda t: isinstance(t, str)
                                       and EVALUATION_SAMPLE in t).all():
        return ""
    where = f"on {', '.join(parts)}" if parts else "on unrecorded partitionings"
    return (f"accuracies of runs {where} scored on each partition's own sample "
            f"(before {EVALUATION_SAMPLE})")


def judge(claim: Claim, tables: dict[str, pd.DataFrame], runs: pd.DataFrame | None,
          outputs: dict[str, str], not_applicable: dict[str, str] | None = None) -> dict:
    """The claim's ledger row. ``not_applicable``: figures whose runs lack what they need,
    with why (:class:`commgnn.core.errors.NotApplicable`)."""
    row = {"id": claim.id, "paper": claim.paper, "claim": claim.claim,
           "paper_value": claim.paper_value, "paper_x": math.nan, "workload": "",
           "clock": "", "reach": "", "energy": "", "provenance": "", "geomean": math.nan,
           "our_value": math.nan, "our_spread": math.nan, "n": 0, "band_low": math.nan,
           "band_high": math.nan, "rule": "compare" if claim.figure == "compare"
           else "system_figure", "output": outputs.get(claim.figure,
                                                       f"figures/{claim.figure}.csv")}
    if claim.figure in (not_applicable or {}):
        return {**row, "verdict": "not applicable",
                "reason": f"{claim.figure}: {not_applicable[claim.figure]}"}
    if claim.figure not in tables:
        return {**row, "verdict": "not measured",
                "reason": f"{claim.figure} was not built: its systems did not run"}
    if tables[claim.figure].empty:
        return {**row, "verdict": "not measured", "reason": f"{claim.figure} has no rows"}
    try:
        measured = claim.measure(tables[claim.figure])
    except NotMeasured as exc:
        return {**row, "verdict": "not measured", "reason": f"{claim.figure}: {exc}"}
    low, high = measured.band if measured.band is not None else claim.band(measured.paper_x)
    value = measured.value
    row.update(paper_x=measured.paper_x, workload=workload(measured.rows), our_value=value,
               our_spread=measured.spread, geomean=measured.geomean, n=len(measured.rows),
               band_low=low, band_high=high)
    note = "".join(f"; {text}" for text in (measured.unmet, measured.note) if text)
    behind = _runs_behind(runs, claim.systems, measured.rows)
    clocks = clocks_of(behind) if behind is not None else []
    testbeds = _provenance(behind)
    row.update(clock=", ".join(clocks), reach=", ".join(reaches_of(behind)),
               energy=_energy_source(claim, behind),
               provenance=TESTBED_SEPARATOR.join(testbeds))
    pooled = testbeds if claim.energy else sorted({apart_from_energy(t) for t in testbeds})
    if len(pooled) > 1:
        return {**row, "verdict": "not comparable",
                "reason": f"runs of {len(pooled)} testbeds pooled: judge each apart{note}"}
    apart = scored_apart(behind) if claim.accuracy else ""
    if apart:
        return {**row, "verdict": "not comparable", "reason": f"{apart}{note}"}
    unjudged = [c for c in clocks if c not in JUDGED]
    if claim.dilated and unjudged:
        why = ("raw CPU times are compute-bound here" if RAW_CPU in unjudged else
               "transfers cost nothing there")
        return {**row, "verdict": "not comparable",
                "reason": f"runs on the {' and '.join(unjudged)} clock (undilated): "
                          f"{why}{note}"}
    if math.isnan(value):
        return {**row, "verdict": "not measured", "reason": f"no value{note}"}
    if claim.by_construction:
        return {**row, "verdict": "by construction",
                "reason": f"{value:.4g}: {claim.by_construction}{note}"}
    span = f"[{low:.4g}, {high:.4g}]"
    if low <= value <= high and not measured.unmet:
        return {**row, "verdict": "reproduced", "reason": f"{value:.4g} in {span}{note}"}
    where = f"{value:.4g} {'in' if low <= value <= high else 'outside'} {span}"
    direction = claim.direction
    holds = measured.holds if measured.holds is not None else (
        direction is not None and direction.holds(value))
    if not holds:
        return {**row, "verdict": "not reproduced", "reason": f"{where}{note}"}
    if direction is not None:
        floor = direction.floor(measured.noise)
        if not math.isnan(measured.noise):
            basis = f"max({direction.min_effect:g}, 2 × the seeds' spread {measured.noise:.3g})"
        elif (measured.seeds if measured.seeds is not None else
              fewest_seeds(measured.rows)) == 1:
            basis = "one seed: the minimum effect alone"
        else:
            basis = "no seed spread recorded: the minimum effect alone"
        if direction.effect(value) < floor:
            return {**row, "verdict": "not reproduced",
                    "reason": f"{where}, same direction within the noise floor: effect "
                              f"{direction.effect(value):.3g} < {floor:.3g} ({basis}){note}"}
        geomean = measured.geomean
        if not math.isnan(geomean) and direction.holds(geomean) != direction.holds(value):
            return {**row, "verdict": "not reproduced",
                    "reason": f"{where}; the arithmetic mean {value:.4g} and the geometric "
                              f"mean {geomean:.4g} disagree on the direction ({direction})"
                              f"{note}"}
    return {**row, "verdict": "direction", "reason": f"{where}, same direction{note}"}


def ledger(claims: list[Claim], inputs: list[Path],
           not_applicable: dict[str, str] | None = None) -> pd.DataFrame:
    """Every claim's row, from the figure CSVs and the runs table among ``inputs`` (each
    named by its file: ``<figure>.csv``, and the runs table ``runs.csv`` or
    ``<anything>_runs.csv``); ``not_applicable``: figures that said their runs lack what
    they need, with why."""
    tables, outputs, runs = {}, {}, None
    not_applicable = dict(not_applicable or {})
    for path in map(Path, inputs):
        if path.name == "runs.csv" or path.name.endswith("_runs.csv"):
            runs = pd.read_csv(path)
            continue
        table = read_figure_table(path)
        outputs[path.stem] = str(path)
        reason = not_applicable_reason(table)
        if reason is None:
            tables[path.stem] = table
        else:
            not_applicable.setdefault(path.stem, reason)
    return pd.DataFrame([judge(c, tables, runs, outputs, not_applicable) for c in claims],
                        columns=COLUMNS)
