"""HopGNN Figure 11 / §7.2: epoch time of DGL (``default``, global schedule), P3
(unpipelined, and pipelined where it ran), Naive and HopGNN per dataset and model (a named
model per hidden size: ``sage_h16``) — mean over seeds with the spread, target seconds —
each one's speedup over the same seed's DGL run, and HopGNN's over unpipelined P3 (the
paper's headline, 1.2–4.2×) and its bytes per step by kind."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.report.figures.plotting import CELL, TIME_NOTE, save_bars
from commgnn.systems.hopgnn.figures.hopgnn_runs import HOP_CELL, epoch_time_vs_dgl, load_runs

SHOWN = ("DGL", "p3", "p3+pipeline", "Naive", "All")
#: The systems' names in the figure (the data keeps the variants' names).
LABELS = {"p3": "P3", "p3+pipeline": "P3 (pipelined)", "All": "HopGNN"}
#: Bytes per step by kind (summary columns ``<kind>_bytes_per_step``), as the CSV gives them.
KINDS = ("features", "sampling", "graph", "activations", "activation_grads", "gradients",
         "migration")


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = load_runs(inputs)
    data = epoch_time_vs_dgl(runs, SHOWN)
    data = data.merge(_hopgnn_over_p3(runs), on=[*HOP_CELL, "variant"], how="left")
    kinds = [f"{k}_bytes_per_step" for k in KINDS if f"{k}_bytes_per_step" in runs]
    if kinds:
        data = data.merge(runs[runs["variant"].isin(SHOWN)].groupby(
            [*HOP_CELL, "variant"])[kinds].mean().reset_index(), on=[*HOP_CELL, "variant"],
            how="left")
    label = data["dataset"] + "\n" + data["model"]
    bars = data.assign(cell=label).pivot_table(index="cell", columns="variant",
                                               values="epoch_time_s")
    bars = bars[[v for v in SHOWN if v in bars.columns]].rename(columns=LABELS)
    save_bars(bars,
              out_png, "Epoch time: DGL, P3, Naive, HopGNN", f"epoch time ({TIME_NOTE})")
    return data


def _hopgnn_over_p3(runs: pd.DataFrame) -> pd.DataFrame:
    """HopGNN's speedup over the same seed's P3 run of the cell (P3 on whichever
    partitioning it ran: P3 hashes the structure), mean and spread over seeds."""
    p3 = runs[runs["variant"] == "p3"]
    if p3.empty or p3.groupby(CELL)["partitioning"].nunique().max() > 1:
        return pd.DataFrame(columns=[*HOP_CELL, "variant", "speedup_vs_p3",
                                     "speedup_vs_p3_std"])
    hop = runs[runs["variant"] == "All"].join(
        p3.set_index([*CELL, "seed"])["mean_epoch_time_s"].rename("p3_s"), on=[*CELL, "seed"])
    hop["speedup_vs_p3"] = hop["p3_s"] / hop["mean_epoch_time_s"]
    return hop.dropna(subset=["speedup_vs_p3"]).groupby([*HOP_CELL, "variant"]).agg(
        speedup_vs_p3=("speedup_vs_p3", "mean"),
        speedup_vs_p3_std=("speedup_vs_p3", "std")).reset_index()
