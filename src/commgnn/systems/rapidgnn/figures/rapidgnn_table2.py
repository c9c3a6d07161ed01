"""RapidGNN Table 2 / §5.2: step and network speedup of RapidGNN over DGL-METIS,
DGL-Random and DistDGL's GCN, per dataset and batch size, plus the averages row; our value
beside the paper's.

Step speedup: the baseline's step time over RapidGNN's (target seconds: the mean epoch
time over the steps per epoch). Network speedup: the baseline's modelled link time per
step of its feature and neighbour-list traffic over RapidGNN's (every thread: RapidGNN's
prefetcher and cache fills included). Both pair runs by seed; mean and spread over seeds.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.core.errors import NotApplicable
from commgnn.report.figures.plotting import save_table
from commgnn.systems.rapidgnn.figures.rapidgnn_runs import (
    BASELINES,
    CELL,
    RAPIDGNN,
    load_runs,
    main_cells,
    paired_ratio,
    plays_a_role,
)

#: Table 2 of the paper: (dataset, batch) -> baseline -> (step, network) speedup.
PAPER = {
    ("OGBN-Papers", 1000): {"DGL-METIS": (1.44, 3.70), "DGL-Random": (1.26, 3.42),
                            "GCN": (1.71, 4.40)},
    ("OGBN-Papers", 2000): {"DGL-METIS": (1.53, 4.51), "DGL-Random": (1.36, 3.71),
                            "GCN": (1.97, 5.33)},
    ("OGBN-Papers", 3000): {"DGL-METIS": (1.65, 4.26), "DGL-Random": (1.48, 4.10),
                            "GCN": (1.90, 5.25)},
    ("OGBN-Products", 1000): {"DGL-METIS": (1.42, 5.81), "DGL-Random": (1.52, 6.42),
                              "GCN": (1.76, 6.68)},
    ("OGBN-Products", 2000): {"DGL-METIS": (1.32, 5.19), "DGL-Random": (1.34, 5.36),
                              "GCN": (1.57, 6.08)},
    ("OGBN-Products", 3000): {"DGL-METIS": (1.34, 4.59), "DGL-Random": (1.46, 5.40),
                              "GCN": (1.74, 6.11)},
    ("Reddit", 1000): {"DGL-METIS": (3.97, 32.57), "DGL-Random": (3.41, 22.25),
                       "GCN": (4.89, 40.51)},
    ("Reddit", 2000): {"DGL-METIS": (4.85, 28.14), "DGL-Random": (4.24, 19.14),
                       "GCN": (5.96, 35.05)},
    ("Reddit", 3000): {"DGL-METIS": (4.60, 25.52), "DGL-Random": (4.31, 17.52),
                       "GCN": (5.51, 29.11)},
}
PAPER_AVERAGE = {"DGL-METIS": (2.46, 12.70), "DGL-Random": (2.26, 9.70), "GCN": (3.00, 15.39)}
AVERAGE = "Average"

#: The runs the caption describes (``figure_setting`` in the workflow).
runs_behind = plays_a_role


def speedups(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per cell and baseline: step, network and fetch-wait speedups (module doc),
    the paper's values where the cell is one of its (dataset, batch) and the run ids."""
    frames = []
    for baseline in BASELINES:
        cells = None
        for column, name in (("step_time_s", "step"), ("network_s_per_step", "network"),
                             ("fetch_wait_s_per_step", "fetch_wait")):
            ratio = paired_ratio(runs, column, baseline, RAPIDGNN).drop(
                columns=["numerator", "denominator"]).rename(
                columns={"ratio": f"{name}_speedup", "ratio_std": f"{name}_speedup_std"})
            cells = ratio if cells is None else cells.merge(
                ratio.drop(columns=["seeds", "run_ids"]), on=CELL)
        if not cells.empty:
            frames.append(cells.assign(baseline=baseline))
    if not frames:
        return pd.DataFrame()
    data = pd.concat(frames, ignore_index=True)
    data["paper_dataset"] = data["dataset"].map(runs.groupby("dataset")["paper_dataset"].first())
    paper = [PAPER.get((d, b), {}).get(base, (float("nan"), float("nan"))) for d, b, base in
             zip(data["paper_dataset"], data["batch_size"], data["baseline"], strict=True)]
    data["paper_step_speedup"] = [step for step, _ in paper]
    data["paper_network_speedup"] = [network for _, network in paper]
    first = ["paper_dataset", *CELL, "baseline", "step_speedup", "step_speedup_std",
             "paper_step_speedup", "network_speedup", "network_speedup_std",
             "paper_network_speedup"]
    return data[first + [c for c in data.columns if c not in first]]


def with_averages(data: pd.DataFrame) -> pd.DataFrame:
    """``data`` and, per baseline and network, the mean of every cell (the paper's
    averages row)."""
    rows = []
    for (baseline, network), group in data.groupby(["baseline", "network"], sort=False):
        rows.append({"dataset": AVERAGE, "network": network, "baseline": baseline,
                     "seeds": group["seeds"].min(),
                     "step_speedup": group["step_speedup"].mean(),
                     "network_speedup": group["network_speedup"].mean(),
                     "fetch_wait_speedup": group["fetch_wait_speedup"].mean(),
                     "paper_step_speedup": PAPER_AVERAGE[baseline][0],
                     "paper_network_speedup": PAPER_AVERAGE[baseline][1],
                     "run_ids": ";".join(group["run_ids"])})
    return pd.concat([data, pd.DataFrame(rows)], ignore_index=True)


def _ours_paper(ours: float, spread: float, paper: float) -> str:
    text = f"{ours:.2f}" if pd.isna(spread) else f"{ours:.2f}±{spread:.2f}"
    return text if pd.isna(paper) else f"{text} ({paper:.2f})"


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    data = speedups(main_cells(load_runs(inputs)))
    if data.empty:
        raise NotApplicable("no cell runs rapidgnn beside a baseline (default on a metis or "
                            "random partitioning, or default's GCN) with the same seed: "
                            "add one to the experiment")
    data = with_averages(data)
    wide = data.assign(
        step=[_ours_paper(*v) for v in zip(data["step_speedup"],
                                           data.get("step_speedup_std"),
                                           data["paper_step_speedup"], strict=True)],
        net=[_ours_paper(*v) for v in zip(data["network_speedup"],
                                          data.get("network_speedup_std"),
                                          data["paper_network_speedup"], strict=True)])
    wide["row"] = [f"{AVERAGE}, {n}" if d == AVERAGE else
                   f"{d}{f' ({p})' if p else ''}, {int(w)} workers, {n}"
                   for d, p, w, n in zip(wide["dataset"], wide["paper_dataset"].fillna(""),
                                         wide["workers"], wide["network"], strict=True)]
    wide["B"] = wide["batch_size"].map(lambda b: "" if pd.isna(b) else f"{int(b)}")
    shown = wide.pivot_table(index=["row", "B"], columns="baseline",
                             values=["step", "net"], aggfunc="first", sort=False)
    shown.columns = [f"{'step' if k == 'step' else 'network'} vs {b}"
                     for k, b in shown.columns]
    shown = shown.reset_index().fillna("")
    save_table(shown, out_png, "RapidGNN speedup: ours ± spread over seeds (paper); target time",
               "no rows", width=15)
    return data
