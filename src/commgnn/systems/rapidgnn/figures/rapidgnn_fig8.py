"""RapidGNN Figure 8 / §5.4: CPU and GPU energy per epoch and mean power per worker,
RapidGNN against DGL-METIS, in Table 3's cells (:func:`~commgnn.report.figures.
rapidgnn_table3.table_cells`); the target-machine model over target time (the
data of :mod:`~commgnn.systems.rapidgnn.figures.rapidgnn_table3`, which also has the host meter's
values). Error bars: the smallest and largest epoch."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from commgnn.report.figures.plotting import save_figure
from commgnn.systems.rapidgnn.figures.rapidgnn_runs import (
    CELL,
    RAPIDGNN,
    plays_a_role,
    role_bars,
)
from commgnn.systems.rapidgnn.figures.rapidgnn_table3 import (
    BASELINE,
    TARGET,
    energy,
    table_cells,
)

#: The runs the caption describes (``figure_setting`` in the workflow).
runs_behind = plays_a_role


def _epoch_range(values: pd.DataFrame) -> list[pd.Series]:
    """Whiskers from the smallest to the largest epoch."""
    return [(values["mean_epoch_j"] - values["min_epoch_j"]).fillna(0),
            (values["max_epoch_j"] - values["mean_epoch_j"]).fillna(0)]


PANELS = (("mean_epoch_j", "energy per epoch (J)"), ("mean_power_w", "mean power (W)"))


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    data = energy(inputs)
    rows = table_cells(data) if not data.empty else data
    rows = rows[(rows["source"] == TARGET) & (rows["part"] != "total")] if not data.empty \
        else data
    fig, axes = plt.subplots(1, 2, figsize=(max(10, 1.2 * len(rows) / 2), 4))
    for ax, (column, title) in zip(axes, PANELS, strict=True):
        if not rows.empty:
            role_bars(ax, rows, column, (RAPIDGNN, BASELINE), keys=[*CELL, "part"],
                      error=_epoch_range if column == "mean_epoch_j" else None)
        ax.set_title(f"{title}, per worker, target model", fontsize=9)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="x-small")
    fig.tight_layout()
    save_figure(fig, out_png)
    return rows
