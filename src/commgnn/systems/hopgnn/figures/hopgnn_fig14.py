"""HopGNN Figure 14 / §7.3: miss rate of feature gathering — remote input rows over all
input rows — of DGL (``default``, global schedule) and of HopGNN's micrographs (before
pre-gathering removes repeats), mean and spread over seeds."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.report.figures.plotting import save_bars
from commgnn.systems.hopgnn.figures.hopgnn_runs import HOP_CELL, load_runs


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = load_runs(inputs).dropna(subset=["miss_rate"])
    data = runs.groupby([*HOP_CELL, "variant"]).agg(
        miss_rate=("miss_rate", "mean"), miss_rate_std=("miss_rate", "std"),
        seeds=("seed", "nunique")).reset_index()
    label = data["dataset"] + " " + data["model"]
    save_bars(data.assign(cell=label).pivot_table(index="cell", columns="variant",
                                                  values="miss_rate"),
              out_png, "Miss rate of feature gathering", "remote rows ÷ input rows")
    return data
