"""Shared by the GreenDyGNN figures: the runs table with each run's method (the paper's
names), clean/congested, and the energy columns (target-machine model, per epoch)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from commgnn.core.errors import NotApplicable
from commgnn.report.figures.plotting import CELL
from commgnn.report.labels import bgl_label
from commgnn.report.tables import concat_runs_tables

#: Runs of one workload share these (the network differs between clean and congested).
WORKLOAD = [c for c in CELL if c != "network"] + ["partitioning"]
#: The paper's methods, in its order; GreenDyGNN-static(W) variants sort after them.
METHODS = ("DGL", "BGL", "RapidGNN", "GreenDyGNN-static", "GreenDyGNN-heuristic",
           "GreenDyGNN")
#: Energy columns of the runs table: the target-machine model (``energy/target.py``)
#: per epoch, in joules, summed over the workers (the paper sums its four nodes).
ENERGY = "energy_target_per_epoch_j"
ENERGY_NOTE = "J/epoch, target model, all workers"


def control_records(inputs: list[Path], part: str, filename: str
                    ) -> list[tuple[Path, dict]]:
    """``(directory, record)`` for each control directory named ``part`` (``calibration``,
    ``validation``, ``policy``) among ``inputs`` that holds ``filename``, in input order."""
    out = []
    for directory in map(Path, inputs):
        path = directory / filename
        if directory.name == part and path.is_file():
            out.append((directory, json.loads(path.read_text())))
    return out


def method(row: pd.Series) -> str:
    """DGL (``default``, DistDGL's owned schedule; "DGL (global schedule)" with the
    HopGNN and Grappa papers' one), BGL (whatever its cache: :func:`label_runs` names it),
    RapidGNN, GreenDyGNN-static (its window in
    ``window``), GreenDyGNN-heuristic, GreenDyGNN (a learned controller; "GreenDyGNN w/o
    cost weights" with uniform ones, the ablation); other systems by name."""
    base = row["base_system"]
    if base == "default":
        return "DGL (global schedule)" if row.get("option_schedule") == "global" else "DGL"
    if base == "bgl":
        return "BGL"
    if base == "rapidgnn":
        return "RapidGNN"
    if base != "greendygnn":
        return str(base)
    controller = row.get("option_controller")
    if controller == "static":
        return "GreenDyGNN-static"
    if controller == "heuristic":
        return "GreenDyGNN-heuristic"
    weights = row.get("option_cost_weights")
    uniform = weights is not None and not pd.isna(weights) and \
        str(weights).lower() in ("false", "0", "0.0")
    return "GreenDyGNN w/o cost weights" if uniform else "GreenDyGNN"


def label_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """Add ``label``: the method, with its window for GreenDyGNN-static, with its cache for
    BGL (``BGL (no cache)``: GreenDyGNN's BGL; ``BGL (FIFO 20,000 rows)``: the FIFO cache
    option; from ``option_cache_rows``), and the config's variant name where two variants
    would share a label (e.g. ``default`` and a ``dgl-global`` variant are both DGL)."""
    label = frame["method"].copy()
    static = frame["method"] == "GreenDyGNN-static"
    label[static] = ("GreenDyGNN-static(" + frame.loc[static, "window"].astype("Int64")
                     .astype(str) + ")")
    bgl = frame["method"] == "BGL"
    if bgl.any():
        cache = frame["option_cache_rows"] if "option_cache_rows" in frame else \
            pd.Series(float("nan"), index=frame.index)
        label[bgl] = [bgl_label("BGL", c) for c in cache[bgl]]
    frame = frame.assign(label=label)
    shared = frame.groupby("label")["system"].transform("nunique") > 1
    frame.loc[shared, "label"] = frame.loc[shared, "label"] + " [" + \
        frame.loc[shared, "system"] + "]"
    return frame


def load_runs(inputs: list[Path]) -> pd.DataFrame:
    """The runs tables with ``method``, ``window`` (static runs), ``label``,
    ``congested``. Runs of one configuration variant share ``system`` (its config name)
    across networks: the key that pairs a congested run with its clean one."""
    runs = concat_runs_tables(inputs)
    if not (runs["base_system"] == "greendygnn").any():
        raise NotApplicable("no greendygnn runs in the runs table: add greendygnn to the "
                         "experiments")
    runs["method"] = runs.apply(method, axis=1)
    runs["window"] = runs["option_window"] if "option_window" in runs else float("nan")
    runs["congested"] = runs["congestion"].fillna("none") != "none"
    return label_runs(runs)


def energy_by_method(runs: pd.DataFrame) -> pd.DataFrame:
    """Per workload, network and method (label): the target-model energy per epoch, GPU
    and CPU parts and their sum, mean over seeds (``total_std_j``: its spread), in the
    paper's method order (Figures 4 and 6)."""
    runs = runs.assign(gpu_j=runs["energy_target_gpu_j"] / runs["epochs"],
                       cpu_j=runs["energy_target_cpu_j"] / runs["epochs"])
    runs["total_j"] = runs["gpu_j"] + runs["cpu_j"]
    data = runs.groupby([*WORKLOAD, "network", "method", "label"], dropna=False).agg(
        gpu_j=("gpu_j", "mean"), cpu_j=("cpu_j", "mean"), total_j=("total_j", "mean"),
        total_std_j=("total_j", "std"), seeds=("seed", "nunique")).reset_index()
    data["order"] = data["method"].map({m: i for i, m in enumerate(METHODS)})
    return data.sort_values(["order", "label"]).drop(columns="order")


def energy_bars(data: pd.DataFrame) -> pd.DataFrame:
    """:func:`energy_by_method`'s totals as bars: one row per cell, one column per label."""
    cell = data["dataset"] + " b" + data["batch_size"].astype(str) + " " + data["network"]
    return data.assign(cell=cell).pivot_table(index="cell", columns="label",
                                              values="total_j", sort=False)


def seed_spread(frame: pd.DataFrame, keys: list[str], column: str) -> pd.DataFrame:
    """Mean, standard deviation and seed count of ``column`` per ``keys``."""
    return frame.groupby(keys, dropna=False).agg(
        mean=(column, "mean"), std=(column, "std"), seeds=("seed", "nunique")).reset_index()


def seed_matched_best(runs: pd.DataFrame, column: str, by: str = "window"
                      ) -> tuple[Any, int]:
    """The ``by`` value (e.g. the window) with the lowest mean ``column`` over the seeds that
    every ``by`` value ran, and how many seeds that is: a mean over three seeds is not
    ranked against one seed's value, where the host's noise between seeds would choose.
    With no seed shared by all, the mean over every seed decides and the count is 0; with
    no measured run, the value is None."""
    runs = runs.dropna(subset=[column, by])
    if runs.empty:
        return None, 0
    per_seed = runs.pivot_table(index="seed", columns=by, values=column, aggfunc="mean")
    shared = per_seed.dropna()
    if shared.empty:
        return per_seed.mean().idxmin(), 0
    return shared.mean().idxmin(), len(shared)


def epoch_rows(run_dirs: list[Path]) -> pd.DataFrame:
    """One row per run and epoch: the summary's identity columns, ``method``,
    ``congested``, and the epoch's energies (measured and target model, cumulative)."""
    rows = []
    for directory in map(Path, run_dirs):
        summary = json.loads((directory / "summary.json").read_text())
        ident = {k: summary.get(k) for k in (*WORKLOAD, "network", "congestion", "seed",
                                            "system", "base_system")}
        options = summary.get("system_options", {})
        ident["option_controller"] = options.get("controller")
        ident["option_cache_rows"] = options.get("cache_rows")
        ident["window"] = options.get("window", float("nan"))
        ident["method"] = method(pd.Series(ident))
        ident["congested"] = (summary.get("congestion") or "none") != "none"
        for line in (directory / "epochs.jsonl").read_text().splitlines():
            epoch = json.loads(line)
            rows.append({**ident, "epoch": epoch["epoch"],
                         "time_s": epoch["time_s"] / epoch["time_dilation"],
                         "energy_target_j": epoch.get("energy_target_j"),
                         "energy_target_cum_j": epoch.get("energy_target_cum_j"),
                         "energy_cum_j": epoch.get("energy_cum_j"),
                         "mean_window": epoch.get("mean_window")})
    return label_runs(pd.DataFrame(rows)) if rows else pd.DataFrame(rows)
