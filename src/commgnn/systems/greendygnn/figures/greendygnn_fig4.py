"""GreenDyGNN Figure 4 / §VI-B: energy per epoch by method under congestion (GPU and CPU
parts of the target-machine model stacked), mean over seeds, per workload."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.report.figures.plotting import save_bars
from commgnn.systems.greendygnn.figures.greendygnn_runs import (
    ENERGY_NOTE,
    energy_bars,
    energy_by_method,
    load_runs,
)


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = load_runs(inputs)
    data = energy_by_method(runs[runs["congested"]])
    save_bars(energy_bars(data), out_png, "Energy under congestion", ENERGY_NOTE)
    return data
