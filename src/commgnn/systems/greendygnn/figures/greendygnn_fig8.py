"""GreenDyGNN Figure 8 / §VI-E: the calibrated simulator against held-out real runs —
relative error of the predicted mean step time over a window × injected-delay grid (left,
heat map) and the predicted curves (lines) with the measured points (squares) per delay
(right). Step times are target seconds (raw ÷ time dilation).

Inputs: GreenDyGNN control directories; those named ``validation`` are read
(``validation.json``, written by ``commgnn validate-simulator``). One row of panels per
workload.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from commgnn.report.figures.plotting import save_figure
from commgnn.systems.greendygnn.figures.greendygnn_runs import control_records

COLUMNS = ["workload", "window", "delay_ms", "measured_s", "predicted_s", "error"]
#: GreenDyGNN §VI-E: "Errors stay below 5% across the full operating range, with a mean
#: of 2.8%."
PAPER = "paper: mean 2.8%, max < 5%"


def workload_name(directory: Path, record: dict) -> str:
    """``dataset/partitioning/model_b<batch>_<network>`` (the control directory's key)."""
    w = record.get("workload") or {}
    if all(k in w for k in ("dataset", "partitioning", "model", "batch_size", "network")):
        return (f"{w['dataset']}/{w['partitioning']}/{w['model']}_b{w['batch_size']}_"
                f"{w['network']}")
    return "/".join(directory.parts[-4:-1])


def load(inputs: list[Path]) -> list[tuple[str, dict, pd.DataFrame]]:
    """(workload, validation record, points) for each ``validation`` directory with a
    ``validation.json``, in input order."""
    out = []
    for directory, record in control_records(inputs, "validation", "validation.json"):
        points = pd.DataFrame(record.get("points", []),
                              columns=[c for c in COLUMNS if c != "workload"])
        name = workload_name(directory, record)
        points.insert(0, "workload", name)
        out.append((name, record, points))
    return out


def _heat_map(ax, points: pd.DataFrame) -> None:
    grid = points.pivot_table(index="delay_ms", columns="window", values="error",
                              aggfunc="mean") * 100
    image = ax.imshow(grid.values, origin="lower", aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(grid.columns)), [str(int(w)) for w in grid.columns])
    ax.set_yticks(range(len(grid.index)), [f"{d:g}" for d in grid.index])
    ax.set_xlabel("window W (log2)")
    ax.set_ylabel("injected one-way delay, ms (target)")
    high = np.nanmax(grid.values) if grid.notna().any().any() else 0.0
    for i in range(grid.shape[0]):
        for j in range(grid.shape[1]):
            value = grid.values[i, j]
            if not np.isnan(value):
                ax.text(j, i, f"{value:.1f}", ha="center", va="center", fontsize=7,
                        color="black" if value > 0.6 * high else "white")
    ax.figure.colorbar(image, ax=ax, label="relative error, %")


def _curves(ax, points: pd.DataFrame) -> None:
    for index, (delay, curve) in enumerate(points.sort_values("window").groupby("delay_ms")):
        color = f"C{index % 10}"
        ax.plot(curve["window"], curve["predicted_s"], color=color, marker=None,
                label=f"{delay:g} ms")
        ax.plot(curve["window"], curve["measured_s"], color=color, marker="s",
                linestyle="none", markersize=4)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("window W")
    ax.set_ylabel("mean step time, target s (raw ÷ dilation)")
    ax.set_title("predicted (lines) vs measured (squares)", fontsize=8)
    ax.legend(fontsize="x-small", title="delay", title_fontsize="x-small")


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    validations = [v for v in load(inputs) if not v[2].empty]
    if not validations:
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.axis("off")
        ax.text(0.5, 0.5, "no data: no simulator validation", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_title(f"Simulator validation, step time in target s ({PAPER})")
        save_figure(fig, out_png)
        return pd.DataFrame(columns=COLUMNS)
    fig, axes = plt.subplots(len(validations), 2, figsize=(10, 3.8 * len(validations)),
                             squeeze=False)
    for (workload, record, points), (left, right) in zip(validations, axes, strict=True):
        mean_error = record.get("mean_error", float(points["error"].mean()))
        max_error = record.get("max_error", float(points["error"].max()))
        _heat_map(left, points)
        left.set_title(f"{workload}: prediction error, mean {100 * mean_error:.1f}%, "
                       f"max {100 * max_error:.1f}%\n({PAPER})", fontsize=8)
        _curves(right, points)
    fig.suptitle("Simulator validation: mean step time, target seconds", fontsize=9)
    fig.tight_layout()
    save_figure(fig, out_png)
    return pd.concat([v[2] for v in validations], ignore_index=True)[COLUMNS]
