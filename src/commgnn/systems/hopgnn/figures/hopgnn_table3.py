"""HopGNN Table 3 / §7.9: accuracy parity — test accuracy of DGL (``default``, global
schedule), LO (``default``, owned schedule: regrouped micrographs, no migration) and
HopGNN per dataset and model, mean and spread over seeds, and each one's drop from DGL."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.report.figures.plotting import save_bars
from commgnn.systems.hopgnn.figures.hopgnn_runs import BASELINE, HOP_CELL, load_runs

SHOWN = ("DGL", "LO", "All", "+PG", "+MG")


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = load_runs(inputs)
    runs = runs[runs["variant"].isin(SHOWN)]
    data = runs.groupby([*HOP_CELL, "variant"]).agg(
        test_acc=("test_acc", "mean"), test_acc_std=("test_acc", "std"),
        seeds=("seed", "nunique")).reset_index()
    base = data[data["variant"] == BASELINE].set_index(HOP_CELL)["test_acc"]
    data = data.join(base.rename("dgl_test_acc"), on=HOP_CELL)
    data["drop_vs_dgl"] = data["dgl_test_acc"] - data["test_acc"]
    label = data["dataset"] + " " + data["model"]
    save_bars(data.assign(cell=label).pivot_table(index="cell", columns="variant",
                                                  values="test_acc"),
              out_png, "Accuracy: DGL, LO, HopGNN", "test accuracy")
    return data
