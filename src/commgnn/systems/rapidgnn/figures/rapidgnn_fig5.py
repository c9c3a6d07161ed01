"""RapidGNN Figure 5: remote feature fetches per epoch versus steady-cache size.

From the runs table: every ``rapidgnn`` run (any variant), remote rows per epoch (all
workers) fetched by the steps (cache misses) and including the cache fills, against
``n_hot``; one line per dataset / partitioning / workers / batch size / network (the
paper: products, 2 machines, batch sizes 1000-3000, 40 epochs). ``default`` runs of the
same cell are drawn as a horizontal reference. Counts are deterministic: one seed is
enough (the mean over seeds is drawn); of two variants with one ``n_hot`` the one that
ran more epochs is drawn.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.ticker import FuncFormatter

from commgnn.core.errors import NotApplicable
from commgnn.report.figures.plotting import save_figure
from commgnn.systems.rapidgnn.figures.rapidgnn_runs import run_ids

CELL = ["dataset", "partitioning", "workers", "batch_size", "network"]


def runs_behind(spec) -> bool:
    """The runs the caption describes: every RapidGNN run and the default reference."""
    return spec.base_system == "rapidgnn" or spec.system == "default"


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = pd.concat([pd.read_csv(path) for path in inputs], ignore_index=True)
    rapid = runs[runs["base_system"] == "rapidgnn"].copy()
    if rapid.empty:
        raise NotApplicable("no rapidgnn runs in the runs table: add rapidgnn (variants with "
                         "different n_hot) to the experiments")
    rapid["n_hot"] = rapid["option_n_hot"].fillna(0).astype(int)
    data = rapid.groupby([*CELL, "system", "n_hot"]).agg(
        step_remote_rows_per_epoch=("step_remote_rows_per_epoch", "mean"),
        remote_rows_per_epoch=("remote_rows_per_epoch", "mean"),
        remote_rpcs_per_epoch=("remote_rpcs_per_epoch", "mean"),
        epochs=("epochs", "max"), seeds=("seed", "nunique"),
        run_ids=("run_id", run_ids)).reset_index().sort_values([*CELL, "n_hot"])
    # one point per cache size: the variant that ran longest (e.g. a 40-epoch sweep point
    # beside a 10-epoch run of the same n_hot)
    longest = data.groupby([*CELL, "n_hot"])["epochs"].transform("max")
    data = data[data["epochs"] == longest].drop_duplicates([*CELL, "n_hot"])
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for cell, group in data.groupby(CELL):
        label = "/".join(map(str, cell[:4]))
        ax.plot(group["n_hot"], group["step_remote_rows_per_epoch"], marker="o",
                label=f"{label} (misses)")
        ax.plot(group["n_hot"], group["remote_rows_per_epoch"], marker="x", linestyle="--",
                label=f"{label} (+ cache fills)")
        base = runs[(runs["base_system"] == "default") &
                    (runs[CELL] == pd.Series(cell, index=CELL)).all(axis=1)]
        if not base.empty:
            ax.axhline(base["remote_rows_per_epoch"].mean(), color="grey", linestyle=":",
                       label=f"{label} default")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1e3:g}k" if x else "0"))
    ax.set_xlabel("steady cache size n_hot (rows)")
    ax.set_ylabel("remote rows fetched per epoch")
    ax.set_title("Remote feature fetches vs cache size")
    ax.legend(fontsize="x-small")
    fig.tight_layout()
    save_figure(fig, out_png)
    return data
