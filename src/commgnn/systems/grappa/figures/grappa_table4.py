"""Grappa Table 4 / §5.2.2: mean test accuracy by model depth and system (over datasets,
models and seeds of the runs table), with the spread over seeds and the number of runs."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.report.figures.plotting import save_bars
from commgnn.systems.grappa.figures.grappa_runs import load_runs


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = load_runs(inputs)
    data = runs.groupby(["layers", "variant"]).agg(
        test_acc=("test_acc", "mean"), test_acc_std=("test_acc", "std"),
        runs=("test_acc", "size")).reset_index()
    save_bars(data.pivot_table(index="layers", columns="variant", values="test_acc"),
              out_png, "Test accuracy by depth", "mean test accuracy")
    return data
