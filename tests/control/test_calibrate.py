"""Calibration (Algorithm 1) and simulator validation (Figure 8) with real runs on the
tiny inputs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from commgnn.control.calibrate import calibrate, predict_step_s, validate
from commgnn.control.controller import WINDOWS
from commgnn.control.costmodel import CostModel, read_calibration
from commgnn.errors import InputError
from commgnn.sampling.presample import open_presampled
from commgnn.systems import get_system

CAPACITY = 100
SETTINGS = {"epochs": 1, "windows": [2, 8], "table_epochs": 2, "rpc_rows": [10, 200],
            "rpc_delays_ms": [0, 5], "rpc_repeats": 1}


@pytest.fixture(scope="module")
def calibrated(tiny_inputs, tiny_presampled, make_spec, tmp_path_factory):
    spec = make_spec("greendygnn", epochs=1,
                     network={"preset": "10gbe", "time_dilation": 5},
                     system_options=get_system("greendygnn").resolve_options(
                         {"cache_rows": CAPACITY}))
    paths = {"dataset": str(tiny_inputs[0]), "partition": str(tiny_inputs[1]),
             "presample": str(tiny_presampled)}
    out = tmp_path_factory.mktemp("calibration")
    result = calibrate(spec, paths, out, SETTINGS)
    return spec, paths, out, result


def test_calibration_file_is_complete_and_readable(calibrated) -> None:
    _, _, out, result = calibrated
    data = read_calibration(out / "calibration.json")
    assert data == result
    assert data["runs"]["windows"] == [2, 8]
    assert all(s > 0 for s in data["runs"]["step_s"])
    assert data["workload"]["time_dilation"] == 5.0
    assert data["workload"]["workers"] == 2 and data["workload"]["row_bytes"] > 0
    assert len(data["rpc"]["points"]) == 4
    assert data["rpc"]["fit"]["alpha_s"] > 0
    for w in (2, 8):  # the runs are kept with their step records
        assert (out / "runs" / f"w{w}" / "steps_w0.jsonl").is_file()
    model = CostModel(data)
    assert model.world == 2 and model.steps == data["workload"]["steps_per_epoch"]


def test_hit_tables_equal_a_direct_count(calibrated, tiny_presampled) -> None:
    # at W = 1 a window's cache is the batch's own top-K remote nodes: it hits
    # min(K, remote rows) of that batch
    data = calibrated[3]
    for rank in range(2):
        counts = []
        for epoch in range(2):
            with open_presampled(tiny_presampled, rank, epoch) as reader:
                counts += [reader.read(s).remote_nodes.size for s in range(len(reader))]
        expected = np.mean([min(CAPACITY, c) for c in counts])
        assert sum(data["tables"]["hits_per_batch"][rank][0][0]) == pytest.approx(expected)
        remote = sum(data["tables"]["remote_per_batch"][rank])
        assert remote == pytest.approx(np.mean(counts))
        assert data["tables"]["remote_per_batch"][rank][rank] == 0
    # a larger window never holds a larger share of each batch (same K, more batches)
    pooled = [sum(sum(data["tables"]["hits_per_batch"][r][wi][0]) for r in range(2))
              for wi in range(len(WINDOWS))]
    assert pooled[0] >= pooled[-1]


def test_prediction_at_a_calibration_window_is_the_measurement(calibrated) -> None:
    data = calibrated[3]
    model = CostModel(data)
    for w, measured in zip(data["runs"]["windows"], data["runs"]["step_s"], strict=True):
        assert predict_step_s(model, w, 0.0, 2) == pytest.approx(measured)
    # a delay makes the step slower, more so with more misses (smaller hit rate)
    assert predict_step_s(model, 8, 10.0, 2) > predict_step_s(model, 8, 0.0, 2)


def test_validation_compares_held_out_runs(calibrated, tmp_path) -> None:
    spec, paths, _, data = calibrated
    result = validate(spec, paths, data, tmp_path, {"epochs": 1, "windows": [4],
                                                    "delays_ms": [0, 5]})
    assert [(p["window"], p["delay_ms"]) for p in result["points"]] == [(4, 0.0), (4, 5.0)]
    for p in result["points"]:
        assert p["measured_s"] > 0 and p["predicted_s"] > 0
        assert p["error"] == pytest.approx(abs(p["predicted_s"] - p["measured_s"])
                                           / p["measured_s"])
    assert result["mean_error"] == pytest.approx(np.mean([p["error"]
                                                          for p in result["points"]]))
    assert math.isfinite(result["max_error"])
    delayed = next(p for p in result["points"] if p["delay_ms"] > 0)
    clean = next(p for p in result["points"] if p["delay_ms"] == 0)
    assert delayed["measured_s"] > clean["measured_s"]  # the emulated delay is real


def test_a_bad_calibration_file_is_one_line_naming_it(tmp_path, calibrated) -> None:
    bad = tmp_path / "calibration.json"
    bad.write_text("{}")
    with pytest.raises(InputError, match=r"calibration\.json"):
        read_calibration(bad)
    data = dict(calibrated[3])
    data["tables"] = {**data["tables"], "windows": [1, 2]}
    with pytest.raises(InputError, match="windows"):
        CostModel(data)
