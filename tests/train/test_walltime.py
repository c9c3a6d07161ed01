"""A run's wall-time breakdown: phases from every worker's stamps, against a hand-computed
two-worker toy, and the phases of a real run adding up to its total."""

from __future__ import annotations

import json

import pytest

from commgnn.train.walltime import KEYS, PHASES, WallClock, breakdown


def _clock(started, stamps, epochs_s, evaluation_s) -> WallClock:
    return WallClock(started=started, stamps=dict(zip(("entry", "loaded", "joined", "ready",
                                                       "done"), stamps, strict=True)),
                     epochs_s=epochs_s, evaluation_s=evaluation_s)


def test_each_phase_ends_at_its_last_worker():
    # process started at 100, launched at 102; worker 1 enters late, worker 0 loads late
    clocks = [_clock((100.0, 102.0), (105.0, 109.0, 110.0, 112.0, 130.0), 10.0, 3.0),
              _clock((100.0, 102.0), (106.0, 108.0, 110.5, 112.0, 130.0), 11.0, 2.0)]
    wall = breakdown(clocks)
    assert wall["wall_interpreter_raw_s"] == pytest.approx(2.0)
    assert wall["wall_workers_start_raw_s"] == pytest.approx(4.0)  # 106 - 102
    assert wall["wall_load_raw_s"] == pytest.approx(3.0)  # 109 - 106
    assert wall["wall_rendezvous_raw_s"] == pytest.approx(1.5)  # 110.5 - 109
    assert wall["wall_prepare_raw_s"] == pytest.approx(1.5)  # 112 - 110.5
    assert wall["wall_epochs_raw_s"] == pytest.approx(11.0)  # the slower worker's
    assert wall["wall_evaluation_raw_s"] == pytest.approx(3.0)
    assert wall["wall_records_raw_s"] == pytest.approx(130 - 112 - 11 - 3)
    assert wall["wall_total_raw_s"] == pytest.approx(30.0)
    assert sum(wall[f"wall_{p}_raw_s"] for p in PHASES) == pytest.approx(30.0)
    assert wall["wall_outside_epochs"] == pytest.approx(1 - 11 / 30)
    assert set(wall) == set(KEYS)


def test_under_torchrun_each_task_counts_from_its_own_process():
    # tasks started at 100 and 101 and launched at 103 and 104: the earliest start, the
    # latest launch
    clocks = [_clock((100.0, 103.0), (105.0, 106.0, 107.0, 108.0, 118.0), 9.0, 0.0),
              _clock((101.0, 104.0), (105.0, 106.0, 107.0, 108.0, 118.0), 9.0, 0.0)]
    wall = breakdown(clocks)
    assert wall["wall_interpreter_raw_s"] == pytest.approx(4.0)
    assert wall["wall_workers_start_raw_s"] == pytest.approx(1.0)
    assert wall["wall_total_raw_s"] == pytest.approx(18.0)


def test_an_unknown_mark_is_refused():
    with pytest.raises(ValueError, match="'started'"):
        WallClock((0.0, 0.0)).mark("started")


def test_a_real_runs_phases_add_up(tiny_inputs, tmp_path, run_on_tiny, make_spec):
    out = run_on_tiny(tmp_path, tiny_inputs, make_spec(epochs=2))
    summary = json.loads((out / "summary.json").read_text())
    phases = {p: summary[f"wall_{p}_raw_s"] for p in PHASES}
    assert all(seconds >= 0 for seconds in phases.values()), phases
    assert sum(phases.values()) == pytest.approx(summary["wall_total_raw_s"])
    # the slowest worker's sum of its epochs; each epoch's row is that epoch's slowest
    epochs = sum(summary["epoch_times_raw_s"])
    assert 0.8 * epochs <= phases["epochs"] <= epochs + 1e-9
    assert phases["evaluation"] > 0  # the last epoch evaluates
    assert 0 < summary["wall_outside_epochs"] < 1
