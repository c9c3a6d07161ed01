"""Shared by RapidGNN's evaluation figures (§5): which run plays which role, the paper's
dataset of each dataset, and per-seed ratios against the baselines.

Roles (RapidGNN §5.1; only runs configured under the system's own name — variants such
as ``rapidgnn-h5k`` are sweeps, Figure 5's):

- ``RapidGNN``: ``rapidgnn`` on a METIS partitioning, GraphSAGE;
- ``DGL-METIS``: ``default`` on a METIS partitioning, GraphSAGE;
- ``DGL-Random``: ``default`` on a random partitioning, GraphSAGE;
- ``GCN``: ``default`` on a METIS partitioning, GCN (the paper's DistDGL GCN column).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pandas as pd

from commgnn.core.errors import InputError
from commgnn.core.spec import RUN_KEYS, run_id, split_model
from commgnn.report.tables import concat_runs_tables

RAPIDGNN = "RapidGNN"
BASELINES = ("DGL-METIS", "DGL-Random", "GCN")
ROLES = (RAPIDGNN, *BASELINES)
#: Runs compared side by side share these (and the seed, when paired).
CELL = ["dataset", "layers", "workers", "batch_size", "network"]
#: The paper's datasets, as Table 1 names them.
PAPER_DATASETS = ("OGBN-Papers", "OGBN-Products", "Reddit")
_PAPER_DATASET = {"papers100m-like": "OGBN-Papers", "ogbn-papers100M": "OGBN-Papers",
                  "products-like": "OGBN-Products", "ogbn-products": "OGBN-Products",
                  "reddit-like": "Reddit", "reddit": "Reddit"}


def role(row: pd.Series) -> str | None:
    """The paper's name of a run (module doc), or ``None``."""
    if row["system"] != row["base_system"]:
        return None
    arch = split_model(str(row["model"]))[0]
    method = row.get("method")
    if row["system"] == "rapidgnn" and method == "metis" and arch == "sage":
        return RAPIDGNN
    if row["system"] == "default":
        if method == "metis":
            return {"sage": "DGL-METIS", "gcn": "GCN"}.get(arch)
        if method == "random" and arch == "sage":
            return "DGL-Random"
    return None


def plays_a_role(spec) -> bool:
    """Whether a run (a ``RunSpec``) can play a role: ``rapidgnn`` or ``default`` under its
    own name (what the caption of a role figure describes: ``runs_behind``)."""
    return spec.system == spec.base_system and spec.system in ("rapidgnn", "default")


def paper_dataset(meta: dict) -> str | None:
    """The paper's dataset a dataset directory's ``meta.json`` stands for, if any."""
    source = meta.get("source", {})
    key = source.get("preset") or source.get("name") or source.get("source")
    return _PAPER_DATASET.get(key)


def split_inputs(inputs: list[Path]) -> dict[str, list[Path]]:
    """A figure's inputs by kind: ``runs.csv``, ``partition_stats.csv``, run directories
    (holding ``summary.json``) and dataset directories (``meta.json`` with ``stats``)."""
    kinds: dict[str, list[Path]] = {"runs": [], "partition_stats": [], "run_dirs": [],
                                    "datasets": []}
    for path in map(Path, inputs):
        if path.name == "runs.csv":
            kinds["runs"].append(path)
        elif path.name == "partition_stats.csv":
            kinds["partition_stats"].append(path)
        elif (path / "summary.json").is_file():
            kinds["run_dirs"].append(path)
        elif (path / "meta.json").is_file():
            kinds["datasets"].append(path)
        else:
            raise InputError(f"{path}: not a runs or partition table, run or dataset "
                             "directory")
    return kinds


def load_runs(inputs: list[Path]) -> pd.DataFrame:
    """The runs table with ``method`` (the partitioner, from the partition table),
    ``role``, ``paper_dataset`` (from the dataset directories) and ``step_time_s`` (target
    seconds: the mean epoch time over the steps per epoch). Two runs in one role, cell
    and seed are an :class:`~commgnn.core.errors.InputError` (a pairing would be ambiguous);
    no RapidGNN run at all leaves every figure empty (it says so)."""
    kinds = split_inputs(inputs)
    runs = concat_runs_tables(kinds["runs"])
    parts = pd.concat([pd.read_csv(p) for p in kinds["partition_stats"]], ignore_index=True)
    methods = parts.groupby(["dataset", "partitioning"])["method"].first()
    runs = runs.join(methods, on=["dataset", "partitioning"])
    runs["role"] = runs.apply(role, axis=1)
    papers = {}
    for directory in kinds["datasets"]:
        meta = json.loads((directory / "meta.json").read_text())
        papers[directory.name] = paper_dataset(meta)
    runs["paper_dataset"] = runs["dataset"].map(papers).fillna("")
    runs["step_time_s"] = runs["mean_epoch_time_s"] / runs["steps_per_epoch"]
    played = runs.dropna(subset=["role"])
    twice = played[played.duplicated([*CELL, "seed", "role"], keep=False)]
    if not twice.empty:  # a comparison pairs one run per role, cell and seed
        raise InputError(f"{', '.join(map(str, kinds['runs']))}: runs "
                         f"{', '.join(sorted(twice['run_id']))} play the same role in one "
                         "cell and seed (e.g. two METIS partitionings with the same parts): "
                         "keep one per cell in the experiments")
    return runs


def main_cells(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs of the paper's main comparison (Table 2, Figure 4: its 4 machines): per
    dataset, depth, batch size and network, those at RapidGNN's largest worker count."""
    keys = ["dataset", "layers", "batch_size", "network"]
    most = runs[runs["role"] == RAPIDGNN].groupby(keys)["workers"].max().rename("most")
    runs = runs.join(most, on=keys)
    return runs[runs["workers"] == runs["most"]].drop(columns="most")


def run_ids(values: pd.Series) -> str:
    """The run ids behind an aggregate, in one CSV cell."""
    return ";".join(sorted(set(values)))


def paired_ratio(runs: pd.DataFrame, column: str, numerator: str, denominator: str,
                 cell: list[str] = CELL) -> pd.DataFrame:
    """Per cell: ``column`` of role ``numerator`` over that of role ``denominator`` in the
    same seed's run, mean and spread over seeds, with both run ids."""
    keys = [*cell, "seed"]
    top = runs[runs["role"] == numerator].set_index(keys)[[column, "run_id"]]
    bottom = runs[runs["role"] == denominator].set_index(keys)[[column, "run_id"]]
    pairs = top.merge(bottom, left_index=True, right_index=True,
                      suffixes=("_num", "_den")).reset_index()
    # a zero denominator (e.g. no fetch wait at all) has no finite ratio
    pairs["ratio"] = pairs[f"{column}_num"] / pairs[f"{column}_den"].replace(0, float("nan"))
    pairs["runs"] = pairs["run_id_num"] + ";" + pairs["run_id_den"]
    return pairs.groupby(cell).agg(
        ratio=("ratio", "mean"), ratio_std=("ratio", "std"), seeds=("seed", "nunique"),
        numerator=(f"{column}_num", "mean"), denominator=(f"{column}_den", "mean"),
        run_ids=("runs", run_ids)).reset_index()


def epoch_rows(run_dirs: list[Path]) -> pd.DataFrame:
    """One row per run and epoch of the run directories: the run's identity, its
    ``run_id``, ``workers_per_host`` and the epoch record (rank 0's aggregate over
    workers)."""
    rows = []
    for directory in map(Path, run_dirs):
        summary = json.loads((directory / "summary.json").read_text())
        ident = {k: summary.get(k) for k in ("system", "base_system", "dataset",
                                             "partitioning", "model", "layers", "workers",
                                             "batch_size", "network", "seed")}
        ident["run_id"] = run_id(*(summary[k] for k in RUN_KEYS))
        hosts = summary.get("hosts") or []  # each worker's host: who shares a host meter
        ident["workers_per_host"] = max(Counter(hosts).values(), default=1)
        for line in (directory / "epochs.jsonl").read_text().splitlines():
            epoch = json.loads(line)
            epoch.pop("workers", None)
            rows.append({**ident, **epoch})
    return pd.DataFrame(rows)


def cell_label(row: pd.Series) -> str:
    """A cell's tick label: the part (energy figures), dataset, batch size, workers and
    network, one per line."""
    part = f"{str(row['part']).upper()}\n" if "part" in row else ""
    return (f"{part}{row['dataset']}\nB={row['batch_size']} w{row['workers']}\n"
            f"{row['network']}")


def role_bars(ax, data: pd.DataFrame, column: str, roles: tuple[str, ...],
              keys: list[str] = CELL, error=None) -> dict[str, tuple[list[float], pd.DataFrame]]:
    """Grouped bars of ``column``: a group per distinct ``keys`` of ``data``, a bar per
    role (``error(values)``: its error bars); each role's bar positions and values."""
    groups = data.drop_duplicates(keys).sort_values(keys)
    width = 0.8 / len(roles)
    bars = {}
    for i, name in enumerate(roles):
        values = groups[keys].merge(data[data["role"] == name], on=keys, how="left")
        x = [g + (i - (len(roles) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(x, values[column], width=width, label=name, hatch="//" if i else "",
               yerr=error(values) if error else None)
        bars[name] = (x, values)
    ax.set_xticks(range(len(groups)), [cell_label(g) for _, g in groups.iterrows()],
                  fontsize=6)
    return bars
