"""RapidGNN Figure 9 / §5.5: training accuracy per epoch (the epoch's seeds predicted
right, all workers), RapidGNN against the baselines, one panel per dataset (rows) and
batch size (columns); mean over seeds, shaded: ± one standard deviation. Proposition 3.1:
the curves of deterministic presampling and the hot cache match the baselines'."""

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
    ROLES,
    epoch_rows,
    load_runs,
    plays_a_role,
    run_ids,
    split_inputs,
)

#: The runs the caption describes (``figure_setting`` in the workflow).
runs_behind = plays_a_role


def curves(inputs: list[Path]) -> pd.DataFrame:
    """Per cell with a RapidGNN run, role and epoch: training accuracy, mean and spread
    over seeds, with the run ids; per dataset and batch size only the cell with the most
    roles (then workers), one panel each."""
    runs = load_runs(inputs)
    runs = runs[runs["role"].notna()].set_index("run_id")
    epochs = epoch_rows(split_inputs(inputs)["run_dirs"])
    epochs = epochs[epochs["run_id"].isin(runs.index)]
    epochs = epochs.join(runs["role"], on="run_id")
    data = epochs.groupby([*CELL, "role", "epoch"]).agg(
        train_acc=("train_acc", "mean"), train_acc_std=("train_acc", "std"),
        train_loss=("train_loss", "mean"), seeds=("seed", "nunique"),
        run_ids=("run_id", run_ids)).reset_index()
    with_rapid = data[data["role"] == RAPIDGNN][CELL].drop_duplicates()
    data = data.merge(with_rapid, on=CELL)
    # one panel per dataset and batch size: the cell with the most baselines, then workers
    roles = data.groupby(CELL)["role"].nunique().rename("roles").reset_index()
    best = roles.sort_values(["roles", "workers"]).groupby(
        ["dataset", "batch_size"]).tail(1)[CELL]
    return data.merge(best, on=CELL)


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    data = curves(inputs)
    panels = data[CELL].drop_duplicates().sort_values(CELL)
    datasets = list(dict.fromkeys(panels["dataset"]))
    batches = sorted(panels["batch_size"].unique())
    fig, axes = plt.subplots(max(1, len(datasets)), max(1, len(batches)), squeeze=False,
                             figsize=(3.2 * max(1, len(batches)), 2.6 * max(1, len(datasets))))
    for _, panel in panels.iterrows():
        ax = axes[datasets.index(panel["dataset"])][batches.index(panel["batch_size"])]
        cell = data.merge(panel.to_frame().T.astype(data[CELL].dtypes.to_dict()), on=CELL)
        for role in [r for r in ROLES if r in set(cell["role"])]:
            curve = cell[cell["role"] == role]
            ax.plot(curve["epoch"], curve["train_acc"], marker=".", label=role)
            spread = curve["train_acc_std"].fillna(0)
            ax.fill_between(curve["epoch"], curve["train_acc"] - spread,
                            curve["train_acc"] + spread, alpha=0.2)
        ax.set_title(f"{panel['dataset']}, B={panel['batch_size']}, w{panel['workers']}",
                     fontsize=8)
        ax.set_xlabel("epoch", fontsize=7)
        ax.set_ylabel("training accuracy", fontsize=7)
        ax.legend(fontsize="xx-small")
    fig.tight_layout()
    save_figure(fig, out_png)
    return data
