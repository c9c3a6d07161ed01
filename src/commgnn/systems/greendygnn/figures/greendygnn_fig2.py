"""GreenDyGNN Figure 2 / §II-C: energy against the rebuild window W, clean and congested
(the U-shape whose minimum moves to smaller W under congestion) — GreenDyGNN-static runs
at each W, mean and spread over seeds; the energy-optimal W per curve is marked, chosen on
the seeds every W of the curve ran (``optimum_seeds``; 0: none shared, all seeds decide)."""

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
    seed_matched_best,
    seed_spread,
)


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = load_runs(inputs)
    static = runs[runs["method"] == "GreenDyGNN-static"]
    data = seed_spread(static, [*WORKLOAD, "network", "congested", "window"], ENERGY)
    data["optimal"] = False
    data["optimum_seeds"] = 0
    keys = [*WORKLOAD, "network"]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for key, curve in data.groupby(keys, dropna=False):
        curve = curve.dropna(subset=["mean"]).sort_values("window")
        if curve.empty:  # e.g. runs recorded before the energy model
            continue
        window, seeds = seed_matched_best(
            static.merge(curve[keys].drop_duplicates(), on=keys), ENERGY)
        match = curve.index[curve["window"] == window]
        best = match[0] if len(match) else curve["mean"].idxmin()  # no window recorded
        data.loc[best, ["optimal", "optimum_seeds"]] = [True, seeds]
        label = f"{key[0]} b{key[4]} {key[-1]}"
        line = ax.errorbar(curve["window"], curve["mean"], yerr=curve["std"].fillna(0),
                           marker="o", capsize=3, label=label)
        ax.plot([curve.loc[best, "window"]], [curve.loc[best, "mean"]], marker="*",
                markersize=14, color=line[0].get_color())
    ax.set_xscale("log", base=2)
    finish(fig, ax, out_png, "Energy vs rebuild window (★ = optimum)", "window W (steps)",
           ENERGY_NOTE)
    return data
