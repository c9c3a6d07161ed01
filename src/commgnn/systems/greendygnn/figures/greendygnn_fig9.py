"""GreenDyGNN Figure 9 / §VI-F: cumulative energy over epochs under congestion, by
method (target-machine model, all workers), mean over seeds."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from commgnn.core.errors import NotApplicable
from commgnn.report.figures.plotting import finish
from commgnn.systems.greendygnn.figures.greendygnn_runs import METHODS, WORKLOAD, epoch_rows


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    rows = epoch_rows(inputs)
    if rows.empty or not (rows["base_system"] == "greendygnn").any():
        raise NotApplicable("no greendygnn runs among the figure's run directories")
    rows = rows[rows["congested"]]
    data = rows.groupby([*WORKLOAD, "network", "method", "label", "epoch"],
                        dropna=False).agg(
        energy_target_cum_j=("energy_target_cum_j", "mean"),
        energy_target_cum_std_j=("energy_target_cum_j", "std"),
        seeds=("seed", "nunique")).reset_index()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    order = {m: i for i, m in enumerate(METHODS)}
    cells = data["dataset"] + " b" + data["batch_size"].astype(str) + " " + data["network"]
    for (cell, _method, label), curve in sorted(
            data.groupby([cells, "method", "label"]),
            key=lambda kv: (kv[0][0], order.get(kv[0][1], 99), kv[0][2])):
        ax.plot(curve["epoch"], curve["energy_target_cum_j"] / 1e3, marker=".",
                label=f"{label} ({cell})")
    finish(fig, ax, out_png, "Cumulative energy under congestion", "epoch",
           "kJ, target model (raw time ÷ dilation)")
    return data
