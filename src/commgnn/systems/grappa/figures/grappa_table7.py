"""Grappa Table 7 / §5.4.1: the ablations — test accuracy of Grappa, Grappa-UW (no coverage
correction), Grappa-FP (fixed partitions) and Grappa-50S (half the cross edges, fetched
on demand) per dataset, model and depth; mean and spread over seeds."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.report.figures.plotting import CELL, save_bars
from commgnn.systems.grappa.figures.grappa_runs import load_runs


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = load_runs(inputs)
    grappa = runs[runs["base_system"] == "grappa"]
    data = grappa.groupby([*CELL, "variant"]).agg(
        test_acc=("test_acc", "mean"), test_acc_std=("test_acc", "std"),
        seeds=("seed", "nunique"),
        fetch_mb_per_step=("fetch_mb_per_step", "mean")).reset_index()
    label = data["dataset"] + " " + data["model"]
    save_bars(data.assign(cell=label).pivot_table(index="cell", columns="variant",
                                                  values="test_acc"),
              out_png, "Grappa ablations", "test accuracy")
    return data
