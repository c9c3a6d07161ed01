"""Shared by the Grappa figures: the runs table with each run's Grappa variant."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.core.errors import NotApplicable
from commgnn.report.tables import concat_runs_tables


def variant(row: pd.Series) -> str:
    """Grappa's ablation name of a run (Table 7; ``iso``: strict isolation,
    ``chunk_halo_hops: 0``), or ``<system> (<partition method>)``."""
    if row["base_system"] != "grappa":
        return f"{row['base_system']} ({row['partitioning']})"
    parts = []
    if str(row.get("option_chunk_halo_hops")) in ("0", "0.0"):
        parts.append("iso")  # strict isolation: no halo (the paper's Grappa has its k-hop one)
    if row.get("option_estimator") == "none":
        parts.append("UW")
    elif row.get("option_estimator") == "harmonic":
        parts.append("H")  # |S| x Eq. 18
    elif row.get("option_estimator") == "uniform":
        parts.append("Eq12")  # the minimally biased factor (paper's Table 10)
    if row.get("option_switching") == "fixed":
        parts.append("FP")
    if float(row.get("option_remote_edge_fraction") or 0) > 0:
        parts.append(f"{round(100 * float(row['option_remote_edge_fraction']))}S")
    if row.get("option_mode") == "fullgraph":
        parts.append("full-graph")
    if int(row.get("option_active_workers") or 0):
        parts.append(f"M={int(row['option_active_workers'])}")
    return "-".join(["Grappa", *parts])


def plateau_aggregation(runs: pd.DataFrame) -> dict:
    """The named aggregation of a per-cell table's plateau test: the largest
    ``val_gain_last3`` over the cell's runs (unknown if any run has none); nothing for runs
    from before model selection (no such column)."""
    if "val_gain_last3" not in runs:
        return {}
    return {"val_gain_last3": ("val_gain_last3", lambda gains: gains.max(skipna=False))}


def load_runs(inputs: list[Path]) -> pd.DataFrame:
    """The runs tables, with ``variant`` and the epoch time without Grappa's switches."""
    runs = concat_runs_tables(inputs)
    if not (runs["base_system"] == "grappa").any():
        raise NotApplicable("no grappa runs in the runs table: add grappa to the experiments")
    switch = pd.Series(runs.get("switch_s_per_epoch", 0.0), index=runs.index).fillna(0.0)
    # copied once and extended in one assign: inserting column by column into the wide,
    # concatenated runs table fragments it (a pandas warning on every figure)
    return runs.assign(variant=runs.apply(variant, axis=1), switch_s_per_epoch=switch,
                       epoch_time_excl_switch_s=runs["mean_epoch_time_s"] - switch)
