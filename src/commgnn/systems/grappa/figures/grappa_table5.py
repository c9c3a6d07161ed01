"""Grappa Table 5 / §5.2.3: Cluster-GCN against Grappa on GCN-2 — epoch time, test accuracy
and preprocessing time; ours beside the paper's (OGBN-Products on their H100 machine).

Runs (:func:`runs_behind`): two-layer GCN runs of ``clustergcn`` (any options; a row per
setting C, q, λ) and of plain Grappa (``grappa`` with its default estimator, switching,
isolation and mode: the ``Grappa`` variant of :mod:`grappa_runs`). Per run:

- epoch time: target seconds (raw ÷ time dilation), Grappa's without its switches (the
  paper's epoch time excludes them, §5.1);
- test accuracy: the run's last evaluation;
- preprocessing: the partitioning's wall time (the partition table's
  ``partition_time_s``: METIS into P parts for Cluster-GCN, the chunking for Grappa) plus
  Cluster-GCN's clustering (``clustering_raw_s``: every worker clusters its part with
  METIS at setup, the slowest worker's wall seconds — CPU work, not dilated, as the
  partitioning) or Grappa's switches (every switch of the run: ``switch_s_per_epoch`` ×
  epochs, target seconds: their time is the emulated network's shuffle). The paper's 881 s
  is Cluster-GCN's clustering, its 125 s Grappa's 49 s of partitioning plus 76 s of
  switches;
- the paper's illustration of both: the total for 500 epochs (preprocessing + 500 × epoch
  time; 1481 s against 1425 s).

Rows: per dataset, workers, network, batch size (Cluster-GCN does not use it) and system
setting, mean and spread (sample standard deviation) over seeds; ``epoch_time_vs_grappa``
is the row's epoch time over the first Grappa row's of the same dataset, workers and
network (the paper: 1.2 / 2.6 = 0.46), ``acc_vs_grappa`` the difference of test
accuracies (−0.027). Where the runs recorded model selection, ``val_gain_last3`` (the
largest gain of the last 3 evaluations over seeds) and the cell's Grappa's
(``val_gain_last3_grappa``) follow the columns.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.core.spec import split_model
from commgnn.report.figures.plotting import save_table
from commgnn.systems.grappa.figures.grappa_runs import plateau_aggregation, variant

CLUSTER_GCN, GRAPPA = "Cluster-GCN", "Grappa"
#: Table 5 of the paper (GCN-2, OGBN-Products, H100): epoch time (s), test accuracy,
#: preprocessing (s: Cluster-GCN's clustering; Grappa's 49 s partitioning + 76 s switches).
PAPER = {CLUSTER_GCN: {"epoch_time_s": 1.2, "test_acc": 0.7390, "preprocessing_s": 881.0},
         GRAPPA: {"epoch_time_s": 2.6, "test_acc": 0.7663, "preprocessing_s": 125.0}}
#: The paper's total-time illustration (§5.2.3): a 500-epoch run, 1481 s against 1425 s.
PAPER_EPOCHS = 500
CELL = ["dataset", "workers", "network"]
ROW = [*CELL, "batch_size", "system", "setting"]
EMPTY = "no two-layer GCN run of Cluster-GCN or Grappa in the runs table"
COLUMNS = [*ROW, "seeds", "epoch_time_s", "epoch_time_std_s", "paper_epoch_time_s",
           "test_acc", "test_acc_std", "paper_test_acc", "partition_s", "clustering_s",
           "switch_s", "preprocessing_s", "preprocessing_std_s", "paper_preprocessing_s",
           "total_500_s", "paper_total_500_s", "epoch_time_vs_grappa",
           "paper_epoch_time_vs_grappa", "acc_vs_grappa", "paper_acc_vs_grappa", "run_ids"]


def _system(base: str, options: dict) -> str | None:
    """``Cluster-GCN``, ``Grappa`` (plain Grappa only) or ``None`` (not in the table)."""
    if base == "clustergcn":
        return CLUSTER_GCN
    if base == "grappa" and variant({"base_system": base, **options}) == GRAPPA:
        return GRAPPA
    return None


def runs_behind(spec) -> bool:
    """The runs the table compares: GCN-2 runs of Cluster-GCN and plain Grappa."""
    options = {f"option_{k}": v for k, v in spec.system_options.items()}
    return (spec.architecture == "gcn" and len(spec.get("fanouts")) == 2
            and _system(spec.base_system, options) is not None)


def _setting(row: pd.Series) -> str:
    if row["system"] == CLUSTER_GCN:
        return (f"C={int(row['option_clusters'])} q={int(row['option_clusters_per_batch'])} "
                f"λ={float(row['option_diag_lambda']):g}")
    return str(row["system_name"])


def per_run(runs: pd.DataFrame, parts: pd.DataFrame) -> pd.DataFrame:
    """The table's runs (module doc) with their epoch time, preprocessing and its parts."""
    runs = runs.copy()
    for column in ("option_clusters", "option_clusters_per_batch", "option_diag_lambda",
                   "clustering_raw_s", "switch_s_per_epoch"):
        if column not in runs:
            runs[column] = float("nan")
    options = [c for c in runs.columns if c.startswith("option_")]
    runs["system_name"] = runs["system"]
    runs["system"] = [_system(base, {k: v for k, v in row.items() if pd.notna(v)})
                      for base, row in zip(runs["base_system"], runs[options].to_dict("records"),
                                           strict=True)]
    gcn2 = (runs["model"].map(lambda m: split_model(str(m))[0]) == "gcn") & (runs["layers"] == 2)
    runs = runs[gcn2 & runs["system"].notna()].copy()
    if runs.empty:
        return runs
    runs["setting"] = runs.apply(_setting, axis=1)
    if parts.empty:  # no partition statistics among the inputs: preprocessing unknown
        runs["partition_s"] = float("nan")
    else:
        timing = parts.groupby(["dataset", "partitioning"])["partition_time_s"].first()
        runs = runs.join(timing.rename("partition_s"), on=["dataset", "partitioning"])
    grappa = runs["system"] == GRAPPA
    switches = runs["switch_s_per_epoch"].fillna(0.0)
    runs["epoch_time_s"] = runs["mean_epoch_time_s"] - switches.where(grappa, 0.0)
    runs["clustering_s"] = runs["clustering_raw_s"].where(~grappa)
    runs["switch_s"] = (switches * runs["epochs"]).where(grappa)
    runs["preprocessing_s"] = runs["partition_s"] + runs["clustering_s"].where(
        ~grappa, runs["switch_s"])
    runs["total_500_s"] = runs["preprocessing_s"] + PAPER_EPOCHS * runs["epoch_time_s"]
    return runs


def table(runs: pd.DataFrame, parts: pd.DataFrame) -> pd.DataFrame:
    """One row per cell, batch size and system setting (module doc); :data:`COLUMNS`."""
    runs = per_run(runs, parts)
    if runs.empty:
        return pd.DataFrame(columns=COLUMNS)
    selection = plateau_aggregation(runs)  # the accuracy claims' plateau test, if recorded
    data = runs.groupby(ROW, sort=True, dropna=False).agg(
        seeds=("seed", "nunique"),
        epoch_time_s=("epoch_time_s", "mean"), epoch_time_std_s=("epoch_time_s", "std"),
        test_acc=("test_acc", "mean"), test_acc_std=("test_acc", "std"),
        **selection,
        partition_s=("partition_s", "mean"), clustering_s=("clustering_s", "mean"),
        switch_s=("switch_s", "mean"), preprocessing_s=("preprocessing_s", "mean"),
        preprocessing_std_s=("preprocessing_s", "std"), total_500_s=("total_500_s", "mean"),
        run_ids=("run_id", lambda ids: ";".join(sorted(set(ids))))).reset_index()
    for key in ("epoch_time_s", "test_acc", "preprocessing_s"):
        data[f"paper_{key}"] = data["system"].map(lambda s, k=key: PAPER[s][k])
    data["paper_total_500_s"] = data["paper_preprocessing_s"] + \
        PAPER_EPOCHS * data["paper_epoch_time_s"]
    compared = ["epoch_time_s", "test_acc", *(["val_gain_last3"] if selection else [])]
    reference = data[data["system"] == GRAPPA].groupby(CELL)[compared].first() \
        .add_suffix("_grappa")
    joined = data.join(reference, on=CELL)
    data["epoch_time_vs_grappa"] = joined["epoch_time_s"] / joined["epoch_time_s_grappa"]
    data["acc_vs_grappa"] = joined["test_acc"] - joined["test_acc_grappa"]
    paper = PAPER[CLUSTER_GCN], PAPER[GRAPPA]
    data["paper_epoch_time_vs_grappa"] = data["system"].map(
        {CLUSTER_GCN: paper[0]["epoch_time_s"] / paper[1]["epoch_time_s"], GRAPPA: 1.0})
    data["paper_acc_vs_grappa"] = data["system"].map(
        {CLUSTER_GCN: paper[0]["test_acc"] - paper[1]["test_acc"], GRAPPA: 0.0})
    if selection:
        data["val_gain_last3_grappa"] = joined["val_gain_last3_grappa"]
    return data[COLUMNS + [f"val_gain_last3{s}" for s in ("", "_grappa") if selection]]


def _cell(mean: float, spread: float, paper: float, digits: str) -> str:
    if pd.isna(mean):
        return f"– ({paper:{digits}})"
    text = f"{mean:{digits}}" if pd.isna(spread) else f"{mean:{digits}}±{spread:{digits}}"
    return f"{text} ({paper:{digits}})"


def shown(data: pd.DataFrame) -> pd.DataFrame:
    """The table as drawn: ours (± spread over seeds) with the paper's in parentheses."""
    if data.empty:
        return pd.DataFrame()
    parts = [f"partition {p:.3g} + " + (f"clustering {c:.3g}" if s == CLUSTER_GCN else
                                        f"switches {w:.3g}")
             for p, c, w, s in zip(data["partition_s"], data["clustering_s"],
                                   data["switch_s"], data["system"], strict=True)]
    return pd.DataFrame({
        "cell": [f"{d}, {int(w)} workers, {n}, B={int(b)}" for d, w, n, b in
                 zip(data["dataset"], data["workers"], data["network"], data["batch_size"],
                     strict=True)],
        "system": [s if setting == "grappa" else f"{s} {setting}"
                   for s, setting in zip(data["system"], data["setting"], strict=True)],
        "seeds": data["seeds"].astype(int),
        "epoch time, s": [_cell(*v, ".3g") for v in zip(
            data["epoch_time_s"], data["epoch_time_std_s"], data["paper_epoch_time_s"],
            strict=True)],
        "test acc": [_cell(*v, ".4f") for v in zip(
            data["test_acc"], data["test_acc_std"], data["paper_test_acc"], strict=True)],
        "preprocessing, s": [_cell(*v, ".3g") for v in zip(
            data["preprocessing_s"], data["preprocessing_std_s"],
            data["paper_preprocessing_s"], strict=True)],
        "of which, s": parts,
        f"total {PAPER_EPOCHS} epochs, s": [_cell(t, float("nan"), p, ".4g") for t, p in zip(
            data["total_500_s"], data["paper_total_500_s"], strict=True)],
        "epoch time / Grappa's": [_cell(r, float("nan"), p, ".2f") for r, p in zip(
            data["epoch_time_vs_grappa"], data["paper_epoch_time_vs_grappa"], strict=True)],
    })


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    tables = {Path(p).name: p for p in inputs}
    runs = pd.read_csv(tables["runs.csv"])
    parts = pd.read_csv(tables["partition_stats.csv"]) if "partition_stats.csv" in tables \
        else pd.DataFrame()
    data = table(runs, parts)
    save_table(shown(data), out_png,
               "Cluster-GCN vs Grappa, GCN-2: ours ± spread over seeds (paper: OGBN-Products, "
               "H100); epoch time in target s, preprocessing in wall s (switches target s)",
               EMPTY, width=14)
    return data
