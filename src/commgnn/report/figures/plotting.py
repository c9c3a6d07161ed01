"""Shared by the system figures: the cells runs are compared in, labels, bar charts."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from commgnn.data.store import GraphDataset, load_dataset
from commgnn.partition import Partition, load_partition
from commgnn.report.palette import MUTED, style_by_system

# Series no system ran (the papers' values, fits) draw from the same colour-blind-safe set.
plt.rcParams["axes.prop_cycle"] = matplotlib.cycler(color=list(MUTED))

#: Runs compared side by side share these.
CELL = ["dataset", "model", "layers", "workers", "batch_size", "network"]
#: Time columns: target seconds (raw ÷ time dilation), as in every summary.
TIME_NOTE = "target s (raw ÷ dilation)"


def finish(fig, ax, out_png: Path, title: str, xlabel: str | None, ylabel: str) -> None:
    """Label, legend, save and close a figure."""
    if xlabel is not None:
        ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize="x-small")
    fig.tight_layout()
    save_figure(fig, out_png)


def save_figure(fig, out_png: Path, dpi: int = 150, by_system: bool = True) -> None:
    """Write ``fig`` as ``out_png`` and, beside it, the same figure as PDF; close it.
    ``by_system``: first give each system's series its colour (``palette.style_by_system``;
    False where the figure styled them itself)."""
    if by_system:
        style_by_system(fig)
    fig.savefig(out_png, dpi=dpi)
    fig.savefig(Path(out_png).with_suffix(".pdf"))
    plt.close(fig)


def draw_table(ax, shown: pd.DataFrame, empty: str, fontsize: int = 7) -> None:
    """``shown`` as a matplotlib table on a bare axis (``empty`` when it has no rows)."""
    ax.axis("off")
    if shown.empty:
        ax.text(0.5, 0.5, empty, ha="center", va="center", transform=ax.transAxes)
        return
    table = ax.table(cellText=shown.values, colLabels=list(shown.columns),
                     loc="upper center", cellLoc="left")
    table.auto_set_font_size(False)
    table.set_fontsize(fontsize)
    table.auto_set_column_width(list(range(len(shown.columns))))


def save_table(shown: pd.DataFrame, out_png: Path, title: str, empty: str,
               width: float = 10, top: float = 0.6) -> None:
    """``shown`` drawn as a table under ``title`` (``empty`` when it has no rows), saved
    as :func:`save_figure` does."""
    fig, ax = plt.subplots(figsize=(width, top + 0.3 * max(1, len(shown))))
    draw_table(ax, shown, empty)
    ax.set_title(title, fontsize=8)
    fig.tight_layout()
    save_figure(fig, out_png)


def save_not_applicable(out_png: Path, name: str, reason: str) -> None:
    """The figure ``name`` drawn as the reason it does not apply to the runs."""
    fig, ax = plt.subplots(figsize=(8, 1.6))
    ax.axis("off")
    ax.text(0.5, 0.5, f"{name}: not applicable\n{reason}", ha="center", va="center",
            wrap=True, fontsize=8, transform=ax.transAxes)
    save_figure(fig, out_png, by_system=False)


def save_bars(frame: pd.DataFrame, out_png: Path, title: str, ylabel: str) -> None:
    """One bar group per row of ``frame``'s index, one bar per column."""
    fig, ax = plt.subplots(figsize=(6, 3.5))
    if frame.notna().any().any():
        frame.plot.bar(ax=ax, rot=0)
    else:  # e.g. no baseline in the same cell: say so instead of failing
        ax.text(0.5, 0.5, "no comparable runs", ha="center", va="center",
                transform=ax.transAxes)
    finish(fig, ax, out_png, title, None, ylabel)


def node_partitions(inputs: list[Path]) -> Iterator[tuple[Path, dict, GraphDataset, Partition]]:
    """The METIS/random partition directories among a figure's inputs (chunk partitions
    skipped), each with its ``meta.json``, its dataset and the loaded partition."""
    for directory in map(Path, inputs):
        meta = json.loads((directory / "meta.json").read_text())
        if meta["spec"]["method"] == "chunk":
            continue
        ds = load_dataset(directory.parents[2] / "datasets" / directory.parent.name)
        yield directory, meta, ds, load_partition(directory)
