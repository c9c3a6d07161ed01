"""Collect a Grappa benchmark's runs table into ratio and accuracy tables (JSON + Markdown).

Usage: python benchmarks/collect_grappa.py RUNS_CSV OUT_PREFIX [--accuracy-only]

Per model, depth (layers), partition count and seed, for each baseline variant (`default` on each
partitioning: DGL-METIS, DGL-Random): the baseline's epoch time over Grappa's, with
Grappa's epoch time excluding its switches (the paper's accounting) and including them;
then mean, standard deviation and the per-seed values. Per model, depth and variant
(Grappa, its ablations, the baselines): the last evaluation's test accuracy, mean ± std
over seeds, and where the runs recorded model selection the test accuracy at the best
validation epoch and the largest gain of the last 3 evaluations (a plateau: near 0). Per
model, depth, partition count and variant: the epoch time (Grappa's without its
switches, the paper's accounting, and its switch time's share of the epoch with them).
Times are target times (raw ÷ time dilation) as in every summary; the dilation factors
are listed.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pandas as pd

from commgnn.systems.grappa.figures import grappa_fig4
from commgnn.systems.grappa.figures.grappa_runs import load_runs

#: Grappa Figure 4's cell: the epoch-time table's rows.
FIG4_KEYS = ["dataset", "model", "layers", "variant", "workers"]


def ratios(runs: pd.DataFrame) -> list[dict]:
    """Per model, depth and baseline variant (``default`` on each partitioning): the
    baseline's epoch time over Grappa's, seeds paired."""
    out = []
    base = runs[runs["base_system"] == "default"]
    grappa = runs[runs["variant"] == "Grappa"]
    for (model, layers, workers), cell in grappa.groupby(["model", "layers", "workers"]):
        g = cell.set_index("seed")
        for baseline, group in base[(base["model"] == model) & (base["layers"] == layers)
                                    & (base["workers"] == workers)].groupby("variant"):
            d = group.set_index("seed")
            seeds = sorted(set(g.index) & set(d.index))
            for label, column in (("excl. switch", "epoch_time_excl_switch_s"),
                                  ("incl. switch", "mean_epoch_time_s")):
                values = [float(d.loc[s, "mean_epoch_time_s"] / g.loc[s, column])
                          for s in seeds]
                series = pd.Series(values, dtype=float)
                out.append({"model": model, "layers": int(layers), "workers": int(workers),
                            "baseline": baseline,
                            "ratio": f"{baseline} / grappa epoch ({label})",
                            "mean": series.mean(), "std": series.std(ddof=1)
                            if len(values) > 1 else float("nan"),
                            "per_seed": values, "seeds": seeds,
                            "default_s": [float(d.loc[s, "mean_epoch_time_s"]) for s in seeds],
                            "grappa_s": [float(g.loc[s, column]) for s in seeds],
                            "dilation": sorted({float(x) for x in d["time_dilation"]}
                                               | {float(x) for x in g["time_dilation"]})})
    return out


def epoch_times(runs: pd.DataFrame) -> list[dict]:
    """Grappa Figure 4's epoch times by partition count (without switches; every variant
    but Grappa's has none), with the switches' share of the epoch time with them."""
    share = (runs.assign(share=runs["switch_s_per_epoch"] / runs["mean_epoch_time_s"])
             .groupby(FIG4_KEYS)["share"].mean().rename("switch_share").reset_index())
    data = grappa_fig4.by_partitions(runs).merge(share, on=FIG4_KEYS)
    dilation = runs.groupby(FIG4_KEYS)["time_dilation"].agg(
        lambda f: sorted({float(x) for x in f})).rename("dilation").reset_index()
    return data.merge(dilation, on=FIG4_KEYS).to_dict("records")


def accuracy(runs: pd.DataFrame) -> list[dict]:
    """Per model, depth, partition count and variant: the last evaluation's test accuracy,
    and where the runs recorded model selection the test accuracy at the best validation
    epoch and the largest gain of the last 3 evaluations (a plateau: near 0)."""
    rows = []
    for (model, layers, workers, variant), group in runs.groupby(
            ["model", "layers", "workers", "variant"]):
        group = group.sort_values("seed")
        row = {"model": model, "layers": int(layers), "workers": int(workers),
               "variant": variant,
               "test_acc": group["test_acc"].mean(),
               "test_acc_std": group["test_acc"].std(ddof=1) if len(group) > 1
               else float("nan"),
               "per_seed": group["test_acc"].tolist(),
               "epochs": int(group["epochs"].max()),
               "epochs_per_seed": [int(e) for e in group["epochs"]]}
        stopped = group.get("stopped_at_plateau")
        if stopped is not None and stopped.notna().any():  # runs under stop_at_plateau
            row["stopped_at_plateau"] = int(stopped.fillna(False).astype(bool).sum())
        if "test_acc_at_best_val" in group:
            row["test_acc_at_best_val"] = group["test_acc_at_best_val"].mean()
            row["val_gain_last3_max"] = group["val_gain_last3"].max(skipna=False)
        rows.append(row)
    return rows


def markdown(title: str, ratio_rows: list[dict], time_rows: list[dict],
             acc_rows: list[dict]) -> str:
    lines = [f"# {title} (generated by benchmarks/collect_grappa.py)", ""]
    if not time_rows:
        lines += ["Accuracy only: these runs' epoch times are not a measure (`--accuracy-only`).",
                  ""]
    if ratio_rows:
        lines += ["## Epoch time ratio (target times)", "",
                  "| model | layers | P | ratio | mean | std | per seed | f |",
                  "|---|---|---|---|---|---|---|---|"]
        for r in ratio_rows:
            per = ", ".join(f"{v:.2f}" for v in r["per_seed"])
            dil = ", ".join(f"{f:.0f}" for f in r["dilation"])
            lines.append(f"| {r['model']} | {r['layers']} | {r['workers']} | {r['ratio']} "
                         f"| {r['mean']:.2f} "
                         f"| {r['std']:.2f} | {per} | {dil} |")
        lines.append("")
    if time_rows:
        lines += ["## Epoch time (target s; Grappa's without switches) and switch share", "",
                  "| model | layers | P | variant | seeds | epoch s | std | switch share | f |",
                  "|---|---|---|---|---|---|---|---|---|"]
    for r in time_rows:
        dil = ", ".join(f"{f:.3g}" for f in r["dilation"])
        lines.append(f"| {r['model']} | {r['layers']} | {r['workers']} | {r['variant']} "
                     f"| {r['seeds']} | {r['epoch_time_s']:.4f} | {r['epoch_time_std_s']:.4f} "
                     f"| {r['switch_share']:.3f} | {dil} |")
    lines += ["", "## Test accuracy (last evaluation; at the best validation epoch; the largest "
              "gain of the last 3 evaluations over seeds, unknown with 3 or fewer)", "",
              "| model | layers | P | variant | epochs (per seed) | mean | std | per seed "
              "| at best val "
              "| val gain last 3 |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in acc_rows:
        per = ", ".join(f"{v:.3f}" for v in r["per_seed"])
        epochs = ", ".join(str(e) for e in r["epochs_per_seed"])
        if "stopped_at_plateau" in r:  # runs under training.stop_at_plateau
            epochs += f" ({r['stopped_at_plateau']} of {len(r['per_seed'])} at the plateau)"
        best = r.get("test_acc_at_best_val", float("nan"))
        gain = r.get("val_gain_last3_max", float("nan"))
        lines.append(f"| {r['model']} | {r['layers']} | {r['workers']} | {r['variant']} "
                     f"| {epochs} "
                     f"| {r['test_acc']:.3f} | {r['test_acc_std']:.3f} | {per} | {best:.3f} "
                     f"| {gain:.3f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs_csv", type=Path)
    parser.add_argument("prefix", type=Path)
    parser.add_argument("--accuracy-only", action="store_true",
                        help="only the accuracy table (runs whose times are not a measure, "
                             "e.g. on the network `none`)")
    args = parser.parse_args()
    runs_csv, prefix = args.runs_csv, args.prefix
    runs = load_runs([runs_csv])
    acc_rows = accuracy(runs)
    ratio_rows, time_rows = ([], []) if args.accuracy_only else (ratios(runs), epoch_times(runs))
    prefix.with_suffix(".json").write_text(json.dumps(
        {"ratios": ratio_rows, "epoch_times": time_rows, "accuracy": acc_rows}, indent=2,
        default=float) + "\n")
    prefix.with_suffix(".md").write_text(markdown(prefix.name, ratio_rows, time_rows,
                                                  acc_rows))
    print(prefix.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
