"""Collect the DistDGL comparison (benchmarks/configs/distdgl_arxiv.yaml) into one table
(JSON + Markdown): per system, mean ± std over seeds of the sampler, fetch and compute
time per batch, the remote and all input rows per batch, the epoch time (raw wall
seconds: no emulated network) and the test accuracy after the same epochs, with the
per-seed values; and `distdgl`'s remote rows against `default`'s, seed by seed.

Usage: python benchmarks/collect_distdgl.py RESULTS_DIR OUT_PREFIX
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd

ORDER = ["default", "default-replicated", "distdgl"]


def _std(values: pd.Series) -> float:
    return float(values.std(ddof=1)) if len(values) > 1 else float("nan")


def run_rows(results: Path) -> pd.DataFrame:
    """One row per run: its steps' means and its summary's values."""
    rows = []
    for summary_path in sorted((results / "runs").glob("*/*/*/*/summary.json")):
        summary = json.loads(summary_path.read_text())
        steps = pd.read_csv(summary_path.parent / "steps.csv")
        rows.append({
            "system": summary["system"], "seed": summary["seed"],
            "epochs": summary["epochs"], "steps_per_epoch": summary["steps_per_epoch"],
            "sample_s_per_batch": float(steps["sample_s"].mean()),
            "fetch_s_per_batch": float(steps["fetch_wait_s"].mean()),
            "compute_s_per_batch": float(steps["compute_s"].mean()),
            "remote_rows_per_batch": float(steps["remote_rows"].mean()),
            "input_rows_per_batch": float((steps["remote_rows"] + steps["local_rows"]).mean()),
            "epoch_s_raw": summary["mean_epoch_time_raw_s"],
            "test_acc": summary["test_acc"], "final_train_loss": summary["final_train_loss"],
            "run": str(summary_path.parent.relative_to(results)),
        })
    return pd.DataFrame(rows)


METRICS = ("sample_s_per_batch", "fetch_s_per_batch", "compute_s_per_batch",
           "remote_rows_per_batch",
           "input_rows_per_batch", "epoch_s_raw", "test_acc", "final_train_loss")


def collect(runs: pd.DataFrame) -> dict:
    table = []
    for system in [s for s in ORDER if s in set(runs["system"])]:
        group = runs[runs["system"] == system].sort_values("seed")
        row = {"system": system, "seeds": group["seed"].tolist(),
               "epochs": int(group["epochs"].iloc[0]),
               "steps_per_epoch": int(group["steps_per_epoch"].iloc[0]),
               "runs": group["run"].tolist()}
        for metric in METRICS:
            row[metric] = float(group[metric].mean())
            row[f"{metric}_std"] = _std(group[metric])
            row[f"{metric}_per_seed"] = group[metric].round(6).tolist()
        table.append(row)
    pairs = runs.pivot(index="seed", columns="system", values="remote_rows_per_batch")
    ratio = (pairs["distdgl"] / pairs["default"]) if {"distdgl", "default"} <= set(pairs) \
        else pd.Series(dtype=float)
    return {"systems": table,
            "distdgl_over_default_remote_rows": {
                "mean": float(ratio.mean()), "std": _std(ratio),
                "per_seed": ratio.round(4).tolist()}}


def markdown(result: dict) -> str:
    head = ("| system | sampler s/batch | fetch s/batch | compute s/batch | remote rows/batch "
            "| input rows/batch | epoch s (raw) | test acc | final train loss |\n"
            "|---|---|---|---|---|---|---|---|---|\n")
    body = ""
    for row in result["systems"]:
        cells = [f"{row[m]:.4g} ± {row[m + '_std']:.2g}" for m in METRICS]
        body += f"| {row['system']} | " + " | ".join(cells) + " |\n"
    ratio = result["distdgl_over_default_remote_rows"]
    return (head + body + f"\ndistdgl ÷ default remote rows per batch: {ratio['mean']:.4f} ± "
            f"{ratio['std']:.2g} (per seed {ratio['per_seed']})\n")


def main() -> None:
    results, out = Path(sys.argv[1]), Path(sys.argv[2])
    result = collect(run_rows(results))
    result["command"] = "python benchmarks/collect_distdgl.py " + " ".join(sys.argv[1:])
    out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    out.with_suffix(".md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
