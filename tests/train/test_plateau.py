"""The validation-plateau rule (``train.plateau``) on hand-computed accuracies, and
``training.stop_at_plateau`` ending real runs at the first evaluation that meets it, also
across a resume."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from commgnn.core.config import load_config
from commgnn.core.errors import ConfigError
from commgnn.train.plateau import EPSILON, at_plateau, gain_of_last
from commgnn.train.summary import stopped_at_plateau

pytestmark = pytest.mark.timeout(180)


def test_the_gain_is_the_best_minus_the_best_before_the_window() -> None:
    vals = [0.2, 0.5, 0.6, 0.61, 0.604, 0.603]
    assert math.isclose(gain_of_last(vals), 0.61 - 0.6)  # the last 3 vs [0.2, 0.5, 0.6]
    assert math.isclose(gain_of_last(vals, window=2), 0.0)  # 0.61 was before the last 2
    assert math.isnan(gain_of_last(vals[:3]))  # nothing before the window


def test_a_plateau_needs_more_evaluations_than_the_window() -> None:
    assert not at_plateau([0.5, 0.5, 0.5], 0.01)  # 3 evaluations: unknown, not a plateau
    assert at_plateau([0.5, 0.5, 0.5, 0.5], 0.0)
    assert at_plateau([0.2, 0.7, 0.65, 0.66, 0.69], 0.0)  # a fall counts as no gain
    assert at_plateau([0.2, 0.7, 0.71, 0.70, 0.70], 0.01)
    assert not at_plateau([0.2, 0.7, 0.72, 0.70, 0.70], 0.01)


def test_the_summary_says_whether_the_rule_ended_the_run() -> None:
    rows = [{"val_acc": v} for v in (0.3, 0.6, 0.6, 0.61, 0.6)]
    assert stopped_at_plateau(None, rows) is None  # the rule was off
    assert stopped_at_plateau(0.01, rows) is True
    assert stopped_at_plateau(0.005, rows) is False  # ran to its bound


def _val_accs(run: Path) -> list[float]:
    return [json.loads(line)["val_acc"] for line in
            (run / "epochs.jsonl").read_text().splitlines()]


def test_a_run_stops_at_its_first_plateau_and_a_resumed_one_at_the_same(
        tiny_inputs, tmp_path, run_on_tiny, make_spec, read_steps):
    spec = make_spec(epochs=30, stop_at_plateau=0.01)
    full = run_on_tiny(tmp_path, tiny_inputs, spec, name="full")
    vals = _val_accs(full)
    summary = json.loads((full / "summary.json").read_text())
    n = len(vals)
    assert 4 <= n < 30, "the tiny run should plateau well inside its bound"
    assert at_plateau(vals, 0.01)
    assert not any(at_plateau(vals[:k], 0.01) for k in range(1, n))  # the first time
    assert (summary["epochs"], summary["stopped_at_plateau"]) == (n, True)
    assert summary["val_gain_last3"] <= 0.01 + EPSILON
    assert {r["epoch"] for r in read_steps(full, 0)} == set(range(n))

    # stopped one epoch short of its plateau, then resumed: the evaluations before the
    # interruption count, so it stops at the same epoch with the same accuracies
    run_on_tiny(tmp_path, tiny_inputs, make_spec(epochs=n - 1, stop_at_plateau=0.01),
                name="resumed")
    resumed = run_on_tiny(tmp_path, tiny_inputs, spec, name="resumed")
    assert json.loads((resumed / "summary.json").read_text())["resumed_from_epoch"] == n - 1
    assert _val_accs(resumed) == vals


def test_the_rule_needs_evaluations(tmp_path):
    config = {"datasets": {"d": {"source": "synthetic", "preset": "tiny"}},
              "partitionings": {"p": {"method": "random", "parts": 2}},
              "training": {"stop_at_plateau": 0.005, "eval_every": 0}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match=r"training\.eval_every: 0 is less than the minimum"):
        load_config(path)
