"""Grappa Figure 4 / §5.3.1: epoch time against the number of partitions, Grappa (without
its switches, as the paper) and the default system on METIS, per dataset, model and
depth; mean over seeds, error bars the standard deviation."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from commgnn.report.figures.plotting import TIME_NOTE, finish
from commgnn.systems.grappa.figures.grappa_runs import load_runs


def by_partitions(runs: pd.DataFrame) -> pd.DataFrame:
    """Per dataset, model, depth, variant and partition count (``workers``): the mean epoch
    time without switches over seeds, its standard deviation and the seed count."""
    return runs.groupby(["dataset", "model", "layers", "variant", "workers"]).agg(
        epoch_time_s=("epoch_time_excl_switch_s", "mean"),
        epoch_time_std_s=("epoch_time_excl_switch_s", "std"),
        seeds=("seed", "nunique")).reset_index()


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    data = by_partitions(load_runs(inputs))
    fig, ax = plt.subplots(figsize=(6, 4))
    for key, group in data.groupby(["dataset", "model", "variant"]):
        ax.errorbar(group["workers"], group["epoch_time_s"],
                    yerr=group["epoch_time_std_s"].fillna(0), marker="o",
                    label=" ".join(map(str, key)))
    finish(fig, ax, out_png, "Epoch time vs number of partitions", "partitions (workers)",
           f"epoch time ({TIME_NOTE})")
    return data
