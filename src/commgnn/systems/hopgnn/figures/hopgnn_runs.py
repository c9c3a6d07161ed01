"""Shared by the HopGNN figures: the runs table with each run's HopGNN variant (the
paper's names) and per-seed ratios against ``default`` with the global schedule."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.core.errors import NotApplicable
from commgnn.report.figures.plotting import CELL
from commgnn.report.tables import concat_runs_tables

#: The baseline every HopGNN figure is normalised to (the paper's DGL).
BASELINE = "DGL"
#: HopGNN compares runs on the same partitioning (unlike Grappa's chunks against METIS).
HOP_CELL = [*CELL, "partitioning"]


def variant(row: pd.Series) -> str:
    """The paper's name of a run: DGL (``default``, global schedule), LO (``default``,
    owned schedule), Naive, +MG, +PG, All (HopGNN), ``p3+pipeline`` (P3 with batches in
    flight); other systems by name."""
    if row["base_system"] == "default":
        return BASELINE if row.get("option_schedule") == "global" else "LO"
    if row["base_system"] == "p3" and _positive(row.get("option_pipeline")):
        return "p3+pipeline"
    if row["base_system"] != "hopgnn":
        return str(row["base_system"])
    if row.get("option_mode") == "naive":
        return "Naive"
    merged = row.get("option_merging") != "none"
    if not _true(row.get("option_pregather")):
        return "+MG+merge" if merged else "+MG"
    return "All" if merged else "+PG"


def _positive(value) -> bool:
    return not pd.isna(value) and float(value) > 0


def _true(value) -> bool:
    return str(value).lower() in ("true", "1", "1.0")


def load_runs(inputs: list[Path]) -> pd.DataFrame:
    """The runs tables with ``variant`` and ``miss_rate`` (remote input rows over all input
    rows: ``default`` from its fetch counts, HopGNN before pre-gathering)."""
    runs = concat_runs_tables(inputs)
    if not (runs["base_system"] == "hopgnn").any():
        raise NotApplicable("no hopgnn runs in the runs table: add hopgnn to the experiments")
    runs["variant"] = runs.apply(variant, axis=1)
    default = runs["base_system"] == "default"
    runs["miss_rate"] = float("nan")
    if "miss_rows_per_epoch" in runs:
        # Naive reads every row where it lives: it gathers nothing, so it has no miss rate
        hop = (runs["base_system"] == "hopgnn") & (runs["variant"] != "Naive")
        runs.loc[hop, "miss_rate"] = (runs.loc[hop, "miss_rows_per_epoch"]
                                      / runs.loc[hop, "input_rows_per_epoch"])
    if "local_rows_per_epoch" in runs:
        runs.loc[default, "miss_rate"] = runs.loc[default, "step_remote_rows_per_epoch"] / (
            runs.loc[default, "step_remote_rows_per_epoch"]
            + runs.loc[default, "local_rows_per_epoch"])
    return runs


def with_baseline(runs: pd.DataFrame, column: str) -> pd.DataFrame:
    """``runs`` with ``baseline``: ``column`` of the same seed's DGL run on the same
    partitioning, else — for a system placed on a partitioning DGL did not run (P3 on a
    random one) — of the same cell's DGL run when DGL ran on one partitioning only."""
    dgl = runs[runs["variant"] == BASELINE]
    base = dgl.set_index([*HOP_CELL, "seed"])[column]
    rows = runs.join(base.rename("baseline"), on=[*HOP_CELL, "seed"])
    single = dgl.groupby(CELL)["partitioning"].transform("nunique") == 1
    other = dgl[single].set_index([*CELL, "seed"])[column]
    fallback = runs.join(other.rename("other"), on=[*CELL, "seed"])["other"]
    return rows.assign(baseline=rows["baseline"].fillna(fallback))


def against_baseline(runs: pd.DataFrame, column: str) -> pd.DataFrame:
    """Per cell and variant: ``column`` over the same seed's DGL run (``ratio``,
    :func:`with_baseline`) and its inverse (``inverse``: e.g. a speedup), means and spreads
    over seeds, and the values."""
    rows = with_baseline(runs, column)
    rows["ratio"] = rows[column] / rows["baseline"]
    rows["inverse"] = 1 / rows["ratio"]
    return rows.dropna(subset=["ratio"]).groupby([*HOP_CELL, "variant"]).agg(
        ratio=("ratio", "mean"), ratio_std=("ratio", "std"), inverse=("inverse", "mean"),
        inverse_std=("inverse", "std"), seeds=("seed", "nunique"),
        value=(column, "mean"), value_std=(column, "std")).reset_index()


def epoch_time_vs_dgl(runs: pd.DataFrame, variants: tuple[str, ...]) -> pd.DataFrame:
    """:func:`against_baseline` of the epoch time for ``variants``, named columns:
    ``epoch_time_s`` (± ``_std_s``), ``time_vs_dgl`` and ``speedup_vs_dgl`` (± ``_std``)."""
    data = against_baseline(runs[runs["variant"].isin(variants)], "mean_epoch_time_s")
    return data.rename(columns={"value": "epoch_time_s", "value_std": "epoch_time_std_s",
                                "ratio": "time_vs_dgl", "ratio_std": "time_vs_dgl_std",
                                "inverse": "speedup_vs_dgl",
                                "inverse_std": "speedup_vs_dgl_std"})
