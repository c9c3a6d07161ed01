"""HopGNN Figure 13 / §7.3: the ablation ladder — epoch time of +MG (micrographs), +PG
(pre-gathering) and All (merging) normalised to the same seed's DGL run (``default``,
global schedule), mean and spread over seeds."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.report.figures.hopgnn_runs import against_baseline, load_runs
from commgnn.report.figures.plotting import TIME_NOTE, save_bars

LADDER = ("DGL", "+MG", "+PG", "All")


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = load_runs(inputs)
    data = against_baseline(runs[runs["variant"].isin(LADDER)], "mean_epoch_time_s")
    data = data.rename(columns={"ratio": "time_vs_dgl", "ratio_std": "time_vs_dgl_std",
                                "value": "epoch_time_s", "value_std": "epoch_time_std_s",
                                "inverse": "speedup_vs_dgl",
                                "inverse_std": "speedup_vs_dgl_std"})
    label = data["dataset"] + " " + data["model"]
    bars = data.assign(cell=label).pivot_table(index="cell", columns="variant",
                                               values="time_vs_dgl")
    save_bars(bars[[v for v in LADDER if v in bars.columns]], out_png,
              "HopGNN techniques, DGL = 1", f"epoch time ÷ DGL's ({TIME_NOTE})")
    return data
