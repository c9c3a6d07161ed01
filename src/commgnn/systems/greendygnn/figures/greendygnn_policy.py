"""GreenDyGNN §IV-C2 / §VI-D: the window policy's training in the calibrated simulator —
the learning curve (reward per episode and its 50-episode moving average, left) and the
simulated energy per congestion archetype of the policy, the reference window and the
best static action on held-out profiles (right, target-machine model in target time).

Inputs: GreenDyGNN control directories; those named ``policy`` are read
(``training.json``, written by ``commgnn train-policy``). One row of panels per workload.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from commgnn.report.figures.plotting import save_figure
from commgnn.systems.greendygnn.figures.greendygnn_runs import control_records

COLUMNS = ["workload", "archetype", "policy_j", "reference_j", "best_static_j",
           "best_static_window", "policy_vs_best_static", "policy_mean_window"]
#: Episodes in the learning curve's moving average.
SMOOTH = 50


def load(inputs: list[Path]) -> list[tuple[str, dict, pd.DataFrame]]:
    """(workload, training record, evaluation rows) for each ``policy`` directory with a
    ``training.json``; the workload is the control directory's key
    (``dataset/partitioning/model_b<batch>_<network>``)."""
    out = []
    for directory, record in control_records(inputs, "policy", "training.json"):
        workload = "/".join(directory.parts[-4:-1])
        rows = [{"workload": workload, "archetype": name, **{k: result.get(k, math.nan)
                 for k in COLUMNS[2:] if k != "policy_vs_best_static"}}
                for name, result in (record.get("evaluation") or {}).items()]
        frame = pd.DataFrame(rows, columns=COLUMNS)
        frame["policy_vs_best_static"] = (frame["policy_j"] - frame["best_static_j"]) \
            / frame["best_static_j"]
        out.append((workload, record, frame))
    return out


def _learning_curve(ax, workload: str, record: dict) -> None:
    rewards = pd.Series(record.get("episode_rewards", []), dtype=float)
    episodes = np.arange(1, len(rewards) + 1)
    ax.plot(episodes, rewards, color="C0", alpha=0.3, linewidth=0.8, label="episode")
    ax.plot(episodes, rewards.rolling(SMOOTH, min_periods=1).mean(), color="C0",
            label=f"moving mean ({SMOOTH})")
    ax.set_xlabel("episode")
    ax.set_ylabel("reward per episode")
    seconds = record.get("seconds", math.nan)
    ax.set_title(f"{workload}: {len(rewards)} episodes, "
                 f"{record.get('gradient_steps', '?')} gradient steps, "
                 f"{seconds:.1f} s training (wall s, this host)", fontsize=8)
    if len(rewards):
        ax.legend(fontsize="x-small")


def _energy_bars(ax, record: dict, frame: pd.DataFrame) -> None:
    reference = (record.get("env") or {}).get("reference_window", 16)
    x = np.arange(len(frame))
    width = 0.27
    bars = {"policy": frame["policy_j"], f"reference (W={reference})": frame["reference_j"],
            "best static": frame["best_static_j"]}
    for i, (label, values) in enumerate(bars.items()):
        ax.bar(x + (i - 1) * width, values, width, label=label, color=f"C{i}")
    for xi, (_, row) in zip(x, frame.iterrows(), strict=True):
        top = np.nanmax([row["policy_j"], row["reference_j"], row["best_static_j"]])
        ax.text(xi, top, f"{100 * row['policy_vs_best_static']:+.1f}%\n"
                f"(W*={row['best_static_window']})", ha="center", va="bottom", fontsize=6)
    ax.set_xticks(x, list(frame["archetype"]), rotation=30, ha="right", fontsize=7)
    ax.set_ylabel("simulated energy, J (target model)")
    ax.set_title("held-out profiles: policy vs static (policy − best static, %)", fontsize=8)
    ax.margins(y=0.2)
    ax.legend(fontsize="x-small")


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    policies = load(inputs)
    if not policies:
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.axis("off")
        ax.text(0.5, 0.5, "no data: no trained window policy", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_title("Window policy training (simulated energy, target model)")
        save_figure(fig, out_png)
        return pd.DataFrame(columns=COLUMNS)
    fig, axes = plt.subplots(len(policies), 2, figsize=(11, 3.8 * len(policies)),
                             squeeze=False)
    for (workload, record, frame), (left, right) in zip(policies, axes, strict=True):
        _learning_curve(left, workload, record)
        if frame.empty:
            right.axis("off")
            right.text(0.5, 0.5, "no evaluation", ha="center", va="center",
                       transform=right.transAxes)
        else:
            _energy_bars(right, record, frame)
    fig.tight_layout()
    save_figure(fig, out_png)
    frames = [p[2] for p in policies if not p[2].empty]
    if not frames:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(frames, ignore_index=True)[COLUMNS]
