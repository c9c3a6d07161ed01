"""GreenDyGNN Figure 2 / §II-C: energy against the rebuild window W, clean and congested
(the U-shape whose minimum moves to smaller W under congestion) — GreenDyGNN-static runs
at each W, mean and spread over seeds; the energy-optimal W per curve is marked."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from commgnn.report.figures.plotting import finish
from commgnn.systems.greendygnn.figures.greendygnn_runs import (
    ENERGY,
    ENERGY_NOTE,
    WORKLOAD,
    load_runs,
    seed_spread,
)


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = load_runs(inputs)
    static = runs[runs["method"] == "GreenDyGNN-static"]
    data = seed_spread(static, [*WORKLOAD, "network", "congested", "window"], ENERGY)
    data["optimal"] = False
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for key, curve in data.groupby([*WORKLOAD, "network"], dropna=False):
        curve = curve.dropna(subset=["mean"]).sort_values("window")
        if curve.empty:  # e.g. runs recorded before the energy model
            continue
        best = curve["mean"].idxmin()
        data.loc[best, "optimal"] = True
        label = f"{key[0]} b{key[4]} {key[-1]}"
        line = ax.errorbar(curve["window"], curve["mean"], yerr=curve["std"].fillna(0),
                           marker="o", capsize=3, label=label)
        ax.plot([curve.loc[best, "window"]], [curve.loc[best, "mean"]], marker="*",
                markersize=14, color=line[0].get_color())
    ax.set_xscale("log", base=2)
    finish(fig, ax, out_png, "Energy vs rebuild window (★ = optimum)", "window W (steps)",
           ENERGY_NOTE)
    return data
