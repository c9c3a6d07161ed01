"""RapidGNN Figure 4 / §5.2: mean MB of remote features per training step, RapidGNN
against DGL-METIS, per dataset and batch size, with the paper's values beside ours.

``mb_per_step``: the bytes the steps fetched (RapidGNN: the cache misses), over every
worker's steps; ``mb_incl_fills_per_step``: also RapidGNN's cache fills, spread over the
steps. ``reduction``: DGL-METIS over RapidGNN (step bytes), paired by seed.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from commgnn.report.figures.plotting import finish
from commgnn.systems.rapidgnn.figures.rapidgnn_runs import (
    CELL,
    RAPIDGNN,
    load_runs,
    main_cells,
    paired_ratio,
    plays_a_role,
    role_bars,
    run_ids,
)

BASELINE = "DGL-METIS"
#: Figure 4 of the paper (§5.2 text): (dataset, batch) -> (RapidGNN, DGL-METIS) MB/step.
PAPER = {
    ("OGBN-Papers", 1000): (1.5, 4.3), ("OGBN-Papers", 2000): (3.1, 8.3),
    ("OGBN-Papers", 3000): (4.6, 12.0),
    ("Reddit", 1000): (0.3, 6.8), ("Reddit", 2000): (0.6, 10.0), ("Reddit", 3000): (0.9, 14.0),
    ("OGBN-Products", 1000): (2.0, 4.8), ("OGBN-Products", 2000): (3.8, 8.8),
    ("OGBN-Products", 3000): (5.4, 12.1),
}

#: The runs the caption describes (``figure_setting`` in the workflow).
runs_behind = plays_a_role


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = main_cells(load_runs(inputs))
    runs = runs[runs["role"].isin([RAPIDGNN, BASELINE])].copy()
    runs["mb_per_step"] = runs["fetch_mb_per_step"]
    runs["mb_incl_fills_per_step"] = (runs["fetch_mb_per_step"] * runs["remote_bytes_per_epoch"]
                                      / runs["step_remote_bytes_per_epoch"])
    data = runs.groupby([*CELL, "paper_dataset", "role"], dropna=False).agg(
        mb_per_step=("mb_per_step", "mean"), mb_per_step_std=("mb_per_step", "std"),
        mb_incl_fills_per_step=("mb_incl_fills_per_step", "mean"),
        seeds=("seed", "nunique"), run_ids=("run_id", run_ids)).reset_index()
    reduction = paired_ratio(runs, "mb_per_step", BASELINE, RAPIDGNN)[
        [*CELL, "ratio", "ratio_std"]].rename(columns={"ratio": "reduction",
                                                       "ratio_std": "reduction_std"})
    data = data.merge(reduction, on=CELL, how="left")
    data["paper_mb_per_step"] = [
        PAPER.get((d, b), (float("nan"),) * 2)[0 if r == RAPIDGNN else 1]
        for d, b, r in zip(data["paper_dataset"], data["batch_size"], data["role"],
                           strict=True)]
    fig, ax = plt.subplots(figsize=(7, 3.8))
    bars = role_bars(ax, data, "mb_per_step", (RAPIDGNN, BASELINE),
                     error=lambda v: v["mb_per_step_std"].fillna(0))
    for i, (x, values) in enumerate(bars.values()):
        ax.scatter(x, values["paper_mb_per_step"], marker="x", color="black", zorder=3,
                   label="paper" if i == 0 else None)
    finish(fig, ax, out_png, "Remote feature MB per step (step fetches)", None, "MB per step")
    return data
