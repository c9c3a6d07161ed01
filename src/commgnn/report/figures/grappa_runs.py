"""Shared by the Grappa figures: the runs table with each run's Grappa variant and the
cells (dataset, model, depth, partitions, network) runs are compared in."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

#: Runs compared side by side share these.
CELL = ["dataset", "model", "layers", "workers", "batch_size", "network"]
#: Time columns: target seconds (raw ÷ time dilation), as in every summary.
TIME_NOTE = "target s (raw ÷ dilation)"


def variant(row: pd.Series) -> str:
    """Grappa's ablation name of a run (Table 7), or ``<system> (<partition method>)``."""
    if row["base_system"] != "grappa":
        return f"{row['base_system']} ({row['partitioning']})"
    parts = []
    if row.get("option_estimator") == "none":
        parts.append("UW")
    elif row.get("option_estimator") == "harmonic":
        parts.append("H")  # |S| x Eq. 18
    elif row.get("option_estimator") == "uniform":
        parts.append("Eq12")  # the minimally biased factor (paper's Table 10)
    if row.get("option_switching") == "fixed":
        parts.append("FP")
    if float(row.get("option_remote_edge_fraction") or 0) > 0:
        parts.append(f"{round(100 * float(row['option_remote_edge_fraction']))}S")
    if row.get("option_mode") == "fullgraph":
        parts.append("full-graph")
    if int(row.get("option_active_workers") or 0):
        parts.append(f"M={int(row['option_active_workers'])}")
    return "-".join(["Grappa", *parts])


def load_runs(inputs: list[Path]) -> pd.DataFrame:
    """The runs tables, with ``variant`` and the epoch time without Grappa's switches."""
    runs = pd.concat([pd.read_csv(path) for path in inputs], ignore_index=True)
    if not (runs["base_system"] == "grappa").any():
        raise ValueError("no grappa runs in the runs table: add grappa to the experiments")
    runs["variant"] = runs.apply(variant, axis=1)
    switch = runs.get("switch_s_per_epoch", 0.0)
    runs["switch_s_per_epoch"] = pd.Series(switch, index=runs.index).fillna(0.0)
    runs["epoch_time_excl_switch_s"] = runs["mean_epoch_time_s"] - runs["switch_s_per_epoch"]
    return runs


def finish(fig, ax, out_png: Path, title: str, xlabel: str | None, ylabel: str) -> None:
    """Label, legend, save and close a Grappa figure."""
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="x-small")
    fig.tight_layout()
    fig.savefig(out_png, dpi=150)
    plt.close(fig)


def save_bars(frame: pd.DataFrame, out_png: Path, title: str, ylabel: str) -> None:
    """One bar group per row of ``frame``'s index, one bar per column."""
    fig, ax = plt.subplots(figsize=(6, 3.5))
    if frame.notna().any().any():
        frame.plot.bar(ax=ax, rot=0)
    else:  # e.g. no baseline in the same cell: say so instead of failing
        ax.text(0.5, 0.5, "no comparable runs", ha="center", va="center",
                transform=ax.transAxes)
    finish(fig, ax, out_png, title, None, ylabel)
