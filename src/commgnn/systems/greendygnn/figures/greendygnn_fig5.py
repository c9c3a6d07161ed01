"""GreenDyGNN Figure 5 / §VI-B: congestion overhead by method — each method's energy per
epoch under congestion over its own clean run's (same workload and seed), minus 1, in
percent; mean and spread over seeds, beside the mean energies per epoch behind it
(``congested_j``, ``clean_j``: an overhead is only as good as its clean baseline)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.report.figures.plotting import save_bars
from commgnn.systems.greendygnn.figures.greendygnn_runs import (
    ENERGY,
    METHODS,
    WORKLOAD,
    load_runs,
)


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = load_runs(inputs)
    keys = [*WORKLOAD, "system", "seed"]  # one variant on the clean and a congested net
    clean_runs = runs[~runs["congested"]]
    if clean_runs.duplicated(keys).any():
        raise ValueError("more than one clean network per variant, workload and seed: "
                         "the congestion overhead needs one clean baseline")
    clean = clean_runs.set_index(keys)[ENERGY].rename("clean_j")
    congested = runs[runs["congested"]].join(clean, on=keys)
    congested["overhead_pct"] = 100 * (congested[ENERGY] / congested["clean_j"] - 1)
    data = congested.dropna(subset=["overhead_pct"]).groupby(
        [*WORKLOAD, "network", "method", "label"], dropna=False).agg(
        overhead_pct=("overhead_pct", "mean"), overhead_std_pct=("overhead_pct", "std"),
        congested_j=(ENERGY, "mean"), clean_j=("clean_j", "mean"),
        seeds=("seed", "nunique")).reset_index()
    data["order"] = data["method"].map({m: i for i, m in enumerate(METHODS)})
    data = data.sort_values(["order", "label"]).drop(columns="order")
    cell = data["dataset"] + " b" + data["batch_size"].astype(str) + " " + data["network"]
    bars = data.assign(cell=cell).pivot_table(
        index="cell", columns="label", values="overhead_pct", sort=False)
    save_bars(bars, out_png, "Congestion overhead (vs own clean run)",
              "energy increase, % (target model)")
    return data
