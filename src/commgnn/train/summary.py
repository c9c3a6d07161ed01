"""Aggregate per-worker epoch records into epoch rows and the run's ``summary.json``.

Synchronous training: an epoch lasts as long as its slowest worker, so epoch time is the
max over workers; communication counts and energy are sums over workers.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import mean

import pandas as pd
import torch

from commgnn.train.spec import RunSpec

SUMMED = ("remote_rpcs", "remote_rows", "remote_bytes", "cache_hits", "cache_misses",
          "local_rows", "energy_j", "steps")
SYSTEM_SUMMED = ("prefetch_fallbacks", "extra_remote_rows", "extra_remote_rpcs")
SYSTEM_MAX = ("cache_bytes_max", "staged_bytes_max", "memory_bound_bytes")
TIMES = ("sample_s", "fetch_wait_s", "compute_s", "sync_emulated_s")


def epoch_summary(epoch: int, workers: list[dict]) -> dict:
    """One epoch's record: aggregates plus the per-worker records."""
    seen = sum(w["seen"] for w in workers)
    row = {
        "epoch": epoch,
        "time_s": max(w["time_s"] for w in workers),
        "train_loss": sum(w["loss_sum"] for w in workers) / max(1, sum(w["steps"]
                                                                       for w in workers)),
        "train_acc": sum(w["correct"] for w in workers) / max(1, seen),
        "peak_mem_bytes": max(w["peak_mem_bytes"] for w in workers),
        "workers": workers,
    }
    for key in SUMMED:
        row[key] = sum(w[key] for w in workers)
    # Traffic a system sends outside its steps (e.g. cache fills) counts as remote traffic.
    for key in ("rpcs", "rows", "bytes"):
        extra = sum(w.get(f"extra_remote_{key}", 0) for w in workers)
        row[f"step_remote_{key}"] = row[f"remote_{key}"]
        row[f"remote_{key}"] += extra
    for key in SYSTEM_SUMMED:
        if key in workers[0]:
            row[key] = sum(w[key] for w in workers)
    for key in SYSTEM_MAX:
        if key in workers[0]:
            row[key] = max(w[key] for w in workers)
    for key in TIMES:
        row[f"{key}_max"] = max(w[key] for w in workers)
    for key in ("val_acc", "test_acc"):
        if key in workers[0]:
            row[key] = workers[0][key]
    return row


def run_summary(spec: RunSpec, epochs: list[dict], meter: str, device: torch.device,
                launcher: str) -> dict:
    """The run's summary: the keys every system reports, then extras."""
    last_eval = [e for e in epochs if "test_acc" in e]
    per_epoch = {key: mean(e[key] for e in epochs) for key in
                 ("remote_rpcs", "remote_rows", "remote_bytes", "cache_hits", "cache_misses")}
    return {
        "system": spec.system,
        "dataset": spec.dataset,
        "partitioning": spec.partitioning,
        "model": spec.model,
        "batch_size": spec.batch_size,
        "network": spec.network,
        "seed": spec.seed,
        "workers": spec.workers,
        "epochs": len(epochs),
        "mean_epoch_time_s": mean(e["time_s"] for e in epochs),
        "remote_rpcs_per_epoch": per_epoch["remote_rpcs"],
        "remote_rows_per_epoch": per_epoch["remote_rows"],
        "remote_bytes_per_epoch": per_epoch["remote_bytes"],
        "cache_hits_per_epoch": per_epoch["cache_hits"],
        "cache_misses_per_epoch": per_epoch["cache_misses"],
        "test_acc": last_eval[-1]["test_acc"] if last_eval else math.nan,
        "val_acc": last_eval[-1]["val_acc"] if last_eval else math.nan,
        "final_train_loss": epochs[-1]["train_loss"],
        "energy_j": sum(e["energy_j"] for e in epochs),
        "energy_meter": meter,
        "peak_mem_bytes": max(e["peak_mem_bytes"] for e in epochs),
        "steps_per_epoch": epochs[-1]["steps"] // spec.workers,
        "epoch_times_s": [e["time_s"] for e in epochs],
        "step_remote_rows_per_epoch": mean(e["step_remote_rows"] for e in epochs),
        **{f"{key}_per_epoch": mean(e[key] for e in epochs)
           for key in SYSTEM_SUMMED if key in epochs[-1]},
        **{key: max(e[key] for e in epochs) for key in SYSTEM_MAX if key in epochs[-1]},
        "device": str(device),
        "launcher": launcher,
        "network_spec": spec.network_spec,
        "training": spec.training,
        "system_options": spec.system_options,
    }


def write_tidy_tables(run_dir: Path, workers: int) -> None:
    """``steps.csv`` (one row per worker and step) and ``epochs.csv`` (one row per worker
    and epoch) beside the JSONL records, for pandas."""
    steps = pd.concat([pd.read_json(run_dir / f"steps_w{w}.jsonl", lines=True)
                       for w in range(workers)], ignore_index=True)
    steps.sort_values(["epoch", "step", "worker"]).to_csv(run_dir / "steps.csv", index=False)
    rows = []
    for line in (run_dir / "epochs.jsonl").read_text().splitlines():
        epoch = json.loads(line)
        for worker in epoch["workers"]:
            rows.append({**worker, **{f"run_{k}": v for k, v in epoch.items()
                                      if k in ("val_acc", "test_acc", "time_s")}})
    pd.DataFrame(rows).to_csv(run_dir / "epochs.csv", index=False)
