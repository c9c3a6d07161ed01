"""The Grappa paper's headline claims (see :mod:`commgnn.report.claims`; spec §3).

Cells are matched: a claim on Table 3 compares the mean over our cells with the mean of the
paper's values for the same model, depth and dataset (:func:`paper_dataset` maps our
stand-ins, and scaled copies named after them, to the paper's datasets). DGL-METIS is the
cell's first ``default (metis…)`` variant.

Two claims (scaling, switch overhead) decide whether the effect holds on a second measured
number (DGL-METIS's scaling; Grappa's speedup once switches count): their measurement
sets ``Measured.holds``.
"""

from __future__ import annotations

import math
import statistics

import pandas as pd

from commgnn.core.spec import split_model
from commgnn.report.claims import (
    Claim,
    Measured,
    NotMeasured,
    above,
    below,
    fixed_band,
    mean_spread,
    paper_name,
    ratio_band,
    ratio_means,
    select,
    tolerance,
)
from commgnn.report.figures.plotting import CELL
from commgnn.systems.clustergcn import DESCRIPTION as _CLUSTERGCN
from commgnn.systems.default import DESCRIPTION as _DEFAULT
from commgnn.systems.grappa import DESCRIPTION as _GRAPPA
from commgnn.systems.grappa.figures.grappa_table5 import CLUSTER_GCN, GRAPPA
from commgnn.systems.grappa.figures.grappa_table5 import PAPER as TABLE5
from commgnn.train.plateau import EPSILON

#: The names of the systems the claims compare (their packages' descriptions).
CLUSTERGCN_SYSTEM = _CLUSTERGCN.name
DEFAULT_SYSTEM = _DEFAULT.name
GRAPPA_SYSTEM = _GRAPPA.name

#: Our dataset → the paper's (the spec's name map).
DATASETS = {"arxiv-like": "OGBN-Arxiv", "synth-arxiv": "OGBN-Arxiv", "reddit-like": "Reddit",
            "products-like": "OGBN-Products", "papers100m-like": "OGBN-Papers100M"}


def paper_dataset(name: str) -> str | None:
    """The paper's dataset a stand-in stands for: :data:`DATASETS`' entry for ``name``, or
    for the stand-in ``name`` is a scaled copy of (``products-like-10``: its name, a dash and
    a suffix); None for any other dataset."""
    return paper_name(name, DATASETS)


#: The columns of :data:`SPEEDUP`.
PAPER_DATASETS = ("OGBN-Arxiv", "Reddit", "OGBN-Products", "OGBN-Papers100M")
#: Table 3 (derived): DGL-METIS ÷ Grappa epoch time, 16 partitions on 16 V100s, per
#: (model, depth), over :data:`PAPER_DATASETS`. 36 cells: mean 4.24, range 1.0–13.3.
SPEEDUP: dict[tuple[str, int], tuple[float, ...]] = {
    ("sage", 2): (1.00, 3.70, 1.77, 2.33), ("gcn", 2): (1.00, 3.70, 1.77, 2.39),
    ("gat", 2): (1.25, 3.45, 1.71, 1.94),
    ("sage", 3): (1.50, 6.20, 3.21, 3.29), ("gcn", 3): (1.50, 6.00, 3.21, 3.35),
    ("gat", 3): (1.40, 5.82, 3.19, 3.52),
    ("sage", 4): (2.50, 10.08, 13.33, 6.88), ("gcn", 4): (2.50, 10.08, 8.00, 6.91),
    ("gat", 4): (2.20, 9.33, 6.97, 5.78),
}
#: The fallback for a cell :data:`SPEEDUP` lacks: its entries' mean at the cell's depth
#: (2.17 / 3.52 / 7.05).
SPEEDUP_BY_DEPTH = {depth: statistics.mean(v for (_, d), row in SPEEDUP.items() if d == depth
                                           for v in row) for depth in (2, 3, 4)}
#: Table 4: mean test accuracy by depth, (DGL-METIS, Grappa).
ACCURACY = {2: (0.6909, 0.6894), 3: (0.6328, 0.6746), 4: (0.5045, 0.6664)}
#: Table 8: switching time as a share of training time, by partitions ("at most 12 %").
SWITCH_SHARE = {4: 0.04, 16: 0.10, 64: 0.12}
#: Accuracy claims compare models at a validation plateau: every run of a cell raised its
#: best validation accuracy by at most this over its last 3 evaluations (the paper trains
#: 500 epochs; runs here are bounded, and an under-trained pair compares nothing).
PLATEAU_GAIN = 0.005
#: Fig. 4 / §5.3.1: Grappa's parallel efficiency from 1 to 16 partitions (about 16×).
SCALING_EFFICIENCY = 1.0
METIS = "DGL-METIS"
SYSTEMS = (GRAPPA_SYSTEM, DEFAULT_SYSTEM)
WITH_CLUSTERGCN = (GRAPPA_SYSTEM, CLUSTERGCN_SYSTEM)


def _seeds(rows: pd.DataFrame) -> str:
    seeds = pd.to_numeric(rows["seeds"], errors="coerce").min() if "seeds" in rows else math.nan
    return "1 seed: no spread over seeds" if seeds < 2 else ""


def _note(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


def _is_metis(variant: pd.Series) -> pd.Series:
    return variant.astype(str).str.startswith("default (metis")


def _paired(table: pd.DataFrame) -> pd.DataFrame:
    """``grappa_table3``'s Grappa rows beside their cell's DGL-METIS row (suffix ``_metis``)."""
    grappa = select(table, "Grappa", variant="Grappa")
    metis = table[_is_metis(table["variant"])].sort_values("variant").drop_duplicates(CELL)
    rows = grappa.merge(metis, on=CELL, suffixes=("", "_metis"))
    if rows.empty:
        raise NotMeasured("no cell with both Grappa and DGL-METIS rows")
    return rows.assign(seeds=rows[["seeds", "seeds_metis"]].min(axis=1))


def _paper_speedup(model: str, layers: int, dataset: str) -> float | None:
    """:data:`SPEEDUP`'s entry for the cell; None if it has none."""
    row = SPEEDUP.get((split_model(str(model))[0], int(layers)))
    paper = paper_dataset(dataset)
    return None if row is None or paper is None else row[PAPER_DATASETS.index(paper)]


def _epoch_speedup(table: pd.DataFrame) -> Measured:
    rows = _paired(table)
    rows = rows.assign(speedup=rows["epoch_time_s_metis"] / rows["epoch_time_excl_switch_s"])
    rows = rows[rows["layers"].isin(SPEEDUP_BY_DEPTH) & rows["speedup"].notna()]
    if rows.empty:
        raise NotMeasured("no 2-4-layer cell with a Grappa speedup")
    matched = [_paper_speedup(*cell) for cell in
               zip(rows["model"], rows["layers"], rows["dataset"], strict=True)]
    paper = [SPEEDUP_BY_DEPTH[int(d)] if m is None else m
             for m, d in zip(matched, rows["layers"], strict=True)]
    value, spread, geomean = ratio_means(rows["speedup"])
    inside = sum(p / 1.33 <= s <= p * 1.33 for s, p in zip(rows["speedup"], paper, strict=True))
    unmatched = sum(m is None for m in matched)
    return Measured(value, spread, statistics.mean(paper), rows, _note(
        f"{inside}/{len(rows)} cells in ×1.33 of theirs",
        f"{unmatched} unmatched: per-depth mean" if unmatched else "", _seeds(rows)),
        geomean=geomean)


def _at_plateau(rows: pd.DataFrame, partner: str) -> tuple[pd.DataFrame, str]:
    """The compared cells whose runs all reached a validation plateau
    (:data:`PLATEAU_GAIN`; the row's runs and those of the columns suffixed ``partner``),
    and a note; every cell of a table whose runs recorded no model selection (made before
    it), noted so."""
    if "val_gain_last3" not in rows:
        return rows, "plateau not recorded"
    bound = PLATEAU_GAIN + EPSILON  # the comparison of the runs' stop rule (train.plateau)
    at = (rows["val_gain_last3"] <= bound) & (rows[f"val_gain_last3{partner}"] <= bound)
    if not at.any():
        raise NotMeasured(f"no cell at a validation plateau (every run's last 3 evaluations "
                          f"raising its best validation accuracy by ≤ {PLATEAU_GAIN}); "
                          f"{len(rows)} cells under-trained or evaluated 3 times or fewer")
    left = len(rows) - int(at.sum())
    return rows[at], f"{left} cells short of a plateau left out" if left else ""


def _accuracy_gap(depths: tuple[int, ...]):
    def measure(table: pd.DataFrame) -> Measured:
        rows = _paired(table)
        rows = rows.assign(gap=rows["test_acc"] - rows["test_acc_metis"])
        rows, plateau = _at_plateau(select(rows[rows["gap"].notna()],
                                           f"{'/'.join(map(str, depths))}-layer",
                                           layers=depths), "_metis")
        value, spread = mean_spread(rows["gap"])
        paper = statistics.mean(ACCURACY[int(d)][1] - ACCURACY[int(d)][0]
                                for d in rows["layers"])
        by_depth = rows.groupby("layers")["gap"].mean()
        per_depth = ", ".join(f"L{d} {g:+.3f}" for d, g in by_depth.items())
        return Measured(value, spread, paper, rows,
                        _note(per_depth if len(by_depth) > 1 else "", plateau, _seeds(rows)))
    return measure


def _scaling(table: pd.DataFrame) -> Measured:
    """Parallel efficiency (speedup ÷ partitions ratio) of Grappa and of DGL-METIS over
    the partition counts both ran, per dataset, model and depth (spec: variant names
    ``default (metisP)`` change with P: normalised to DGL-METIS)."""
    data = table.assign(variant=table["variant"].astype(str).where(
        ~_is_metis(table["variant"]), METIS))
    data = data[data["variant"].isin((GRAPPA, METIS))]
    cells = []
    for (dataset, model, layers), group in data.groupby(["dataset", "model", "layers"]):
        times = group.groupby(["variant", "workers"])["epoch_time_s"].mean().dropna()
        if times.index.get_level_values(0).nunique() < 2:
            continue
        common = sorted(set(times[GRAPPA].index) & set(times[METIS].index))
        if len(common) < 2:
            continue
        low, high = common[0], common[-1]
        efficiency = {v: times[v][low] / times[v][high] / (high / low) for v in (GRAPPA, METIS)}
        cells.append({"dataset": dataset, "model": model, "layers": layers,
                      "workers": f"{low}→{high}", "seeds": group["seeds"].min(),
                      "grappa": efficiency[GRAPPA], "metis": efficiency[METIS]})
    if not cells:
        raise NotMeasured("no dataset/model with Grappa and DGL-METIS at two partition counts")
    cells = pd.DataFrame(cells)
    arxiv = cells["dataset"].map(paper_dataset).eq("OGBN-Arxiv")
    info = (f"OGBN-Arxiv (excluded, as the paper): Grappa {cells[arxiv]['grappa'].mean():.2f}, "
            f"DGL-METIS {cells[arxiv]['metis'].mean():.2f}" if arxiv.any() else "")
    rows = cells[~arxiv]
    if rows.empty:
        raise NotMeasured(f"only OGBN-Arxiv stand-ins, which the paper excludes; {info}")
    value, spread = mean_spread(rows["grappa"])
    metis = float(rows["metis"].mean())
    return Measured(value, spread, SCALING_EFFICIENCY, rows, _note(
        f"DGL-METIS efficiency {metis:.2f} (paper 0.19-0.31)", info, _seeds(rows)),
        holds=bool(value > metis))


def _switch_share(table: pd.DataFrame) -> Measured:
    """Grappa's switch time over its epoch time with switches, the largest per partition
    count (workers); it holds if DGL-METIS ÷ Grappa epoch time with switches > 1."""
    rows = select(table, "Grappa", variant="Grappa")
    rows = rows.assign(share=rows["switch_s_per_epoch"] / rows["epoch_time_s"])
    rows = rows[rows["share"].notna()]
    if rows.empty:
        raise NotMeasured("no Grappa epoch time")
    by_parts = rows.groupby("workers")["share"].mean()
    parts, value = by_parts.idxmax(), float(by_parts.max())
    _, spread = mean_spread(rows["share"])
    try:
        paired = _paired(table)
        speedup = float((paired["epoch_time_s_metis"] / paired["epoch_time_s"]).mean())
    except NotMeasured:
        speedup = math.nan
    return Measured(value, spread, SWITCH_SHARE.get(int(parts), 0.12), rows,
                    _note(f"largest at {parts} partitions",
                          "no DGL-METIS cell" if math.isnan(speedup) else
                          f"DGL-METIS ÷ Grappa with switches {speedup:.3g}", _seeds(rows)),
                    holds=None if math.isnan(speedup) else bool(speedup > 1.0))


def _versus_grappa(column: str):
    def measure(table: pd.DataFrame) -> Measured:
        rows = select(table, "Cluster-GCN", system=CLUSTER_GCN)
        rows = rows[rows[column].notna()]
        plateau = ""
        if column == "acc_vs_grappa":
            rows, plateau = _at_plateau(rows, "_grappa")
        value, spread = mean_spread(rows[column])
        paper = (TABLE5[CLUSTER_GCN]["test_acc"] - TABLE5[GRAPPA]["test_acc"]
                 if column == "acc_vs_grappa" else
                 TABLE5[CLUSTER_GCN]["epoch_time_s"] / TABLE5[GRAPPA]["epoch_time_s"])
        other = sorted({d for d in rows["dataset"].astype(str)
                        if paper_dataset(d) != "OGBN-Products"})
        return Measured(value, spread, paper, rows, _note(
            f"{'/'.join(other)}, not OGBN-Products" if other else "", plateau, _seeds(rows)))
    return measure


CLAIMS: list[Claim] = [
    Claim(id="grappa-epoch-speedup", paper="Grappa",
          claim="Grappa's epoch time is on average 4× shorter than DGL-METIS's (up to 13×).",
          paper_value="4.24× mean, 1.0-13.3× (Table 3, matched cells)",
          figure="grappa_table3", measure=_epoch_speedup, band=ratio_band(1.33),
          direction=above(1.0), systems=SYSTEMS, where="§5.2.1, Table 3"),
    Claim(id="grappa-accuracy-depth-parity", paper="Grappa",
          claim="With 2 layers Grappa's test accuracy matches DGL-METIS's.",
          paper_value="-0.0015 (0.6894 vs 0.6909)", figure="grappa_table3",
          measure=_accuracy_gap((2,)), band=tolerance(0.01), direction=None,
          systems=SYSTEMS, dilated=False, accuracy=True, where="§5.2.2, Table 4"),
    Claim(id="grappa-accuracy-depth-deep", paper="Grappa",
          claim="With 3-4 layers Grappa's test accuracy is above DGL-METIS's.",
          paper_value="+0.042 (L3), +0.162 (L4)", figure="grappa_table3",
          measure=_accuracy_gap((3, 4)), band=fixed_band(0.01, math.inf),
          direction=above(0.0, 0.01), systems=SYSTEMS, dilated=False, accuracy=True,
          where="§5.2.2, Table 4"),
    Claim(id="grappa-scaling", paper="Grappa",
          claim="Grappa's epoch time scales almost linearly with partitions, DGL-METIS's not.",
          paper_value="~16× over 1→16 (efficiency ~1.0; DGL-METIS 0.19-0.31)",
          figure="grappa_fig4", measure=_scaling, band=fixed_band(0.8, math.inf),
          direction=None, systems=SYSTEMS, where="§5.3.1, Fig. 4"),
    Claim(id="grappa-switch-overhead", paper="Grappa",
          claim="Switching partitions costs at most 12 % of training time.",
          paper_value="4 / 10 / 12 % at 4 / 16 / 64 partitions", figure="grappa_table3",
          measure=_switch_share, band=fixed_band(0.0, 0.12),
          direction=None, systems=SYSTEMS, where="§5.4.2, Table 8",
          notes=("grappa_table3, not grappa_table8: the direction test needs DGL-METIS's "
                 "epoch time",)),
    Claim(id="grappa-vs-clustergcn-accuracy", paper="Grappa",
          claim="Grappa is more accurate than Cluster-GCN on GCN-2.",
          paper_value="-0.0273 (0.7390 vs 0.7663)", figure="grappa_table5",
          measure=_versus_grappa("acc_vs_grappa"), band=fixed_band(-math.inf, -0.01),
          direction=below(0.0, 0.01), systems=WITH_CLUSTERGCN, dilated=False,
          accuracy=True, where="§5.2.3, Table 5"),
    Claim(id="grappa-vs-clustergcn-epoch-ratio", paper="Grappa",
          claim="Cluster-GCN's epoch time is about half Grappa's on GCN-2.",
          paper_value="0.46 (1.2 s vs 2.6 s)", figure="grappa_table5",
          measure=_versus_grappa("epoch_time_vs_grappa"), band=ratio_band(1.33),
          direction=below(1.0), systems=WITH_CLUSTERGCN,
          where="§5.2.3, Table 5"),
]
