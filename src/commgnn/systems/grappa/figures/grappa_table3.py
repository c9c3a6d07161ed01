"""Grappa Table 3 / §5.2.1: epoch time and test accuracy of every system by model and depth.

From the runs table: per cell (dataset, model, depth, partitions, batch, network) and
variant, the mean over seeds of the epoch time (target seconds, with and without Grappa's
switches — the paper's epoch time excludes them), the switch time per epoch, the total
time and the test accuracy, with the spread over seeds, and where the runs recorded model
selection the largest gain of their last 3 evaluations (``val_gain_last3``: unknown if any
run has none; a plateau near 0); ``speedup`` is the cell's
``default`` epoch time (the first default variant) over the row's, seeds paired by mean.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.report.figures.plotting import CELL, TIME_NOTE, save_bars
from commgnn.systems.grappa.figures.grappa_runs import load_runs, plateau_aggregation


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = load_runs(inputs)
    grouped = runs.groupby([*CELL, "variant"])
    data = grouped.agg(
        seeds=("seed", "nunique"),
        **plateau_aggregation(runs),
        epoch_time_s=("mean_epoch_time_s", "mean"),
        epoch_time_std_s=("mean_epoch_time_s", "std"),
        epoch_time_excl_switch_s=("epoch_time_excl_switch_s", "mean"),
        switch_s_per_epoch=("switch_s_per_epoch", "mean"),
        total_time_s=("total_time_s", "mean"),
        test_acc=("test_acc", "mean"),
        test_acc_std=("test_acc", "std"),
    ).reset_index()
    baseline = data[data["variant"].str.startswith("default")].groupby(CELL)[
        "epoch_time_s"].first().rename("default_epoch_time_s")
    data = data.join(baseline, on=CELL)
    data["speedup_vs_default"] = data["default_epoch_time_s"] / data["epoch_time_excl_switch_s"]
    grappa = data[data["variant"] == "Grappa"]
    bars = grappa.pivot_table(index="layers", columns="dataset", values="speedup_vs_default")
    save_bars(bars, out_png,
              "Grappa epoch time vs default (excl. switches)",
              f"default ÷ Grappa epoch time ({TIME_NOTE})")
    return data
