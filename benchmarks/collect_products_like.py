"""Summarise the products-like benchmark run into benchmarks/results/.

Reads what `snakemake --configfile benchmarks/configs/products_like.yaml` wrote under
results/bench-products/ (Snakemake benchmark TSVs, partition stats, the runs table and the
Figure 5 data) and writes benchmarks/results/products_like.{json,md} plus the figures.
Every time ratio compares runs of that one invocation on one machine.
"""

from __future__ import annotations

import json
import platform
import shutil
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results" / "bench-products"
OUT = ROOT / "benchmarks" / "results"
COMMAND = ".venv/bin/snakemake --cores 2 --configfile benchmarks/configs/products_like.yaml"


def tsv(path: Path) -> dict:
    row = pd.read_csv(path, sep="\t").iloc[0]
    return {"wall_s": float(row["s"]), "max_rss_mb": float(row["max_rss"]),
            "cpu_time_s": float(row["cpu_time"])}


def main() -> int:
    runs = pd.read_csv(RESULTS / "tables" / "runs.csv")
    stats = json.loads((RESULTS / "partitions/products-like/metis4/stats.json").read_text())
    meta = json.loads((RESULTS / "datasets/products-like/meta.json").read_text())
    bench = RESULTS / "benchmarks"
    systems = {}
    for network, group in runs.groupby("network"):
        group = group.set_index("system")
        default, oracle = group.loc["default"], group.loc["oracle"]
        for name, row in group.iterrows():
            fallbacks = row.get("prefetch_fallbacks_per_epoch")
            systems[f"{name}@{network}"] = {
                "system": name,
                "network": network,
                "n_hot": None if pd.isna(row.get("option_n_hot")) else int(row["option_n_hot"]),
                "mean_epoch_time_s": float(row["mean_epoch_time_s"]),
                "epoch_time_vs_default": float(row["mean_epoch_time_s"]
                                               / default["mean_epoch_time_s"]),
                "epoch_time_vs_oracle": float(row["mean_epoch_time_s"]
                                              / oracle["mean_epoch_time_s"]),
                "remote_rows_per_epoch": float(row["remote_rows_per_epoch"]),
                "step_remote_rows_per_epoch": float(row["step_remote_rows_per_epoch"]),
                "remote_rpcs_per_epoch": float(row["remote_rpcs_per_epoch"]),
                "remote_rows_reduction_vs_default": (
                    float(default["remote_rows_per_epoch"] / row["remote_rows_per_epoch"])
                    if row["remote_rows_per_epoch"] else None),
                "step_miss_reduction_vs_default": (
                    float(default["remote_rows_per_epoch"] / row["step_remote_rows_per_epoch"])
                    if row["step_remote_rows_per_epoch"] else None),
                "prefetch_fallbacks_per_epoch": None if pd.isna(fallbacks) else float(fallbacks),
                "test_acc": float(row["test_acc"]),
                "energy_j": float(row["energy_j"]),
                "energy_meter": row["energy_meter"],
                "peak_mem_bytes": int(row["peak_mem_bytes"]),
            }
    result = {
        "command": COMMAND + " && .venv/bin/python benchmarks/collect_products_like.py",
        "machine": {"platform": platform.platform(), "python": sys.version.split()[0],
                    "cpus": 2, "note": "CPU only; 4 workers share 2 cores"},
        "dataset": {**meta["stats"], "generation": tsv(bench / "dataset/products-like.tsv")},
        "partition_metis4": {
            "wall": tsv(bench / "partition/products-like/metis4.tsv"),
            "edge_cut_fraction": stats["edge_cut_fraction"], "balance": stats["balance"],
            "train_balance": stats["train_balance"],
            "parts_bytes": [p["bytes"] for p in stats["parts"]],
            "total_bytes": stats["total_bytes"],
        },
        "presample": tsv(next((bench / "presample").rglob("*.tsv"))),
        "runs": systems,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "products_like.json").write_text(json.dumps(result, indent=2) + "\n")
    for name in ("rapidgnn_fig5.png", "rapidgnn_fig5.csv", "rapidgnn_fig3.png",
                 "rapidgnn_fig3.csv"):
        source = RESULTS / "figures" / name
        if source.exists():
            shutil.copy(source, OUT / f"products_like_{name}")
    lines = ["| network | system | n_hot | epoch s | vs default | vs oracle | "
             "remote rows/epoch (incl. cache fills) | step misses/epoch | reduction vs default "
             "(total / misses) | RPCs/epoch | fallbacks/epoch | test acc |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in sorted(systems.values(), key=lambda s: (s["network"], s["mean_epoch_time_s"])):
        red, miss = s["remote_rows_reduction_vs_default"], s["step_miss_reduction_vs_default"]
        fallbacks = s["prefetch_fallbacks_per_epoch"]
        lines.append(
            f"| {s['network']} | {s['system']} | "
            f"{s['n_hot'] if s['n_hot'] is not None else ''} | "
            f"{s['mean_epoch_time_s']:.1f} | {s['epoch_time_vs_default']:.2f} | "
            f"{s['epoch_time_vs_oracle']:.2f} | {s['remote_rows_per_epoch']:.0f} | "
            f"{s['step_remote_rows_per_epoch']:.0f} | "
            f"{'' if red is None else f'{red:.2f}x'} / {'' if miss is None else f'{miss:.1f}x'}"
            f" | {s['remote_rpcs_per_epoch']:.0f} | {'' if fallbacks is None else fallbacks}"
            f" | {s['test_acc']:.4f} |")
    (OUT / "products_like.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
