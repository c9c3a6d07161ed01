"""HopGNN Table 3 / §7.9: accuracy parity — test accuracy of DGL (``default``, global
schedule), LO (``default``, owned schedule: regrouped micrographs, no migration) and
HopGNN per dataset and model, mean and spread over seeds, and each one's drop from DGL
trained as many epochs (a cell is also its ``epochs``: a HopGNN run of three epochs, the
merging search's, has no drop against a one-epoch DGL run, only against DGL's three)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.report.figures.plotting import save_bars
from commgnn.systems.hopgnn.figures.hopgnn_runs import BASELINE, HOP_CELL, load_runs

SHOWN = ("DGL", "LO", "All", "+PG", "+MG")
#: Accuracy is compared between runs of one cell trained for as many epochs.
ACC_CELL = [*HOP_CELL, "epochs"]


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = load_runs(inputs)
    runs = runs[runs["variant"].isin(SHOWN)]
    data = runs.groupby([*ACC_CELL, "variant"]).agg(
        test_acc=("test_acc", "mean"), test_acc_std=("test_acc", "std"),
        seeds=("seed", "nunique")).reset_index()
    base = data[data["variant"] == BASELINE].set_index(ACC_CELL)["test_acc"]
    data = data.join(base.rename("dgl_test_acc"), on=ACC_CELL)
    data["drop_vs_dgl"] = data["dgl_test_acc"] - data["test_acc"]
    label = data["dataset"] + " " + data["model"]
    if data["epochs"].nunique() > 1:
        label += " (" + data["epochs"].astype(str) + " epochs)"
    save_bars(data.assign(cell=label).pivot_table(index="cell", columns="variant",
                                                  values="test_acc"),
              out_png, "Accuracy: DGL, LO, HopGNN", "test accuracy")
    return data
