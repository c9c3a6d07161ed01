"""HopGNN Figure 13 / §7.3: the ablation ladder — epoch time of +MG (micrographs), +PG
(pre-gathering) and All (merging) normalised to the same seed's DGL run (``default``,
global schedule), mean and spread over seeds."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.report.figures.plotting import TIME_NOTE, save_bars
from commgnn.systems.hopgnn.figures.hopgnn_runs import epoch_time_vs_dgl, load_runs

LADDER = ("DGL", "+MG", "+PG", "All")


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    data = epoch_time_vs_dgl(load_runs(inputs), LADDER)
    label = data["dataset"] + " " + data["model"]
    bars = data.assign(cell=label).pivot_table(index="cell", columns="variant",
                                               values="time_vs_dgl")
    save_bars(bars[[v for v in LADDER if v in bars.columns]], out_png,
              "HopGNN techniques, DGL = 1", f"epoch time ÷ DGL's ({TIME_NOTE})")
    return data
