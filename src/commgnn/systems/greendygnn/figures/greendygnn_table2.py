"""GreenDyGNN Table II / §VI-H: the ablation — total energy of the run (target-machine
model in target time, all workers) of GreenDyGNN's variants, mean ± std over seeds, and
each variant's change against the full system (dqn controller with cost weights) of the
same workload and network; drawn as a table.

Variants are the ``greendygnn`` configurations in the runs table, told apart by their
resolved options (``option_controller``, ``option_cost_weights``, ``option_window``):
``static`` is "w/o RL (static W)", ``dqn`` without cost weights "w/o Cost Weights", ``dqn``
with them "GreenDyGNN (full)"; ``heuristic`` runs are listed too, and where a cell has
several static windows the best of them is repeated as "best static": the window of lowest
mean energy over the seeds every static window of the cell ran (``best_on_seeds`` of them),
so that one seed's value is not ranked against a mean over three.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from commgnn.report.figures.plotting import save_table
from commgnn.systems.greendygnn.figures.greendygnn_runs import WORKLOAD, seed_matched_best

FULL = "GreenDyGNN (full)"
NO_WEIGHTS = "w/o Cost Weights"
COLUMNS = ["dataset", "network", "congested", "variant", "system", "energy_target_j_mean",
           "energy_target_j_std", "seeds", "vs_full", "best_on_seeds",
           *(k for k in WORKLOAD if k != "dataset")]


def _flag(value, default: bool = True) -> bool:
    """A boolean option as the runs CSV gives it back (bool, string or missing)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return default
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value)


def variant(controller, cost_weights, window) -> tuple[int, str]:
    """(sort order, the paper's name) of a configuration's resolved options."""
    uniform = "" if _flag(cost_weights) else ", w/o cost weights"
    if controller == "dqn":
        return (4, FULL) if _flag(cost_weights) else (3, NO_WEIGHTS)
    if controller == "heuristic":
        return 2, f"heuristic (Eq. 7){uniform}"
    w = "?" if window is None or pd.isna(window) else int(window)
    return 0, f"w/o RL (static W={w}){uniform}"


def load(inputs: list[Path]) -> pd.DataFrame:
    """The greendygnn rows of the runs tables (missing files skipped)."""
    frames = [pd.read_csv(path) for path in map(Path, inputs)
              if path.is_file() and path.stat().st_size > 0]
    runs = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if runs.empty or "base_system" not in runs:
        return pd.DataFrame()
    return runs[runs["base_system"] == "greendygnn"].copy()


def ablation(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per workload, network (``congested``: under a congestion schedule) and
    variant (configuration name): energy mean, std,
    seeds and the change against the full system of the cell (a fraction; NaN unless the
    cell has exactly one full variant)."""
    runs = runs.assign(congested=runs["congestion"].fillna("none") != "none"
                       if "congestion" in runs else False)
    keys = [k for k in (*WORKLOAD, "network", "congested") if k in runs]
    for option in ("option_controller", "option_cost_weights", "option_window"):
        if option not in runs:
            runs[option] = None
    data = runs.groupby([*keys, "system"], dropna=False).agg(
        energy_target_j_mean=("energy_target_j", "mean"),
        energy_target_j_std=("energy_target_j", "std"),
        seeds=("seed", "nunique"), controller=("option_controller", "first"),
        cost_weights=("option_cost_weights", "first"),
        window=("option_window", "first")).reset_index()
    named = [variant(c, w, win) for c, w, win in
             zip(data["controller"], data["cost_weights"], data["window"], strict=True)]
    data["order"] = [o for o, _ in named]
    data["variant"] = [v for _, v in named]
    cells = []
    for _, cell in data.groupby(keys, dropna=False, sort=True):
        cell = cell.copy()
        shared = cell.groupby("variant")["system"].transform("nunique") > 1
        cell.loc[shared, "variant"] += " [" + cell.loc[shared, "system"] + "]"
        static = cell[cell["controller"] == "static"]
        if static["system"].nunique() > 1:  # the best of several static windows
            best = _best_static(runs.merge(cell[keys].drop_duplicates(), on=keys), static)
            cell = pd.concat([cell, best], ignore_index=True)
        full = cell.loc[cell["variant"] == FULL, "energy_target_j_mean"]
        cell["vs_full"] = (cell["energy_target_j_mean"] / full.iloc[0] - 1
                           if len(full) == 1 else math.nan)
        cells.append(cell.sort_values(["order", "window", "variant"], kind="stable"))
    data = pd.concat(cells, ignore_index=True)
    if "best_on_seeds" not in data:
        data["best_on_seeds"] = math.nan
    return data[[c for c in COLUMNS if c in data]]


def _best_static(runs: pd.DataFrame, static: pd.DataFrame) -> pd.DataFrame:
    """The "best static" row of a cell: its static configuration of lowest mean energy on
    the seeds all of them ran (``runs``: the cell's runs; ``static``: its aggregated static
    rows), with ``best_on_seeds`` the number of those seeds (0: none shared, all-seed means
    ranked)."""
    system, seeds = seed_matched_best(
        runs[(runs["option_controller"] == "static") & runs["system"].isin(static["system"])],
        "energy_target_j", by="system")
    if system is None:  # e.g. runs recorded before the energy model
        return static.iloc[:0]
    best = static[static["system"] == system].copy()
    w = best["window"].iloc[0]
    best["variant"] = f"best static (W={'?' if pd.isna(w) else int(w)})"
    best["order"] = 1
    best["best_on_seeds"] = seeds
    return best


def _draw(data: pd.DataFrame, out_png: Path) -> None:
    shown = pd.DataFrame({
        "dataset": data["dataset"],
        "B": data.get("batch_size", ""),
        "network": data["network"],
        "variant": [v if pd.isna(n) or n == 0 else f"{v}, ranked on {int(n)} shared seed(s)"
                    for v, n in zip(data["variant"], data["best_on_seeds"], strict=True)],
        "energy kJ": [f"{m / 1e3:.3f} ± {0 if pd.isna(s) else s / 1e3:.3f}"
                      for m, s in zip(data["energy_target_j_mean"],
                                      data["energy_target_j_std"], strict=True)],
        "vs full": ["—" if pd.isna(v) else f"{100 * v:+.1f}%" for v in data["vs_full"]],
        "seeds": data["seeds"]})
    save_table(shown, out_png, "Ablation: total energy per run (target model, target time, "
               "all workers), mean ± std over seeds", "no data: no greendygnn runs", width=9)


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    runs = load(inputs)
    data = ablation(runs) if not runs.empty else pd.DataFrame(columns=COLUMNS)
    _draw(data, out_png)
    return data
