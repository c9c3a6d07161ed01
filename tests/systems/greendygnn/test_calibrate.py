"""Calibration files (Algorithm 1). The real calibration and validation runs are made
once, by the pipeline test (``tests/test_pipeline.py``, the control section of its tiny
config), which checks them with :mod:`control_checks`."""

from __future__ import annotations

import pytest
from control_toys import toy_calibration

from commgnn.core.errors import InputError
from commgnn.systems.greendygnn.costmodel import CostModel, read_calibration


def test_a_bad_calibration_file_is_one_line_naming_it(tmp_path) -> None:
    bad = tmp_path / "calibration.json"
    bad.write_text("{}")
    with pytest.raises(InputError, match=r"calibration\.json"):
        read_calibration(bad)
    bad.write_text("not json")
    with pytest.raises(InputError, match=r"calibration\.json"):
        read_calibration(bad)
    data = toy_calibration()
    data["tables"] = {**data["tables"], "windows": [1, 2]}
    with pytest.raises(InputError, match="windows"):
        CostModel(data)


def test_calibration_runs_ignore_the_plateau_rule(make_spec):
    """A calibration run measures every epoch it is given, whatever the user's
    ``training.stop_at_plateau`` (the rule needs evaluations; calibration makes none)."""
    from commgnn.systems.greendygnn.calibrate import _run_spec

    template = make_spec(epochs=9, stop_at_plateau=0.005)
    spec = _run_spec(template, window=4, epochs=3, delay_ms=5.0, name="calibrate-w4")
    assert (spec.get("epochs"), spec.get("eval_every"), spec.get("stop_at_plateau")) == \
        (3, 0, None)
    assert template.get("stop_at_plateau") == 0.005  # the template is left as it was
