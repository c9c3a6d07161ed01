"""RapidGNN Figure 6 / §5.3: epoch-time speedup with more workers over the fewest (the
paper: 3 and 4 machines over 2), per dataset, RapidGNN and DGL-METIS; target time.

Runs of a role that share dataset, depth, batch size and network are compared across
their worker counts (groups with one worker count are left out), paired by seed; mean
and spread over the seeds both counts ran.
The paper's speedups over 2 machines: 3 machines 1.5 (products) to 1.6 (Reddit), 4
machines 1.7 to 2.1 (Reddit).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from commgnn.report.figures.plotting import TIME_NOTE, finish
from commgnn.systems.rapidgnn.figures.rapidgnn_runs import (
    RAPIDGNN,
    load_runs,
    plays_a_role,
    run_ids,
)

ROLES = (RAPIDGNN, "DGL-METIS")
SCALING = ["dataset", "paper_dataset", "layers", "batch_size", "network", "role"]
#: The paper's range of speedups over 2 machines.
PAPER = {3: (1.5, 1.6), 4: (1.7, 2.1)}

#: The runs the caption describes (``figure_setting`` in the workflow).
runs_behind = plays_a_role


def scaling(runs: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, role and worker count: epoch time and the speedup over the fewest
    workers of the same group (paired by seed)."""
    runs = runs[runs["role"].isin(ROLES)]
    rows = []
    for key, group in runs.groupby(SCALING, dropna=False):
        if group["workers"].nunique() < 2:  # nothing to scale against
            continue
        fewest = group["workers"].min()
        base = group[group["workers"] == fewest].set_index("seed")
        for workers, at in group.groupby("workers"):
            at = at.merge(base[["mean_epoch_time_s", "run_id"]], left_on="seed",
                          right_index=True, how="left", suffixes=("", "_base"))
            at = at.dropna(subset=["mean_epoch_time_s_base"])
            if at.empty:  # no seed ran at both worker counts
                continue
            speedup = at["mean_epoch_time_s_base"] / at["mean_epoch_time_s"]
            rows.append({**dict(zip(SCALING, key, strict=True)), "workers": workers,
                         "base_workers": fewest,
                         "epoch_time_s": at["mean_epoch_time_s"].mean(),
                         "speedup": speedup.mean(), "speedup_std": speedup.std(),
                         "seeds": at["seed"].nunique(),
                         "paper_speedup_range": "{}-{}".format(*PAPER[workers])
                         if key[-1] == RAPIDGNN and fewest == 2 and workers in PAPER else "",
                         "run_ids": run_ids(pd.concat([at["run_id"],
                                                       at["run_id_base"]]))})
    return pd.DataFrame(rows, columns=[*SCALING, "workers", "base_workers", "epoch_time_s",
                                       "speedup", "speedup_std", "seeds",
                                       "paper_speedup_range", "run_ids"])


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    data = scaling(load_runs(inputs))
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for (dataset, role, batch, net), curve in data.groupby(
            ["dataset", "role", "batch_size", "network"]):
        ax.errorbar(curve["workers"], curve["speedup"], yerr=curve["speedup_std"].fillna(0),
                    marker="o", linestyle="-" if role == RAPIDGNN else "--",
                    label=f"{role} {dataset} B={batch} {net}")
    for workers, (low, high) in PAPER.items():
        ax.vlines(workers, low, high, color="black", linewidth=4, alpha=0.3,
                  label="paper (over 2)" if workers == 3 else None)
    if not data.empty:
        ax.set_xticks(sorted(data["workers"].unique()))
    finish(fig, ax, out_png, "Scaling: epoch-time speedup over the fewest workers",
           "workers", f"speedup ({TIME_NOTE})")
    return data
