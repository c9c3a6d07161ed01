"""RapidGNN Figure 7 / §5.3: memory per worker, RapidGNN against DGL-METIS, per dataset
and worker count; mean over seeds of the largest worker's peak.

(a) the paper's GPU memory — the feature rows a worker keeps on its training device:
RapidGNN's two cache buffers and staged batches (``cache_bytes_max``,
``staged_bytes_max``) plus the largest step's input rows (``batch_feature_bytes_max``;
DGL-METIS has only these); (b) the paper's CPU memory — the process's peak resident set
(``peak_rss_bytes``: owned feature rows, partition, sampler, presample reader).
"""

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
    load_runs,
    plays_a_role,
    role_bars,
    run_ids,
)

ROLES = (RAPIDGNN, "DGL-METIS")
PANELS = (("device_feature_mb", "(a) feature rows on the device, MB"),
          ("rss_mb", "(b) process peak RSS, MB"))

#: The runs the caption describes (``figure_setting`` in the workflow).
runs_behind = plays_a_role


def memory(runs: pd.DataFrame) -> pd.DataFrame:
    """Per cell and role: the two memories of the module doc (MB), mean and spread."""
    runs = runs[runs["role"].isin(ROLES)].copy()
    system = sum(runs[c].fillna(0) if c in runs else 0
                 for c in ("cache_bytes_max", "staged_bytes_max"))
    runs["device_feature_mb"] = (system + runs["batch_feature_bytes_max"]) / 1e6
    runs["rss_mb"] = runs["peak_rss_bytes"] / 1e6
    return runs.groupby([*CELL, "role"]).agg(
        device_feature_mb=("device_feature_mb", "mean"),
        device_feature_std_mb=("device_feature_mb", "std"),
        rss_mb=("rss_mb", "mean"), rss_std_mb=("rss_mb", "std"),
        seeds=("seed", "nunique"), run_ids=("run_id", run_ids)).reset_index()


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    data = memory(load_runs(inputs))
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, (column, title) in zip(axes, PANELS, strict=True):
        role_bars(ax, data, column, ROLES,
                  error=lambda v, c=column: v[c.replace("_mb", "_std_mb")].fillna(0))
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize="x-small")
    fig.suptitle("Memory per worker (largest worker's peak)", fontsize=10)
    fig.tight_layout()
    save_figure(fig, out_png)
    return data
