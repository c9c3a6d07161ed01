"""Tidy tables gathered from pipeline outputs (one row per partition part / per run)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from commgnn.core.errors import InputError
from commgnn.core.spec import RUN_KEYS, run_id
from commgnn.partition import read_partition_meta
from commgnn.train.summary import COMMON_KEYS


def partition_table(partition_dirs: list[Path]) -> pd.DataFrame:
    """One row per part (or chunk) of every partition directory, like Grappa's Table 9.

    The dataset and partitioning names are the directory's last two path components
    (``<results>/partitions/<dataset>/<partitioning>``).
    """
    rows = []
    for directory in map(Path, partition_dirs):
        meta = read_partition_meta(directory)
        stats = json.loads((directory / "stats.json").read_text())
        timing_path = directory / "timing.json"
        timing = json.loads(timing_path.read_text()) if timing_path.exists() else {}
        for part in stats["parts"]:
            rows.append({
                "dataset": directory.parent.name,
                "partitioning": directory.name,
                "method": meta["spec"]["method"],
                **part,
                "total_bytes": stats["total_bytes"],
                "edge_cut_fraction": stats["edge_cut_fraction"],
                "balance": stats["balance"],
                "train_balance": stats["train_balance"],
                "partition_time_s": timing.get("total_s"),
            })
    return pd.DataFrame(rows)


def runs_table(run_dirs: list[Path]) -> pd.DataFrame:
    """One row per run directory, from its ``summary.json``: its ``run_id``, the common
    keys (``congestion_reach``: which traffic the congestion delayed; ``unknown`` for a
    congested run whose summary predates it), the metrics its system declares
    (``system_metrics``), and every resolved system option as ``option_<name>``."""
    rows = []
    for directory in map(Path, run_dirs):
        summary = json.loads((directory / "summary.json").read_text())
        row = {"run_id": run_id(*(summary[k] for k in RUN_KEYS)),
               **{k: summary.get(k) for k in COMMON_KEYS}}
        if row["layers"] is None and "training" in summary:  # summaries before `layers`
            row["layers"] = len(summary["training"]["fanouts"])
        if row["congestion_reach"] is None:  # summaries before `congestion_reach`: the
            # reach of a congested run is unknown (the default reach has changed since)
            row["congestion_reach"] = "none" if row["congestion"] in (None, "none") \
                else "unknown"
        row.update({k: summary[k] for k in summary.get("system_metrics", [])})
        options = summary.get("system_options", {})
        row.update({f"option_{k}": v for k, v in sorted(options.items()) if k != "system"})
        rows.append(row)
    return pd.DataFrame(rows)


def read_runs_table(path: Path) -> pd.DataFrame:
    """A runs table written by :func:`runs_table`; :class:`InputError` naming ``path`` if it
    has no ``run_id`` column."""
    table = pd.read_csv(path)
    if "run_id" not in table:
        raise InputError(f"{path}: no run_id column (not a runs table)")
    return table


def concat_runs_tables(paths) -> pd.DataFrame:
    """The runs tables at ``paths`` as one frame, consolidated: ``read_csv`` gives one block
    per column, so inserting a column into the concatenation of ~140-column tables would
    warn (pandas' PerformanceWarning) and be slow."""
    return pd.concat([pd.read_csv(path) for path in paths], ignore_index=True).copy()


def updated_runs_table(previous: pd.DataFrame, fresh: pd.DataFrame) -> pd.DataFrame:
    """``previous``'s rows of runs that ``fresh`` has not, then ``fresh``'s rows: a table
    kept across sessions whose earlier run directories are gone (a run given again replaces
    its row). Columns are the union, in ``fresh``'s order first; rows keep run order."""
    kept = previous[~previous["run_id"].isin(set(fresh["run_id"]))]
    columns = list(fresh.columns) + [c for c in previous.columns if c not in fresh.columns]
    return pd.concat([kept, fresh], ignore_index=True).reindex(columns=columns)
