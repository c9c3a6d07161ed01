"""Grappa Table 8 / §5.4.2: overheads — the one-time chunking time of each partitioning
(from the partition table) and the time of a switch between super-epochs (the slowest
worker's, per epoch, target and raw seconds) with the bytes it shuffles, per Grappa
configuration (a variant, e.g. Grappa-UW or a fixed-partition ablation, has its own row:
they load partitions differently), the mean over its seeds."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.report.figures.plotting import TIME_NOTE, save_bars
from commgnn.systems.grappa.figures.grappa_runs import load_runs

#: One row per Grappa configuration and workload.
KEYS = ["dataset", "partitioning", "model", "network", "system"]


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    tables = {Path(p).name: p for p in inputs}
    runs = load_runs([tables["runs.csv"]])
    parts = pd.read_csv(tables["partition_stats.csv"])
    chunking = parts.groupby(["dataset", "partitioning", "method"])["partition_time_s"] \
        .first().rename("partition_time_s").reset_index()
    grappa = runs[runs["base_system"] == "grappa"]
    switches = grappa.groupby(KEYS).agg(
        switch_s_per_epoch=("switch_s_per_epoch", "mean"),
        switch_raw_s_per_epoch=("switch_raw_s_per_epoch", "mean"),
        switch_bytes_per_epoch=("switch_bytes_per_epoch", "mean"),
        shuffle_bytes_per_epoch=("shuffle_bytes_per_epoch", "mean"),
        epoch_time_s=("mean_epoch_time_s", "mean")).reset_index()
    loads = grappa.groupby(KEYS).agg(
        loads=("super_epoch", lambda s: float((s + 1).mean())),
        epochs=("epochs", "mean")).reset_index()
    data = switches.merge(loads, on=KEYS)
    # partitions loaded = super-epochs reached (the first load included)
    data["switch_s_per_switch"] = data["switch_s_per_epoch"] * data["epochs"] / data["loads"]
    data = data.merge(chunking, on=["dataset", "partitioning"], how="left")
    save_bars(data.set_index(data["dataset"] + "/" + data["partitioning"] + " "
                             + data["system"])[
        ["switch_s_per_switch", "epoch_time_s"]], out_png,
        "Grappa switch overhead", TIME_NOTE)
    return data
