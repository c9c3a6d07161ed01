"""benchmarks/collect_greendygnn_dqn.py's decision-lag count on a hand-made worker's step
records: a window is decided at the first step of the window before it, and a congested
step under a window decided in a clean epoch is stale."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
collect = importlib.import_module("collect_greendygnn_dqn")

#: 3 epochs of 4 steps; epoch 0 clean, epochs 1-2 delayed. Windows (index: steps):
#: 0: 0-3 (W 4), 1: 4-5 (W 2), 2: 6-7 (W 2), 3: 8-11 (W 4); δ̂ rises from step 4.
WINDOWS = [(0, 4, -1), (1, 2, 2), (2, 2, 1), (3, 4, -1)]


def _steps(shuffle: bool = False) -> pd.DataFrame:
    rows, g = [], 0
    for index, size, bias in WINDOWS:
        for _ in range(size):
            rows.append({"epoch": g // 4, "step": g % 4, "window_index": index,
                         "window": size, "bias_owner": bias,
                         "delay_est_ms": 0.0 if g < 4 else 10.0 + g})
            g += 1
    frame = pd.DataFrame(rows)
    return frame.sample(frac=1.0, random_state=0) if shuffle else frame


def test_each_window_is_decided_at_the_start_of_the_one_before():
    windows = collect.windows_of(_steps(shuffle=True), steps_per_epoch=4)
    assert [w["start"] for w in windows] == [0, 4, 6, 8]
    assert [w["steps"] for w in windows] == [4, 2, 2, 4]
    assert [w["decided_at"] for w in windows] == [0, 0, 4, 6]
    assert [w["decided_delay_est_ms"] for w in windows] == [0.0, 0.0, 14.0, 16.0]
    assert [w["epochs"] for w in windows] == [[0], [1], [1], [2]]
    assert [w["bias_owner"] for w in windows] == [-1, 2, 1, -1]


def test_congested_steps_under_a_clean_epochs_decision_are_stale():
    lag = collect.decision_lag(_steps(), steps_per_epoch=4, delays_ms=[0.0, 10.0, 10.0])
    assert lag["congested_steps"] == 8
    assert lag["stale_steps"] == 2  # window 1 (steps 4-5), decided at step 0
    clean = collect.decision_lag(_steps(), steps_per_epoch=4, delays_ms=[0.0, 0.0, 0.0])
    assert (clean["congested_steps"], clean["stale_steps"]) == (0, 0)
    late = collect.decision_lag(_steps(), steps_per_epoch=4, delays_ms=[0.0, 0.0, 10.0])
    assert (late["congested_steps"], late["stale_steps"]) == (4, 4)  # window 3: step 6


def test_figure_8_section_says_why_when_validation_was_not_run(tmp_path):
    assert collect.read_validation(tmp_path) is None
    assert "control.validate: false" in collect.validation_lines(None)[0]
    val = {"mean_error": 0.05, "max_error": 0.25,
           "points": [{"window": 4, "delay_ms": 10.0, "measured_s": 0.2, "predicted_s": 0.25,
                       "error": 0.25}]}
    (tmp_path / "validation").mkdir()
    (tmp_path / "validation" / "validation.json").write_text(json.dumps(val))
    lines = collect.validation_lines(collect.read_validation(tmp_path))
    assert lines[0] == "Mean error 5.0 %, max 25.0 % (paper: 2.8 %, < 5 %)."
    assert lines[-1] == "| 4 | 10 | 0.2000 | 0.2500 | 25.0 % |"
