"""HopGNN Figure 11 / §7.2: epoch time of DGL (``default``, global schedule), Naive and
HopGNN per dataset and model — mean over seeds with the spread, target seconds — and each
one's speedup over the same seed's DGL run."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.report.figures.hopgnn_runs import epoch_time_vs_dgl, load_runs
from commgnn.report.figures.plotting import TIME_NOTE, save_bars

SHOWN = ("DGL", "Naive", "All")


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    data = epoch_time_vs_dgl(load_runs(inputs), SHOWN)
    label = data["dataset"] + " " + data["model"]
    save_bars(data.assign(cell=label).pivot_table(index="cell", columns="variant",
                                                  values="epoch_time_s"),
              out_png, "Epoch time: DGL, Naive, HopGNN", f"epoch time ({TIME_NOTE})")
    return data
