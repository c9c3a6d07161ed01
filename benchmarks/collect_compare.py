"""Collect the side-by-side comparison (configs/compare.yaml) into committed results.

Usage: python benchmarks/collect_compare.py RESULTS_DIR OUT_PREFIX
  e.g. python benchmarks/collect_compare.py results/compare benchmarks/results/compare

Writes, from the pipeline's own outputs (nothing is recomputed here but the wall-time
table):

- ``OUT_PREFIX_runs.csv``: the runs table (``benchmarks/claims_ledger.py`` draws the
  figures a runs table is enough for from it);
- ``OUT_PREFIX_figures/*.csv``: the figure tables that need more than the runs table (run
  directories, control directories, partitions), for the ledger;
- ``OUT_PREFIX_fig.{png,pdf,csv}``: the comparison figure and its table;
- ``OUT_PREFIX_claims.csv``: the pipeline's claims ledger of this run;
- ``OUT_PREFIX.md``: the comparison per network (mean ± std over seeds), each workload's
  dilation f and every system's epoch-time spread over seeds, where each run's
  wall time went (mean seconds per phase and the share outside the epochs) and the ledger's
  verdicts.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pandas as pd

from commgnn.ledger import READS
from commgnn.systems.registry import discover
from commgnn.train.walltime import PHASES


def from_directories() -> list[str]:
    """Figures the claims read that a runs table alone cannot redraw (they also read run,
    control, partition, presample or dataset directories)."""
    return sorted({name for system in discover().values()
                   for name, inputs in system.figures.items()
                   if set(inputs) - {"runs", "partition_stats"}} & set(READS))


def _pm(mean: float, std: float, digits: int) -> str:
    if pd.isna(mean):
        return ""
    return f"{mean:.{digits}f}" + ("" if pd.isna(std) else f" ± {std:.{digits}f}")


def comparison_md(compare: pd.DataFrame) -> list[str]:
    lines = []
    for (model, network), rows in compare.groupby(["model", "network"], sort=True):
        lines += [f"### {model}, {network} (seeds per system: {rows['seeds'].max()})", "",
                  "| system | partitioning | epoch s (target) | traffic MB/step | "
                  "feature MB/step | network s/step | energy J/epoch | test acc | × oracle |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for _, r in rows.sort_values("mean_epoch_time_s").iterrows():
            lines.append(
                f"| {r['entry']} | {r['partitioning']} "
                f"| {_pm(r['mean_epoch_time_s'], r['mean_epoch_time_s_std'], 3)} "
                f"| {_pm(r['traffic_mb_per_step'], r['traffic_mb_per_step_std'], 2)} "
                f"| {_pm(r['fetch_mb_per_step'], r['fetch_mb_per_step_std'], 2)} "
                f"| {_pm(r['network_all_s_per_step'], r['network_all_s_per_step_std'], 4)} "
                f"| {_pm(r['energy_target_per_epoch_j'], r['energy_target_per_epoch_j_std'], 1)} "
                f"| {_pm(r['test_acc'], r['test_acc_std'], 3)} "
                f"| {_pm(r['vs_oracle'], r['vs_oracle_std'], 2)} |")
        lines.append("")
    return lines


def walltime_md(runs: pd.DataFrame) -> list[str]:
    columns = [f"wall_{p}_raw_s" for p in PHASES]
    table = runs.groupby("network")[[*columns, "wall_total_raw_s", "wall_outside_epochs"]]
    lines = ["| network | runs | " + " | ".join(PHASES) + " | total s | outside epochs "
             "(mean, max) |", "|---|---|" + "---|" * (len(PHASES) + 2)]
    for network, rows in table:
        mean = rows.mean()
        lines.append(f"| {network} | {len(rows)} | "
                     + " | ".join(f"{mean[c]:.1f}" for c in columns)
                     + f" | {mean['wall_total_raw_s']:.1f} | "
                       f"{mean['wall_outside_epochs']:.2f}, "
                       f"{rows['wall_outside_epochs'].max():.2f} |")
    return lines


def clock_md(runs: pd.DataFrame) -> list[str]:
    """One clock per workload: each workload's f and reference, the runs' own probes'
    distance from it, and every system's epoch-time spread over seeds (std ÷ mean)."""
    if "workload_key" not in runs:
        return ["(runs from before one clock per workload: no workload probe recorded)"]
    lines = ["| workload | runs | f | reference ms (source) | run probe vs workload's "
             "(min, max) |", "|---|---|---|---|---|"]
    for workload, rows in runs[runs["time_dilation_source"] != "fixed"].groupby(
            "workload", dropna=False):
        f = ", ".join(f"{v:.1f}" for v in sorted(rows["time_dilation"].unique()))
        ref = ", ".join(f"{r * 1e3:.3f} ({s})" for r, s in sorted(set(zip(
            rows["reference_step_s"], rows["reference_step_source"], strict=True))))
        dist = rows["time_dilation_distance"]
        lines.append(f"| {workload} | {len(rows)} | {f} | {ref} | "
                     f"{100 * dist.min():+.0f} %, {100 * dist.max():+.0f} % |")
    lines += ["", "Epoch time (target) over seeds, each system and network: std ÷ mean.", "",
              "| model | network | system | partitioning | seeds | epoch s (mean) | "
              "spread |", "|---|---|---|---|---|---|---|"]
    keys = ["model", "network", "system", "partitioning"]
    for key, rows in runs.groupby(keys, sort=True):
        times = rows["mean_epoch_time_s"]
        spread = times.std(ddof=1) / times.mean() if len(times) > 1 else float("nan")
        lines.append("| " + " | ".join(map(str, key)) + f" | {len(rows)} | "
                     f"{times.mean():.3f} | "
                     + ("" if pd.isna(spread) else f"{100 * spread:.1f} %") + " |")
    return lines


def main(results: Path, out: Path) -> None:
    figures = results / "figures"
    runs = pd.read_csv(results / "tables" / "runs.csv")
    shutil.copyfile(results / "tables" / "runs.csv", f"{out}_runs.csv")
    kept = out.parent / f"{out.name}_figures"
    kept.mkdir(exist_ok=True)
    for name in from_directories():
        if (figures / f"{name}.csv").is_file():
            shutil.copyfile(figures / f"{name}.csv", kept / f"{name}.csv")
    for suffix in ("png", "pdf", "csv"):
        shutil.copyfile(figures / f"compare.{suffix}", f"{out}_fig.{suffix}")
    shutil.copyfile(figures / "claims.csv", f"{out}_claims.csv")
    compare = pd.read_csv(figures / "compare.csv")
    claims = pd.read_csv(figures / "claims.csv")
    verdicts = claims["verdict"].value_counts()
    lines = ["# All systems side by side (configs/compare.yaml)", "",
             "Generated by `benchmarks/collect_compare.py` from one pipeline run; times are "
             "target seconds (raw ÷ the run's time dilation f), energy the target-machine "
             "model, mean ± std over seeds.", "", "## Comparison", "",
             *comparison_md(compare), "## One clock per workload", "", *clock_md(runs), "",
             "## Where each run's wall time went (raw seconds, "
             "mean per network)", "", *walltime_md(runs), "", "## Claims ledger of this run",
             "", ", ".join(f"{v}: {n}" for v, n in verdicts.items()) + f" (of {len(claims)})",
             "", "| claim | paper | ours | verdict | reason |", "|---|---|---|---|---|"]
    for _, r in claims[claims["verdict"] != "not measured"].iterrows():
        ours = _pm(r["our_value"], r["our_spread"], 3)
        lines.append(f"| {r['id']} | {r['paper_value']} | {ours} | {r['verdict']} "
                     f"| {str(r['reason'])[:160]} |")
    Path(f"{out}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(Path(sys.argv[1]), Path(sys.argv[2]))
