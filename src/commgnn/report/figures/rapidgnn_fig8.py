"""RapidGNN Figure 8 / §5.4: CPU and GPU energy per epoch and mean power per worker,
RapidGNN against DGL-METIS, in Table 3's cells (:func:`~commgnn.report.figures.
rapidgnn_table3.table_cells`); the target-machine model over target time (the
data of :mod:`~commgnn.report.figures.rapidgnn_table3`, which also has the host meter's
values). Error bars: the smallest and largest epoch."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from commgnn.report.figures.plotting import save_figure
from commgnn.report.figures.rapidgnn_runs import CELL, RAPIDGNN
from commgnn.report.figures.rapidgnn_table3 import BASELINE, TARGET, energy, table_cells

PANELS = (("mean_epoch_j", "energy per epoch (J)"), ("mean_power_w", "mean power (W)"))


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    data = energy(inputs)
    rows = table_cells(data) if not data.empty else data
    rows = rows[(rows["source"] == TARGET) & (rows["part"] != "total")] if not data.empty \
        else data
    fig, axes = plt.subplots(1, 2, figsize=(max(10, 1.2 * len(rows) / 2), 4))
    groups = rows.drop_duplicates([*CELL, "part"]).sort_values([*CELL, "part"]) \
        if not rows.empty else rows
    ticks = [f"{p.upper()}\n{d}\nB={b}\nw{w}" for p, d, b, w in
             zip(groups.get("part", []), groups.get("dataset", []),
                 groups.get("batch_size", []), groups.get("workers", []), strict=True)]
    for ax, (column, title) in zip(axes, PANELS, strict=True):
        for i, role in enumerate((RAPIDGNN, BASELINE)):
            if rows.empty:
                break
            values = groups[[*CELL, "part"]].merge(rows[rows["role"] == role],
                                                   on=[*CELL, "part"], how="left")
            error = None
            if column == "mean_epoch_j":
                error = [(values["mean_epoch_j"] - values["min_epoch_j"]).fillna(0),
                         (values["max_epoch_j"] - values["mean_epoch_j"]).fillna(0)]
            ax.bar([x + (i - 0.5) * 0.38 for x in range(len(groups))], values[column],
                   width=0.38, yerr=error, label=role, hatch="" if i == 0 else "//")
        ax.set_xticks(range(len(groups)), ticks, fontsize=6)
        ax.set_title(f"{title}, per worker, target model", fontsize=9)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="x-small")
    fig.tight_layout()
    save_figure(fig, out_png)
    return rows
