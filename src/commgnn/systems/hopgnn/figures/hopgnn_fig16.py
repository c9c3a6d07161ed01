"""HopGNN Figure 16 / §7.3: what pre-gathering removes — per epoch, the remote rows and
feature requests of the micrographs fetched step by step, and of the same iterations
pre-gathered (the union of each machine's remote rows, one request per owner), from every
HopGNN micrograph run (each counts both)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.report.figures.plotting import save_bars
from commgnn.systems.hopgnn.figures.hopgnn_runs import HOP_CELL, load_runs


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = load_runs(inputs)
    hop = runs[(runs["base_system"] == "hopgnn") & (runs["variant"] != "Naive")].copy()
    pre = hop["variant"].isin(["+PG", "All"])
    # a pre-gathering run's requests are the union's; without, the step-by-step ones
    hop["requests_pregathered"] = hop["remote_rpcs_per_epoch"].where(
        pre, hop["remote_rpcs_per_epoch"] - hop["pregather_saved_rpcs_per_epoch"])
    hop["requests_per_step"] = hop["requests_pregathered"] + hop["pregather_saved_rpcs_per_epoch"]
    data = hop.groupby([*HOP_CELL, "variant"]).agg(
        rows_per_step=("miss_rows_per_epoch", "mean"),
        rows_pregathered=("pregather_rows_per_epoch", "mean"),
        requests_per_step=("requests_per_step", "mean"),
        requests_pregathered=("requests_pregathered", "mean"),
        seeds=("seed", "nunique")).reset_index()
    data["row_reduction"] = data["rows_per_step"] / data["rows_pregathered"]
    data["request_reduction"] = data["requests_per_step"] / data["requests_pregathered"]
    label = data["dataset"] + " " + data["model"] + " " + data["variant"]
    save_bars(data.assign(cell=label).set_index("cell")[["row_reduction", "request_reduction"]],
              out_png, "Pre-gathering: step-by-step ÷ pre-gathered", "reduction (×)")
    return data
