"""GreenDyGNN Figure 4 / §VI-B: energy per epoch by method under congestion (GPU and CPU
parts of the target-machine model stacked), mean over seeds, per workload."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.report.figures.plotting import save_bars
from commgnn.systems.greendygnn.figures.greendygnn_runs import (
    ENERGY_NOTE,
    METHODS,
    WORKLOAD,
    load_runs,
)


def per_epoch(runs: pd.DataFrame, column: str) -> pd.Series:
    return runs[column] / runs["epochs"]


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = load_runs(inputs)
    runs = runs[runs["congested"]].copy()
    runs["gpu_j"] = per_epoch(runs, "energy_target_gpu_j")
    runs["cpu_j"] = per_epoch(runs, "energy_target_cpu_j")
    runs["total_j"] = runs["gpu_j"] + runs["cpu_j"]
    data = runs.groupby([*WORKLOAD, "network", "method", "label"], dropna=False).agg(
        gpu_j=("gpu_j", "mean"), cpu_j=("cpu_j", "mean"), total_j=("total_j", "mean"),
        total_std_j=("total_j", "std"), seeds=("seed", "nunique")).reset_index()
    data["order"] = data["method"].map({m: i for i, m in enumerate(METHODS)})
    data = data.sort_values(["order", "label"])
    cell = data["dataset"] + " b" + data["batch_size"].astype(str) + " " + data["network"]
    bars = data.assign(cell=cell).pivot_table(index="cell", columns="label",
                                              values="total_j", sort=False)
    save_bars(bars, out_png, "Energy under congestion", ENERGY_NOTE)
    return data.drop(columns="order")
