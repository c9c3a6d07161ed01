"""Re-pricing a target energy v2 run to v3 from its own records (commgnn.train.reprice):
hand-computed joules, the totals and provenance that follow, idempotence, refusals."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from commgnn.core.errors import InputError
from commgnn.core.testbed import ENERGY_MODEL
from commgnn.energy.target import TargetPowerModel
from commgnn.train.reprice import reprice_run

V2 = "synthetic v2; congestion v2; dilation per workload; target energy v2; evaluation v2"


def _worker(rank: int, time_s: float, joules: float) -> dict:
    return {"worker": rank, "time_s": time_s, "time_dilation": 2.0,
            "energy_target_gpu_j": 0.6 * joules, "energy_target_cpu_j": 0.4 * joules,
            "energy_target_j": joules}


def _v2_run(root, energy: str = "target energy v2"):
    """Two epochs of two workers at f = 2: epoch 0 ends together, in epoch 1 worker 1
    ends 4 s raw (2 s target) before worker 0."""
    epochs = [[_worker(0, 10.0, 800.0), _worker(1, 10.0, 700.0)],
              [_worker(0, 10.0, 900.0), _worker(1, 6.0, 500.0)]]
    rows, cum = [], 0.0
    for e, workers in enumerate(epochs):
        total = sum(w["energy_target_j"] for w in workers)
        cum += total
        rows.append({"epoch": e, "time_s": max(w["time_s"] for w in workers),
                     "time_dilation": 2.0, "workers": workers, "energy_target_j": total,
                     "energy_target_gpu_j": 0.6 * total, "energy_target_cpu_j": 0.4 * total,
                     "energy_target_cum_j": cum, "val_acc": None})
    root.mkdir()
    (root / "epochs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    model = {"meter": "target-model", "modelled": True,
             **TargetPowerModel(gpu_idle_w=60, cpu_idle_w=40).__dict__}
    testbed = V2.replace("target energy v2", energy)
    summary = {"workers": 2, "energy_target_model": model, "energy_target_j": cum,
               "energy_target_gpu_j": 0.6 * cum, "energy_target_cpu_j": 0.4 * cum,
               "energy_target_per_epoch_j": cum / 2, "testbed": testbed,
               "provenance": {"commit": "abc", "energy": energy, "testbed": testbed}}
    (root / "summary.json").write_text(json.dumps(summary))
    return root


def _rows(root):
    return [json.loads(line) for line in (root / "epochs.jsonl").read_text().splitlines()]


def test_a_v2_run_gets_the_idle_of_its_boundary_wait(tmp_path):
    run = _v2_run(tmp_path / "run")
    assert reprice_run(run) is True
    first, second = _rows(run)
    assert [w["boundary_wait_s"] for w in first["workers"]] == [0.0, 0.0]
    assert first["energy_target_j"] == 1500.0
    # worker 1 idles 2 s target: 60 W GPU + 40 W CPU → +120 J, +80 J
    fast = second["workers"][1]
    assert fast["boundary_wait_s"] == 4.0
    assert (fast["energy_target_gpu_j"], fast["energy_target_cpu_j"]) == (420.0, 280.0)
    assert second["energy_target_j"] == pytest.approx(1600.0)
    assert second["boundary_wait_s"] == 4.0
    assert second["energy_target_cum_j"] == pytest.approx(3100.0)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["energy_target_j"] == pytest.approx(3100.0)
    assert summary["energy_target_gpu_j"] == pytest.approx(0.6 * 2900 + 120)
    assert summary["energy_target_per_epoch_j"] == pytest.approx(1550.0)
    testbed = V2.replace("target energy v2", ENERGY_MODEL)
    assert summary["testbed"] == summary["provenance"]["testbed"] == testbed
    assert summary["provenance"]["energy"] == ENERGY_MODEL
    assert summary["energy_repriced"]["from"] == "target energy v2"
    # a second pass finds the run on the model: nothing charged twice
    before = (run / "epochs.jsonl").read_bytes(), (run / "summary.json").read_bytes()
    assert reprice_run(run) is False
    assert ((run / "epochs.jsonl").read_bytes(), (run / "summary.json").read_bytes()) == before


def test_an_interrupted_reprice_finishes_without_charging_twice(tmp_path):
    run = _v2_run(tmp_path / "run")
    summary_v2 = (run / "summary.json").read_bytes()
    reprice_run(run)
    (run / "summary.json").write_bytes(summary_v2)  # as if stopped before the summary
    assert reprice_run(run) is True
    assert json.loads((run / "summary.json").read_text())["energy_target_j"] == \
        pytest.approx(3100.0)


def test_v1_records_and_unfinished_runs_are_refused_by_name(tmp_path):
    run = _v2_run(tmp_path / "old", energy="target energy v1")
    with pytest.raises(InputError, match=r"old/summary.json: energy model 'target energy v1'"):
        reprice_run(run)
    assert _rows(run)[1]["energy_target_j"] == 1400.0  # untouched
    (tmp_path / "partial").mkdir()
    with pytest.raises(InputError, match=r"partial/summary.json: missing"):
        reprice_run(tmp_path / "partial")


def test_the_command_reprices_each_run_it_is_given(tmp_path):
    a, b = _v2_run(tmp_path / "a"), _v2_run(tmp_path / "b")
    reprice_run(b)
    done = subprocess.run([sys.executable, "-m", "commgnn", "reprice", str(a), str(b)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"{a}: re-priced to {ENERGY_MODEL}",
                                        f"{b}: already on {ENERGY_MODEL}"]
    missing = subprocess.run([sys.executable, "-m", "commgnn", "reprice", str(tmp_path / "c")],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "c/summary.json: missing" in missing.stderr
