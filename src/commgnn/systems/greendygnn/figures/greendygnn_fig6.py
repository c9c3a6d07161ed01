"""GreenDyGNN Figure 6 / §VI-C: energy per epoch by method without congestion (GPU and
CPU parts of the target-machine model), mean over seeds, per workload — the paper's
clean parity of GreenDyGNN with RapidGNN (within 2 %). Only the paper's methods (DGL,
BGL, RapidGNN and GreenDyGNN's variants) are drawn."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.core.errors import NotApplicable
from commgnn.report.figures.plotting import save_bars
from commgnn.systems.greendygnn.figures.greendygnn_runs import (
    ENERGY_NOTE,
    METHODS,
    energy_bars,
    energy_by_method,
    load_runs,
)


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = load_runs(inputs)
    paper = runs["method"].isin(METHODS) | runs["method"].str.startswith("GreenDyGNN")
    clean = runs[~runs["congested"] & paper]
    if clean.empty:
        raise NotApplicable("no clean run of the paper's methods: add a network without "
                            "congestion to the experiments")
    data = energy_by_method(clean)
    save_bars(energy_bars(data), out_png, "Energy without congestion", ENERGY_NOTE)
    return data
