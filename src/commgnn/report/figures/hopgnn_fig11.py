"""HopGNN Figure 11 / §7.2: epoch time of DGL (``default``, global schedule), Naive and
HopGNN per dataset and model — mean over seeds with the spread, target seconds — and each
one's speedup over the same seed's DGL run."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.report.figures.hopgnn_runs import against_baseline, load_runs
from commgnn.report.figures.plotting import TIME_NOTE, save_bars

SHOWN = ("DGL", "Naive", "All")


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = load_runs(inputs)
    data = against_baseline(runs[runs["variant"].isin(SHOWN)], "mean_epoch_time_s")
    data = data.rename(columns={"value": "epoch_time_s", "value_std": "epoch_time_std_s",
                                "ratio": "time_vs_dgl", "ratio_std": "time_vs_dgl_std",
                                "inverse": "speedup_vs_dgl",
                                "inverse_std": "speedup_vs_dgl_std"})
    label = data["dataset"] + " " + data["model"]
    save_bars(data.assign(cell=label).pivot_table(index="cell", columns="variant",
                                                  values="epoch_time_s"),
              out_png, "Epoch time: DGL, Naive, HopGNN", f"epoch time ({TIME_NOTE})")
    return data
