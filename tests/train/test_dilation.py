"""Time dilation in a run: the factor, raw and dilated times in the records."""

from __future__ import annotations

import json

import pytest

from commgnn.config import ConfigError, validate

pytestmark = pytest.mark.timeout(300)


def _epochs(out):
    return [json.loads(line) for line in (out / "epochs.jsonl").read_text().splitlines()]


def test_fixed_dilation_divides_every_reported_time(tiny_inputs, tmp_path, run_on_tiny,
                                                    make_spec):
    out = run_on_tiny(tmp_path, tiny_inputs,
                      make_spec(network={"preset": "10gbe", "time_dilation": 4}))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["time_dilation"] == 4.0
    assert summary["mean_epoch_time_s"] == pytest.approx(summary["mean_epoch_time_raw_s"] / 4)
    assert summary["epoch_times_s"] == pytest.approx([t / 4 for t in
                                                      summary["epoch_times_raw_s"]])
    assert summary["total_time_s"] >= sum(summary["epoch_times_s"])
    assert all(e["time_dilation"] == 4.0 for e in _epochs(out))
    assert summary["network_s_per_step"] > 0 and summary["fetch_mb_per_step"] > 0


def test_auto_dilation_is_the_probe_over_the_reference(tiny_inputs, tmp_path, run_on_tiny,
                                                       make_spec):
    network = {"preset": "none", "time_dilation": "auto", "reference_step_ms": 0.5}
    out = run_on_tiny(tmp_path, tiny_inputs, make_spec(network=network, epochs=1))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["reference_step_s"] == 0.0005
    assert summary["compute_step_probe_s"] > 0
    assert summary["time_dilation"] == max(1.0, summary["compute_step_probe_s"] / 0.0005)


def test_auto_needs_a_reference():
    config = {"datasets": {"t": {"source": "synthetic"}},
              "partitionings": {"m": {"method": "metis", "parts": 2}},
              "networks": {"slow": {"preset": "10gbe", "time_dilation": "auto"}}}
    with pytest.raises(ConfigError, match=r"config\.networks\.slow: 'reference_step_ms' is "
                                          r"a required property"):
        validate(config)
    config["networks"]["slow"]["time_dilation"] = 0.5
    with pytest.raises(ConfigError, match=r"config\.networks\.slow\.time_dilation"):
        validate(config)
