"""Every JSON the project writes is strict (issue 14, item 3): a non-finite float (e.g.
the hit rate of a run without a cache, a diverged loss) is written as ``null``, never as a
bare ``NaN``/``Infinity`` that strict parsers refuse."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from commgnn.core.files import write_json_atomic
from commgnn.train.metrics import StepRecord

pytestmark = pytest.mark.timeout(120)


def _refuse(constant: str):
    raise ValueError(f"non-standard JSON constant {constant}")


def strict_loads(text: str):
    """``json.loads`` that refuses NaN, Infinity and -Infinity (RFC 8259)."""
    return json.loads(text, parse_constant=_refuse)


def _parse_all(directory: Path) -> int:
    count = 0
    for path in sorted(directory.rglob("*.json*")):
        lines = path.read_text().splitlines() if path.suffix == ".jsonl" \
            else [path.read_text()]
        for line in filter(None, lines):
            try:
                strict_loads(line)
            except ValueError as exc:
                raise AssertionError(f"{path}: {exc}") from None
            count += 1
    return count


def test_a_runs_outputs_and_its_inputs_parse_strictly(tiny_inputs, tmp_path, run_on_tiny,
                                                      make_spec):
    out = run_on_tiny(tmp_path, tiny_inputs, make_spec(epochs=1))
    assert _parse_all(out) > 3
    summary = strict_loads((out / "summary.json").read_text())
    assert summary["hit_rate"] is None  # no cache: not applicable (was a bare NaN)
    for directory in tiny_inputs:
        assert _parse_all(directory) >= 1


def test_writers_turn_non_finite_floats_into_null(tmp_path):
    path = tmp_path / "x.json"
    write_json_atomic(path, {"a": math.nan, "b": [1.5, -math.inf], "c": {"d": math.inf}})
    assert strict_loads(path.read_text()) == {"a": None, "b": [1.5, None], "c": {"d": None}}
    record = StepRecord(**{name: 0 for name in StepRecord.__dataclass_fields__
                           if name != "extra"}, extra={"delay_est_ms": math.nan})
    record.loss = math.nan
    data = strict_loads(record.to_json())
    assert data["loss"] is None and data["delay_est_ms"] is None
