"""benchmarks/collect_greendygnn.py on hand-made epoch tables: which epochs count as
congested (from each run's schedule, the clean run's from its workload's congested runs),
the overhead seed by seed, and the best static window per phase against the controllers."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
collect = importlib.import_module("collect_greendygnn")

#: Epoch 0 clean warm-up, epochs 1-2 one machine delayed, epoch 3 two, epoch 4 clean.
PHASES = ["clean", "m1 15 ms", "m1 15 ms", "m1 25 ms, m2 15 ms", "clean"]


def _run(label: str, method: str, seed: int, energies: list[float], congested: bool = True,
         window: float = np.nan, workload: str = "w") -> list[dict]:
    return [{"label": label, "method": method, "network": "congested" if congested else "clean",
             "congested": congested, "workload": workload, "seed": seed, "window": window,
             "epoch": e, "phase": PHASES[e] if congested else "clean",
             "delay_ms": (max(float(x.split()[1]) for x in PHASES[e].split(", "))
                          if congested and PHASES[e] != "clean" else 0.0),
             "energy_j": j, "gpu_j": j / 2, "cpu_j": j / 2, "energy_in_run_j": j,
             "time_s": j / 10, "hit_rate": 0.5, "fetch_mb_per_step": 1.0, "extra_mb": 0.0,
             "mean_window": window, "delay_est_ms": np.nan}
            for e, j in enumerate(energies)]


def _epochs(*runs: list[dict]) -> pd.DataFrame:
    return collect.mark_congested_epochs(pd.DataFrame([r for run in runs for r in run]))


def test_congested_epochs_come_from_the_schedule_and_pair_clean_runs_with_them():
    epochs = _epochs(_run("DGL", "DGL", 0, [10, 20, 20, 30, 10]),
                     _run("DGL", "DGL", 0, [10, 11, 12, 13, 14], congested=False),
                     _run("X", "DGL", 0, [1, 1, 1, 1, 1], congested=False, workload="other"))
    marked = epochs.groupby(["network", "workload"])["congested_epoch"].apply(
        lambda c: list(np.flatnonzero(c.to_numpy())))
    assert marked[("congested", "w")] == [1, 2, 3]
    assert marked[("clean", "w")] == [1, 2, 3]  # the congested run's epochs
    assert marked[("clean", "other")] == []  # no congested run of its workload
    per = collect.per_run(epochs, congested_only=True)
    (row,) = collect.overhead(per)
    assert row["congested_j"] == pytest.approx(70 / 3)
    assert row["clean_j"] == pytest.approx(12.0)  # epochs 1-3 of the clean run
    assert row["overhead_pct"] == pytest.approx(100 * (70 / 36 - 1))
    whole = collect.per_run(epochs, congested_only=False)
    assert whole.set_index("network").loc["congested", "total_kj"] == pytest.approx(0.09)


def test_overhead_pairs_each_seed_with_its_own_clean_run():
    epochs = _epochs(_run("R", "RapidGNN", 0, [1, 2, 2, 2, 1]),
                     _run("R", "RapidGNN", 1, [1, 4, 4, 4, 1]),
                     _run("R", "RapidGNN", 0, [1, 1, 1, 1, 1], congested=False),
                     _run("R", "RapidGNN", 1, [2, 2, 2, 2, 2], congested=False))
    rows = collect.overhead(collect.per_run(epochs, congested_only=True))
    assert [(r["seed"], r["overhead_pct"]) for r in rows] == [(0, 100.0), (1, 100.0)]


def test_the_best_static_window_per_phase_and_the_oracle():
    static = {4: [10, 30, 30, 50, 10], 16: [8, 40, 40, 45, 8]}
    epochs = _epochs(*(_run(f"GreenDyGNN-static({w})", "GreenDyGNN-static", 0, j,
                            window=float(w)) for w, j in static.items()),
                     _run("GreenDyGNN", "GreenDyGNN", 0, [9, 30, 30, 40, 9], window=8.0),
                     _run("GreenDyGNN", "GreenDyGNN", 1, [9, 32, 32, 40, 9], window=8.0))
    (network,) = collect.phases(epochs)
    best = {r["phase"]: (r["best_W"], r["best_j"], r["epochs"]) for r in network["phases"]}
    assert best == {"clean": (16, 8.0, [0, 4]), "m1 15 ms": (4, 30.0, [1, 2]),
                    "m1 25 ms, m2 15 ms": (16, 45.0, [3])}
    learned = next(m for m in network["methods"] if m["method"] == "GreenDyGNN")
    assert learned["seeds"] == 2
    assert learned["j_by_phase"]["m1 15 ms"] == pytest.approx(31.0)
    assert learned["vs_best_static_pct_by_phase"]["m1 25 ms, m2 15 ms"] == \
        pytest.approx(100 * (40 / 45 - 1))
    oracle = (8 + 30 + 30 + 45 + 8) / 5  # every epoch at its phase's best static W
    assert learned["oracle_j"] == pytest.approx(oracle)
    assert learned["vs_oracle_pct"] == pytest.approx(100 * (24.0 / oracle - 1))
