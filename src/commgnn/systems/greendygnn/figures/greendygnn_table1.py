"""GreenDyGNN Table I / §VI-G: GPU, CPU and total energy (target-machine model, per
epoch, all workers) and epoch time (target seconds) by method and batch size under
congestion, mean ± std over seeds; drawn as a table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.report.figures.plotting import save_table
from commgnn.systems.greendygnn.figures.greendygnn_runs import METHODS, WORKLOAD, load_runs


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = load_runs(inputs)
    runs = runs[runs["congested"]].copy()
    for part in ("gpu", "cpu"):
        runs[f"{part}_kj"] = runs[f"energy_target_{part}_j"] / runs["epochs"] / 1e3
    runs["total_kj"] = runs["gpu_kj"] + runs["cpu_kj"]
    keys = [*WORKLOAD, "network", "method", "label"]
    data = runs.groupby(keys, dropna=False).agg(
        gpu_kj=("gpu_kj", "mean"), cpu_kj=("cpu_kj", "mean"), total_kj=("total_kj", "mean"),
        total_std_kj=("total_kj", "std"), epoch_time_s=("mean_epoch_time_s", "mean"),
        epoch_time_std_s=("mean_epoch_time_s", "std"), seeds=("seed", "nunique"),
    ).reset_index()
    data["order"] = data["method"].map({m: i for i, m in enumerate(METHODS)})
    data = data.sort_values(["dataset", "batch_size", "network", "order", "label"]).drop(
        columns="order")
    shown = pd.DataFrame({
        "dataset": data["dataset"], "B": data["batch_size"],
        "network": data["network"], "method": data["label"],
        "GPU kJ": data["gpu_kj"].map("{:.3f}".format),
        "CPU kJ": data["cpu_kj"].map("{:.3f}".format),
        "total kJ": [f"{m:.3f} ± {0 if pd.isna(s) else s:.3f}"
                     for m, s in zip(data["total_kj"], data["total_std_kj"], strict=True)],
        "epoch s": [f"{m:.3f} ± {0 if pd.isna(s) else s:.3f}"
                    for m, s in zip(data["epoch_time_s"], data["epoch_time_std_s"],
                                    strict=True)],
        "seeds": data["seeds"]})
    save_table(shown, out_png, "Energy per epoch (target model) and epoch time (target s) "
               "under congestion", "no congested runs", width=10, top=0.4)
    return data
