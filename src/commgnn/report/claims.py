"""The claims ledger: each headline claim of the four papers, our value measured from the
figure tables the pipeline built, and a verdict.

A :class:`Claim` names the figure whose CSV (``results/figures/<figure>.csv``, written by
the ``system_figure`` or ``compare`` rule) measures it, and a ``measure`` function that
reads the value from that table: a :class:`Measured` (our value, its spread over seeds or
cells, the paper's value for the same cells, the rows it came from) or
:class:`NotMeasured` (no such rows: why). Verdicts:

- ``reproduced``: our value inside the claim's band around the paper's value;
- ``direction``: outside the band, on the paper's side of the claim's direction test
  (e.g. a speedup > 1 where the paper's is 2.5: the effect holds, not its size);
- ``not reproduced``: on the other side (a parity claim has no direction: outside its
  tolerance is not reproduced);
- ``not comparable``: a claim on time or modelled energy whose runs are on a clock that
  cannot judge it (:mod:`commgnn.train.clocks`): undilated CPU runs (raw CPU time is
  compute-bound here, so a communication speedup says nothing of a GPU cluster) or GPUs
  with no network at all. Dilated runs, and runs computing on a GPU over the emulated
  network at f = 1 or over a real network, are judged alike;
- ``not measured``: its figure was not built (its systems did not run), or has no rows
  for it.

Bands (see each claim): a single paper value X is reproduced within ``×1.33`` (X/1.33 to
1.33·X: the substrate — synthetic stand-in graphs, CPU compute, an emulated network with
an estimated dilation — moves compute-to-communication proportions by about that much on
its own); a paper range is used as printed.

Every row says which clock its runs were on (``clock``: the clocks of the runs behind it)
and, for a claim on energy, where the energy came from (``energy``: the target-machine
model, or the runs' meters).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from commgnn.train.clocks import DILATED, JUDGED, RAW_CPU

VERDICTS = ("reproduced", "direction", "not reproduced", "not comparable", "not measured")
#: The ledger's columns, in order.
COLUMNS = ("id", "paper", "claim", "paper_value", "paper_x", "workload", "our_value",
           "our_spread", "n", "band_low", "band_high", "verdict", "reason", "clock",
           "energy", "rule", "output")
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
    value cannot count as reproduced, whatever the band says."""

    value: float
    spread: float
    paper_x: float
    rows: pd.DataFrame
    note: str = ""
    holds: bool | None = None
    band: tuple[float, float] | None = None
    unmet: str = ""


Band = Callable[[float], tuple[float, float]]


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
    clock (:data:`commgnn.train.clocks.JUDGED`). ``direction``: the test a value outside
    the band must pass to count as the same effect (None: a parity claim). ``energy``: a
    claim on energy read from the target-machine model (:data:`TARGET_ENERGY`) or from
    the runs' meters (:data:`METERED_ENERGY`); "" for any other claim."""

    id: str
    paper: str
    claim: str
    paper_value: str
    figure: str
    measure: Callable[[pd.DataFrame], Measured]
    band: Band
    direction: Callable[[float], bool] | None
    systems: tuple[str, ...] = ()
    dilated: bool = True
    where: str = ""  # where the paper states it
    notes: tuple[str, ...] = field(default_factory=tuple)
    energy: str = ""


def mean_spread(values: pd.Series) -> tuple[float, float]:
    """Mean and standard deviation (NaN for fewer than two) of the known values."""
    values = pd.to_numeric(values, errors="coerce").dropna()
    if values.empty:
        raise NotMeasured("no values")
    return float(values.mean()), float(values.std()) if len(values) > 1 else math.nan


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
    return " · ".join(parts)


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


def judge(claim: Claim, tables: dict[str, pd.DataFrame], runs: pd.DataFrame | None,
          outputs: dict[str, str]) -> dict:
    """The claim's ledger row."""
    row = {"id": claim.id, "paper": claim.paper, "claim": claim.claim,
           "paper_value": claim.paper_value, "paper_x": math.nan, "workload": "",
           "clock": "", "energy": "",
           "our_value": math.nan, "our_spread": math.nan, "n": 0, "band_low": math.nan,
           "band_high": math.nan, "rule": "compare" if claim.figure == "compare"
           else "system_figure", "output": outputs.get(claim.figure,
                                                       f"figures/{claim.figure}.csv")}
    if claim.figure not in tables:
        return {**row, "verdict": "not measured",
                "reason": f"{claim.figure} was not built: its systems did not run"}
    try:
        measured = claim.measure(tables[claim.figure])
    except NotMeasured as exc:
        return {**row, "verdict": "not measured", "reason": f"{claim.figure}: {exc}"}
    low, high = measured.band if measured.band is not None else claim.band(measured.paper_x)
    value = measured.value
    row.update(paper_x=measured.paper_x, workload=workload(measured.rows), our_value=value,
               our_spread=measured.spread, n=len(measured.rows), band_low=low,
               band_high=high)
    note = "".join(f"; {text}" for text in (measured.unmet, measured.note) if text)
    behind = _runs_behind(runs, claim.systems, measured.rows)
    clocks = clocks_of(behind) if behind is not None else []
    row.update(clock=", ".join(clocks), energy=_energy_source(claim, behind))
    unjudged = [c for c in clocks if c not in JUDGED]
    if claim.dilated and unjudged:
        why = ("raw CPU times are compute-bound here" if RAW_CPU in unjudged else
               "transfers cost nothing there")
        return {**row, "verdict": "not comparable",
                "reason": f"runs on the {' and '.join(unjudged)} clock (undilated): "
                          f"{why}{note}"}
    if math.isnan(value):
        return {**row, "verdict": "not measured", "reason": f"no value{note}"}
    span = f"[{low:.4g}, {high:.4g}]"
    if low <= value <= high and not measured.unmet:
        return {**row, "verdict": "reproduced", "reason": f"{value:.4g} in {span}{note}"}
    where = "in" if low <= value <= high else "outside"
    holds = measured.holds if measured.holds is not None else (
        claim.direction is not None and claim.direction(value))
    if holds:
        return {**row, "verdict": "direction",
                "reason": f"{value:.4g} {where} {span}, same direction{note}"}
    return {**row, "verdict": "not reproduced", "reason": f"{value:.4g} {where} {span}{note}"}


def ledger(claims: list[Claim], inputs: list[Path]) -> pd.DataFrame:
    """Every claim's row, from the figure CSVs and the runs table among ``inputs`` (each
    named by its file: ``<figure>.csv``, and the runs table ``runs.csv`` or
    ``<anything>_runs.csv``)."""
    tables, outputs, runs = {}, {}, None
    for path in map(Path, inputs):
        if path.name == "runs.csv" or path.name.endswith("_runs.csv"):
            runs = pd.read_csv(path)
        else:
            tables[path.stem] = pd.read_csv(path)
            outputs[path.stem] = str(path)
    return pd.DataFrame([judge(c, tables, runs, outputs) for c in claims], columns=COLUMNS)
