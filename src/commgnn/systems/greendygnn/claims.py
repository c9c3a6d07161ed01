"""The greendygnn paper's headline claims (see :mod:`commgnn.report.claims`).

The headline claims are on the learned controller (method ``GreenDyGNN``). A table without it
(the default config runs only the static window and the heuristic) gives ``not measured``,
with the heuristic's value as a labelled proxy that takes no verdict.

Paper values per configuration come from Table I, Fig. 5 and Table II (``TABLE1``,
``OVERHEAD_PCT``, ``ABLATION_KJ``). Our datasets map to the paper's by ``PAPER_DATASET``. A
claim on matched cells compares against the paper's values for the same cells (``paper_x``);
``paper_x`` is NaN where no cell matches, and the band is then the paper's printed range.

BGL rows are selected by method (``BGL``, whatever its cache); the ledger's text names the
cache through their labels (``BGL (no cache)``: GreenDyGNN's BGL, the default; ``BGL (FIFO
20,000 rows)``): in the row's workload and in the "fastest in … among …" notes.

Fig. 6's clean parity (within 2 % of RapidGNN) reads ``greendygnn_fig6``: the clean runs of a
runs table, whose ``option_controller`` tells the learned controller from the static and
heuristic ones (the comparison's runs table included).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable

import pandas as pd

from commgnn.report.claims import (
    TARGET_ENERGY,
    Band,
    Claim,
    Measured,
    NotMeasured,
    above,
    below,
    fixed_band,
    mean_spread,
    paper_name,
    select,
    tolerance,
)
from commgnn.systems.bgl import DESCRIPTION as _BGL
from commgnn.systems.default import DESCRIPTION as _DEFAULT
from commgnn.systems.greendygnn import DESCRIPTION as _GREENDYGNN
from commgnn.systems.greendygnn.figures.greendygnn_runs import WORKLOAD
from commgnn.systems.rapidgnn import DESCRIPTION as _RAPIDGNN

#: The names of the systems the claims compare (their packages' descriptions).
BGL_SYSTEM = _BGL.name
DEFAULT_SYSTEM = _DEFAULT.name
GREENDYGNN_SYSTEM = _GREENDYGNN.name
RAPIDGNN_SYSTEM = _RAPIDGNN.name

PAPER = "GreenDyGNN"
LEARNED, HEURISTIC = "GreenDyGNN", "GreenDyGNN-heuristic"
#: Runs of one cell: the workload and the network (congested rows only, by construction).
CELL = [*WORKLOAD, "network"]
#: Our stand-in datasets → the paper's.
PAPER_DATASET = {"products-like": "Products", "reddit-like": "Reddit",
                 "papers100m-like": "Papers100M"}
#: Table I (under congestion): total kJ and epoch time (s) per method, per (dataset, B).
_METHODS = ("DGL", "BGL", "RapidGNN", "GreenDyGNN")
_TABLE1 = {
    ("Products", 1000): ((293.8, 235.8, 228.8, 215.4), (4.26, 3.98, 3.13, 2.97)),
    ("Products", 2000): ((284.3, 218.8, 213.0, 203.9), (3.80, 3.58, 2.90, 2.77)),
    ("Products", 3000): ((272.6, 213.4, 207.0, 196.3), (3.20, 3.25, 2.40, 2.35)),
    ("Reddit", 1000): ((372.4, 326.6, 280.1, 212.6), (9.20, 9.68, 2.75, 2.68)),
    ("Reddit", 2000): ((326.8, 278.0, 239.0, 189.4), (6.84, 7.47, 1.90, 1.77)),
    ("Reddit", 3000): ((307.7, 251.1, 228.0, 185.1), (5.67, 5.77, 1.72, 1.62)),
    ("Papers100M", 1000): ((484.9, 326.3, 432.0, 343.1), (15.78, 13.35, 12.50, 10.24)),
    ("Papers100M", 2000): ((452.2, 342.7, 380.4, 307.2), (12.66, 11.08, 10.60, 8.95)),
    ("Papers100M", 3000): ((494.0, 340.6, 356.0, 290.3), (11.09, 11.09, 9.50, 8.09)),
}
TABLE1: dict[tuple[str, int], dict[str, tuple[float, float]]] = {
    cell: {m: (kj, s) for m, kj, s in zip(_METHODS, kjs, secs, strict=True)}
    for cell, (kjs, secs) in _TABLE1.items()}
#: Fig. 5 (B = 2000): energy overhead under congestion vs the method's own clean run, %.
OVERHEAD_PCT = {"Products": {"DGL": 30, "BGL": 27, "RapidGNN": 18, "GreenDyGNN": 15},
                "Reddit": {"DGL": 45, "BGL": 36, "RapidGNN": 31, "GreenDyGNN": 5},
                "Papers100M": {"DGL": 50, "BGL": 48, "RapidGNN": 45, "GreenDyGNN": 19}}
#: Fig. 6 (no congestion; the batch size is not stated): total kJ of GreenDyGNN and RapidGNN.
CLEAN_KJ = {"Products": (178.0, 180.0), "Reddit": (180.0, 182.0),
            "Papers100M": (258.0, 262.0)}
#: Fig. 6's parity: |GreenDyGNN / RapidGNN − 1| on a clean network, "within 2 %".
CLEAN_PARITY = 0.02
#: Table II (B = 2000, congested): kJ of w/o RL (static W = 16), w/o cost weights, full.
ABLATION_KJ = {"Products": (218.9, 210.0, 203.9), "Reddit": (204.2, 195.8, 189.4),
               "Papers100M": (336.1, 318.0, 307.2)}


def matched_band(low: float, high: float, half: float) -> Band:
    """Matched cells (``paper_x`` known): ``paper_x ± half``; else the printed range."""
    return lambda x: (low, high) if math.isnan(x) else (x - half, x + half)


def _paper_cell(dataset: str, batch: int, value: Callable[[str, int], float]) -> float:
    """The paper's value for our cell: its (dataset, B), or the dataset's mean over B where
    our batch size is not the paper's; NaN for a dataset the paper does not have."""
    name = paper_name(dataset, PAPER_DATASET)
    if name is None:
        return math.nan
    batches = [b for d, b in TABLE1 if d == name]
    if int(batch) in batches:
        return value(name, int(batch))
    return sum(value(name, b) for b in batches) / len(batches)


def _notes(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _seeds(rows: pd.DataFrame) -> str:
    if "seeds" in rows and pd.to_numeric(rows["seeds"], errors="coerce").min() < 2:
        return "seeds < 2"
    return ""


def _one(cell: pd.DataFrame, method: str) -> pd.DataFrame | None:
    """The cell's row of ``method`` (None if absent). Several (e.g. the learned controller
    with and without cost weights, both method GreenDyGNN) cannot be told apart here."""
    rows = cell[cell["method"] == method]
    if len(rows) > 1:
        raise NotMeasured(f"several {method} rows in a cell ({', '.join(rows['label'])}): "
                          "the table does not tell the full system from its variants")
    return None if rows.empty else rows


def paired(table: pd.DataFrame, column: str, ours: str, other: str
           ) -> tuple[pd.DataFrame, list[pd.DataFrame]]:
    """Per cell with both methods: ``dataset``, ``batch_size``, ``ours``, ``other`` (the
    column's values); and each cell's two rows."""
    select(table, ours, method=ours)
    cells, rows = [], []
    for _, cell in table.groupby([k for k in CELL if k in table], dropna=False, sort=True):
        mine, theirs = _one(cell, ours), _one(cell, other)
        if mine is None or theirs is None:
            continue
        cells.append({"dataset": mine["dataset"].iloc[0],
                      "batch_size": mine["batch_size"].iloc[0],
                      "ours": float(mine[column].iloc[0]),
                      "other": float(theirs[column].iloc[0])})
        rows.append(pd.concat([mine, theirs]))
    if not cells:
        raise NotMeasured(f"no cell with both {ours} and {other} rows")
    return pd.DataFrame(cells), rows


def learned(measure: Callable[[pd.DataFrame, str], Measured]) -> Callable[
        [pd.DataFrame], Measured]:
    """``measure`` on the learned controller; without it, not measured with the
    heuristic's value as a proxy (no verdict)."""
    def run(table: pd.DataFrame) -> Measured:
        if "method" in table and (table["method"] == LEARNED).any():
            return measure(table, LEARNED)
        ran = sorted({str(m) for m in table.get("method", pd.Series(dtype=str))
                      if str(m).startswith("GreenDyGNN-")})
        reason = f"no {LEARNED} rows: the learned controller did not run"
        if ran:
            reason += f" ({', '.join(ran)} did)"
        with contextlib.suppress(NotMeasured):
            reason += f"; proxy: heuristic {measure(table, HEURISTIC).value:.3g} (no verdict)"
        raise NotMeasured(reason)
    return run


def _matched(paper: pd.Series) -> tuple[pd.Series, float, str]:
    """Which cells to keep: those the paper has (all if none has a match); the paper's mean
    over them (NaN: none); a note on the cells left out."""
    known = paper.notna()
    if not known.any():
        return ~known, math.nan, "unmatched: the paper's range across its configurations"
    left = int((~known).sum())
    return known, float(paper[known].mean()), f"{left} unmatched cells left out" if left else ""


def _kept(cells: list[pd.DataFrame], keep: pd.Series) -> pd.DataFrame:
    return pd.concat([rows for rows, k in zip(cells, keep, strict=True) if k])


def _saving(other: str) -> Callable[[pd.DataFrame, str], Measured]:
    """1 − total energy of ``ours`` / ``other``, mean over cells (Table I's totals)."""
    def measure(table: pd.DataFrame, ours: str) -> Measured:
        cells, per_cell = paired(table, "total_kj", ours, other)
        values = 1 - cells["ours"] / cells["other"]
        paper = pd.Series([_paper_cell(d, b, lambda n, bs: 1 - TABLE1[n, bs]["GreenDyGNN"][0]
                                       / TABLE1[n, bs][other][0])
                           for d, b in zip(cells["dataset"], cells["batch_size"],
                                           strict=True)], dtype=float)
        keep, paper_x, note = _matched(paper)
        values, rows = values[keep], _kept(per_cell, keep)
        value, spread = mean_spread(values)
        info = ""
        if other == "RapidGNN" and {"cpu_kj", "gpu_kj"} <= set(rows):
            part = {p: rows.groupby("method")[f"{p}_kj"].mean() for p in ("cpu", "gpu")}
            info = "CPU {:+.1%}, GPU {:+.1%} vs RapidGNN".format(
                *(part[p][ours] / part[p][other] - 1 for p in ("cpu", "gpu")))
        return Measured(value, spread, paper_x, rows, _notes(
            f"{len(values)} cells, max {values.max():.3g}", info, note, _seeds(rows)))
    return measure


def _lowest(table: pd.DataFrame, column: str, ours: str) -> tuple[int, int, pd.DataFrame]:
    """(cells in which ``ours`` has the lowest ``column`` of the paper's four methods, cells
    with ``ours`` and at least one other of them, those cells' rows of the four)."""
    won, rows = 0, []
    for _, cell in table.groupby([k for k in CELL if k in table], dropna=False, sort=True):
        cell = cell[cell["method"].isin(("DGL", "BGL", "RapidGNN", ours))]
        mine = _one(cell, ours)
        if mine is None or len(cell) < 2:
            continue
        won += bool(float(mine[column].iloc[0]) <= cell[column].min())
        rows.append(cell)
    return won, len(rows), pd.concat(rows) if rows else table.iloc[0:0]


def _among(rows: pd.DataFrame) -> str:
    """`` among <labels>``: the methods a "fastest" count compared, each by its label (BGL
    with its cache: ``BGL (no cache)``, ``BGL (FIFO 20,000 rows)``); "" without rows."""
    if rows.empty or "method" not in rows:
        return ""
    column = "label" if "label" in rows else "method"
    order = {m: i for i, m in enumerate(("DGL", "BGL", "RapidGNN", LEARNED, HEURISTIC))}
    pairs = {(order.get(str(m), len(order)), str(lab))
             for m, lab in zip(rows["method"], rows[column], strict=True)}
    return " among " + ", ".join(label for _, label in sorted(pairs))


def _epoch_gain(table: pd.DataFrame, ours: str) -> Measured:
    """1 − epoch time of ``ours`` / RapidGNN's, mean over cells (the fastest count, among
    the methods named by their labels: info)."""
    cells, per_cell = paired(table, "epoch_time_s", ours, "RapidGNN")
    values = 1 - cells["ours"] / cells["other"]
    paper = pd.Series([_paper_cell(d, b, lambda n, bs: 1 - TABLE1[n, bs]["GreenDyGNN"][1]
                                   / TABLE1[n, bs]["RapidGNN"][1])
                       for d, b in zip(cells["dataset"], cells["batch_size"], strict=True)],
                      dtype=float)
    keep, paper_x, note = _matched(paper)
    values, rows = values[keep], _kept(per_cell, keep)
    value, spread = mean_spread(values)
    won, total, compared = _lowest(table, "epoch_time_s", ours)
    return Measured(value, spread, paper_x, rows,
                    _notes(f"fastest in {won}/{total} cells{_among(compared)}", note,
                           _seeds(rows)))


def _fastest_share(table: pd.DataFrame, ours: str) -> Measured:
    """The fraction of cells in which ``ours`` has the lowest epoch time (paper: 9/9)."""
    won, total, rows = _lowest(table, "epoch_time_s", ours)
    if not total:
        raise NotMeasured(f"no cell with {ours} and a baseline")
    return Measured(won / total, math.nan, 1.0, rows,
                    _notes(f"fastest in {won}/{total} cells{_among(rows)}", _seeds(rows)))


def _absorbed(table: pd.DataFrame, ours: str) -> Measured:
    """Overhead of RapidGNN minus that of ``ours`` (percentage points), mean over cells;
    it does not hold where ``ours`` used more energy than RapidGNN under congestion (the
    overhead is relative to each method's own clean run, so a higher clean energy shrinks
    it without saving anything)."""
    cells, per_cell = paired(table, "overhead_pct", ours, "RapidGNN")
    values = cells["other"] - cells["ours"]
    paper = pd.Series([_paper_dataset(d, lambda o: o["RapidGNN"] - o["GreenDyGNN"])
                       for d in cells["dataset"]], dtype=float)
    keep, paper_x, note = _matched(paper)
    values, rows = values[keep], _kept(per_cell, keep)
    value, spread = mean_spread(values)
    won, total, _ = _lowest(table, "overhead_pct", ours)
    unmet, holds = "", None
    if "congested_j" in table:  # absorbing overhead means using less energy under it
        energy = paired(table, "congested_j", ours, "RapidGNN")[0][keep.to_numpy()]
        above = int((energy["ours"] > energy["other"]).sum())
        if above:
            unmet = (f"{ours} used more energy than RapidGNN under congestion in "
                     f"{above}/{len(energy)} cells: its smaller overhead is over a higher "
                     "clean energy")
            holds = False
    return Measured(value, spread, paper_x, rows, _notes(
        f"{ours} lowest overhead in {won}/{total} cells", note, _seeds(rows)),
        holds=holds, unmet=unmet)


def _paper_dataset(dataset: str, value: Callable[[dict[str, int]], float]) -> float:
    name = paper_name(dataset, PAPER_DATASET)
    return math.nan if name is None else float(value(OVERHEAD_PCT[name]))


def _static_penalty(table: pd.DataFrame) -> Measured:
    """RapidGNN's congestion overhead (%), mean over cells."""
    rows = select(table, "RapidGNN", method="RapidGNN")
    paper = pd.Series([_paper_dataset(d, lambda o: o["RapidGNN"]) for d in rows["dataset"]],
                      index=rows.index, dtype=float)
    keep, paper_x, note = _matched(paper)
    rows = rows[keep]
    value, spread = mean_spread(rows["overhead_pct"])
    return Measured(value, spread, paper_x, rows, _notes(note, _seeds(rows)))


def _clean_parity(table: pd.DataFrame, ours: str) -> Measured:
    """Energy per epoch of ``ours`` / RapidGNN's − 1 on a clean network, mean over cells;
    the paper's for the same datasets (Fig. 6: −1.1 % on Products and Reddit, −1.5 % on
    Papers100M)."""
    cells, per_cell = paired(table, "total_j", ours, "RapidGNN")
    values = cells["ours"] / cells["other"] - 1
    paper = pd.Series([math.nan if (n := paper_name(d, PAPER_DATASET)) not in CLEAN_KJ
                       else CLEAN_KJ[n][0] / CLEAN_KJ[n][1] - 1 for d in cells["dataset"]],
                      dtype=float)
    keep, paper_x, note = _matched(paper)
    values, rows = values[keep], _kept(per_cell, keep)
    value, spread = mean_spread(values)
    return Measured(value, spread, paper_x, rows, _notes(
        f"{len(values)} cells, largest |gap| {values.abs().max():.3g}", note, _seeds(rows)))


def _ablation(prefix: str, index: int,
              fallback: str | None = None) -> Callable[[pd.DataFrame], Measured]:
    """``vs_full`` (variant / full − 1) of the variant named ``prefix`` (or ``prefix [config]``),
    mean over congested cells with one full row; ``index`` picks its Table II row. Without
    such rows, the variants matching the regular expression ``fallback`` (e.g. a static
    cache of another W), named in the note."""
    def measure(table: pd.DataFrame) -> Measured:
        note = ""
        if "congested" in table:
            table = table[table["congested"].astype(str).str.lower() == "true"]
        elif "network" in table:
            note = ("no congested column: every network kept "
                    f"({', '.join(sorted(map(str, table['network'].unique())))})")
        if "variant" not in table or not (table["variant"] == "GreenDyGNN (full)").any():
            raise NotMeasured("no GreenDyGNN (full) rows: the learned controller did not run")
        variant = table["variant"].astype(str)
        measured = pd.to_numeric(table["vs_full"], errors="coerce").notna()
        rows = table[((variant == prefix) | variant.str.startswith(prefix + " [")) & measured]
        if rows.empty and fallback is not None:
            rows = table[variant.str.fullmatch(fallback) & measured]
            if not rows.empty:
                note = _notes(note, f"no {prefix} rows: measured on "
                                    f"{', '.join(sorted(rows['variant'].astype(str).unique()))}")
        if rows.empty:
            raise NotMeasured(f"no {prefix} rows in a cell with one GreenDyGNN (full) row")
        paper = pd.Series([ABLATION_KJ[n][index] / ABLATION_KJ[n][2] - 1 if n else math.nan
                           for n in map(PAPER_DATASET.get, rows["dataset"].astype(str))],
                          index=rows.index, dtype=float)
        keep, paper_x, matched = _matched(paper)
        rows = rows[keep]
        value, spread = mean_spread(rows["vs_full"])
        return Measured(value, spread, paper_x, rows, _notes(matched, note, _seeds(rows)))
    return measure


def _error(statistic: str) -> Callable[[pd.DataFrame], Measured]:
    """The simulator's relative step-time error over the validation grid: ``mean`` (with
    the std over points) or ``max``."""
    def measure(table: pd.DataFrame) -> Measured:
        rows = table[pd.to_numeric(table.get("error"), errors="coerce").notna()] \
            if "error" in table else table.iloc[0:0]
        if rows.empty:
            raise NotMeasured("no validation points")
        error = rows["error"].astype(float)
        per = error.groupby(rows["workload"]).agg(["mean", "max"])
        note = "; ".join(f"{w}: mean {m:.3g}, max {x:.3g}" for w, (m, x) in per.iterrows())
        if statistic == "max":
            return Measured(float(error.max()), math.nan, 0.05, rows, note)
        value, spread = mean_spread(error)
        return Measured(value, spread, 0.028, rows, _notes(f"max {error.max():.3g}", note))
    return measure


def _window_shift(table: pd.DataFrame) -> Measured:
    """W*(congested) / W*(clean) of the static-window sweep, per workload and congested
    network, mean over them (paper: 8 / 16). An optimum counts only where its network
    swept at least two windows: one static window is no choice of W*."""
    keys = [k for k in WORKLOAD if k in table]
    swept = table.groupby([*keys, "network"], dropna=False)["window"].transform("nunique")
    if not (swept >= 2).any():
        raise NotMeasured("no static-window sweep: one window per network, no W* to compare")
    best = select(table[swept >= 2], "optimal", optimal=(True, "True", "true"))
    congested = best["congested"].astype(str).str.lower() == "true"
    clean = best[~congested]
    if clean.duplicated(keys).any():
        raise NotMeasured("several clean networks per workload: no single clean optimum")
    pairs = best[congested].merge(clean[[*keys, "window", "mean"]], on=keys,
                                  suffixes=("", "_clean"))
    if pairs.empty:
        raise NotMeasured("no workload with a clean and a congested optimum")
    ratio = pairs["window"] / pairs["window_clean"]
    value, spread = mean_spread(ratio)
    rise = pairs["mean"] / pairs["mean_clean"] - 1
    w_clean = sorted({int(w) for w in pairs["window_clean"]})
    in_range = all(8 <= w <= 32 for w in w_clean)
    rows = best[best.set_index(keys).index.isin(pairs.set_index(keys).index)]
    return Measured(value, spread, 0.5, rows, _notes(
        f"W* clean {w_clean} ({'in' if in_range else 'outside'} [8, 32]), congested "
        f"{sorted({int(w) for w in pairs['window']})}; best energy {rise.mean():+.0%} "
        "under congestion (info)", _seeds(rows)))


_BASELINES = (DEFAULT_SYSTEM, BGL_SYSTEM, RAPIDGNN_SYSTEM, GREENDYGNN_SYSTEM)

CLAIMS: list[Claim] = [
    Claim(id="greendygnn-energy-vs-dgl-congested", paper=PAPER,
          claim="Under congestion GreenDyGNN's total energy is 27–43 % below Default DGL's.",
          paper_value="27–43 % (up to 43 %)", figure="greendygnn_table1",
          measure=learned(_saving("DGL")), band=matched_band(0.27, 0.43, 0.05),
          direction=above(0.0), systems=(DEFAULT_SYSTEM, GREENDYGNN_SYSTEM),
          where="abstract; §VI-G, Table I",
          notes=("matched cells: the paper's per-config saving ± 0.05",),
          energy=TARGET_ENERGY),
    Claim(id="greendygnn-energy-vs-rapidgnn-congested", paper=PAPER,
          claim="Under congestion GreenDyGNN's total energy is 4–24 % below RapidGNN's.",
          paper_value="4–24 %", figure="greendygnn_table1",
          measure=learned(_saving("RapidGNN")), band=matched_band(0.04, 0.24, 0.05),
          direction=above(0.0), systems=(RAPIDGNN_SYSTEM, GREENDYGNN_SYSTEM),
          where="§I contribution 4; §VI-G, Table I",
          notes=("matched cells: the paper's per-config saving ± 0.05",),
          energy=TARGET_ENERGY),
    Claim(id="greendygnn-congestion-overhead-absorbed", paper=PAPER,
          claim="GreenDyGNN absorbs up to 26 pp of the congestion overhead RapidGNN suffers.",
          paper_value="3–26 pp", figure="greendygnn_fig5", measure=learned(_absorbed),
          band=fixed_band(3.0, 26.0), direction=above(0.0, 2.0),
          systems=(RAPIDGNN_SYSTEM, GREENDYGNN_SYSTEM), where="§VI-B, Fig. 5",
          energy=TARGET_ENERGY),
    Claim(id="greendygnn-congestion-overhead-static-penalty", paper=PAPER,
          claim="Congestion raises static caching's (RapidGNN's) energy by 18–45 %.",
          paper_value="18–45 %", figure="greendygnn_fig5", measure=_static_penalty,
          band=fixed_band(18.0, 45.0), direction=None,
          notes=("no direction: congestion only adds delay, so the sign holds by "
                 "construction and only the size counts",), systems=(RAPIDGNN_SYSTEM,),
          where="abstract; §VI-B, Fig. 5",
          energy=TARGET_ENERGY),
    Claim(id="greendygnn-clean-parity", paper=PAPER,
          claim="Without congestion GreenDyGNN's energy is within 2 % of RapidGNN's.",
          paper_value="−1.1/−1.1/−1.5 % (Products, Reddit, Papers100M)",
          figure="greendygnn_fig6", measure=learned(_clean_parity),
          band=tolerance(CLEAN_PARITY), direction=None,
          systems=(RAPIDGNN_SYSTEM, GREENDYGNN_SYSTEM), where="§VI-C, Fig. 6",
          notes=("parity: |GreenDyGNN / RapidGNN − 1| ≤ 0.02, no direction",),
          energy=TARGET_ENERGY),
    Claim(id="greendygnn-epoch-time", paper=PAPER,
          claim="Under congestion GreenDyGNN's epoch time is 2–18 % below RapidGNN's.",
          paper_value="2–18 % (derived)", figure="greendygnn_table1",
          measure=learned(_epoch_gain), band=fixed_band(0.02, 0.18),
          direction=above(0.0), systems=_BASELINES, where="§VI-G, Table I"),
    Claim(id="greendygnn-epoch-time-fastest", paper=PAPER,
          claim="Under congestion GreenDyGNN has the fastest epoch time in every config.",
          paper_value="9/9 configs", figure="greendygnn_table1",
          measure=learned(_fastest_share), band=fixed_band(1.0, 1.0), direction=None,
          systems=_BASELINES, where="§VI-G, Table I"),
    Claim(id="greendygnn-ablation-rl", paper=PAPER,
          claim="Without the RL controller (static W = 16) energy rises 7.4–9.4 %.",
          paper_value="+7.4/+7.8/+9.4 % (derived)", figure="greendygnn_table2",
          measure=_ablation("w/o RL (static W=16)", 0,
                            fallback=r"w/o RL \(static W=\d+\)( \[.*\])?"),
          band=fixed_band(0.055, 0.118),
          direction=above(0.0), systems=(GREENDYGNN_SYSTEM,), where="§VI-H, Table II",
          energy=TARGET_ENERGY),
    Claim(id="greendygnn-ablation-cost-weights", paper=PAPER,
          claim="Without per-owner cost weights energy rises 3.0–3.5 %.",
          paper_value="+3.0/+3.4/+3.5 % (derived)", figure="greendygnn_table2",
          measure=_ablation("w/o Cost Weights", 1), band=fixed_band(0.022, 0.044),
          direction=above(0.0), systems=(GREENDYGNN_SYSTEM,), where="§VI-H, Table II",
          energy=TARGET_ENERGY),
    Claim(id="greendygnn-simulator-fidelity", paper=PAPER,
          claim="The calibrated simulator predicts mean step time with a mean error of 2.8 %.",
          paper_value="2.8 %", figure="greendygnn_fig8", measure=_error("mean"),
          band=fixed_band(0.0, 0.035), direction=below(0.10, 0.0), dilated=False,
          where="§VI-E, Fig. 8"),
    Claim(id="greendygnn-simulator-fidelity-max", paper=PAPER,
          claim="The simulator's step-time error stays below 5 % across the grid.",
          paper_value="< 5 %", figure="greendygnn_fig8", measure=_error("max"),
          band=fixed_band(0.0, 0.05), direction=None, dilated=False,
          where="§VI-E, Fig. 8"),
    Claim(id="greendygnn-window-shift", paper=PAPER,
          claim="Congestion halves the energy-optimal rebuild window (16 → about 8).",
          paper_value="W* 16 → 8", figure="greendygnn_fig2", measure=_window_shift,
          band=fixed_band(0.0, 0.5), direction=below(1.0), systems=(GREENDYGNN_SYSTEM,),
          where="§I; §IV-A", notes=("ours: 20 ms congestion, not 4 ms",),
          energy=TARGET_ENERGY),
]
