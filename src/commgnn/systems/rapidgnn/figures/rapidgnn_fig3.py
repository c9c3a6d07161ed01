"""RapidGNN Figure 3: frequency distribution of remote feature accesses per node.

From the presampled per-epoch access counts of every worker (epoch 0): how many remote
nodes were fetched by exactly ``k`` of the epoch's batches, on log-log axes — the long
tail the steady cache exploits.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from commgnn.report.figures.plotting import save_figure
from commgnn.sampling.presample import frequencies, read_presample_meta


def runs_behind(spec) -> bool:
    """The runs the caption describes: those reading the presamples (RapidGNN's)."""
    return spec.base_system == "rapidgnn"


def access_histogram(presample_dir: Path, epoch: int = 0) -> pd.DataFrame:
    """Rows ``(accesses, nodes)``: remote nodes accessed by exactly ``accesses`` batches."""
    meta = read_presample_meta(presample_dir)
    counts = [frequencies(presample_dir, int(w), epoch)[1] for w in meta["workers"]]
    values, nodes = np.unique(np.concatenate(counts), return_counts=True)
    return pd.DataFrame({"accesses": values, "nodes": nodes})


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    frames = []
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for directory in map(Path, inputs):
        label = f"{directory.parent.parent.name}/{directory.parent.name}/{directory.name}"
        data = access_histogram(directory).assign(presample=label)
        frames.append(data)
        ax.loglog(data["accesses"], data["nodes"], marker=".", linestyle="none", label=label)
    ax.set_xlabel("batches accessing the node in one epoch")
    ax.set_ylabel("remote nodes")
    ax.set_title("Remote feature accesses per node (epoch 0)")
    ax.legend(fontsize="small")
    fig.tight_layout()
    save_figure(fig, out_png)
    return pd.concat(frames, ignore_index=True)
