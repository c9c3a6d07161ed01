"""Checks of a real calibration and validation (made by the pipeline test)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from commgnn.sampling.presample import open_presampled
from commgnn.systems.greendygnn.calibrate import predict_step_s
from commgnn.systems.greendygnn.controller import WINDOWS
from commgnn.systems.greendygnn.costmodel import CostModel, read_calibration


def check_calibration(directory: Path, presample: Path, capacity: int,
                      windows: list[int], rpc_points: int) -> dict:
    """The calibration of a real pipeline run: complete, exact tables, and a cost model
    that reproduces its own measurements."""
    data = read_calibration(directory / "calibration.json")
    assert data["runs"]["windows"] == windows
    assert all(s > 0 for s in data["runs"]["step_s"])
    assert data["workload"]["row_bytes"] > 0
    assert len(data["rpc"]["points"]) == rpc_points
    for w in windows:  # the runs are kept with their step records
        assert (directory / "runs" / f"w{w}" / "steps_w0.jsonl").is_file()
    world = data["workload"]["workers"]
    # at W = 1 a window's cache is the batch's own top-K remote nodes: it hits
    # min(K, remote rows) of that batch
    for rank in range(world):
        counts = []
        for epoch in range(data["tables"]["epochs"]):
            with open_presampled(presample, rank, epoch) as reader:
                counts += [reader.read(s).remote_nodes.size for s in range(len(reader))]
        expected = np.mean([min(capacity, c) for c in counts])
        assert sum(data["tables"]["hits_per_batch"][rank][0][0]) == pytest.approx(expected)
        assert sum(data["tables"]["remote_per_batch"][rank]) == pytest.approx(np.mean(counts))
        assert data["tables"]["remote_per_batch"][rank][rank] == 0
    pooled = [sum(sum(data["tables"]["hits_per_batch"][r][wi][0]) for r in range(world))
              for wi in range(len(WINDOWS))]
    assert pooled[0] >= pooled[-1]  # same K over more batches: a smaller share of each
    model = CostModel(data)
    for w, measured in zip(windows, data["runs"]["step_s"], strict=True):
        assert predict_step_s(model, w, 0.0, world) == pytest.approx(measured)
    # a delay lengthens a round trip; one the resolver's measured idle time cannot hide
    # (that slack is at most the clean step; the fit charges at least
    # (κ + min(0, γ)·largest miss bytes·1e3)·δ for it) shows in the step: a busy
    # machine's long tiny-run steps hid 10 ms in one suite run
    fit = data["rpc"]["fit"]
    per_s = fit["delay_coef"] + min(0.0, fit["gamma_s_per_byte_ms"]) * \
        float(model.miss.max()) * model.row_bytes * 1e3
    assert per_s > 0, f"the RPC fit {fit}: a delay shortens a round trip"
    delay_ms = max(10.0, 2e3 * max(data["runs"]["step_s"]) / min(per_s, 1.0))
    assert predict_step_s(model, windows[-1], delay_ms, world) > \
        predict_step_s(model, windows[-1], 0.0, world)
    return data


def check_validation(directory: Path, points: list[tuple[int, float]]) -> dict:
    result = json.loads((directory / "validation.json").read_text())
    assert [(p["window"], p["delay_ms"]) for p in result["points"]] == points
    for p in result["points"]:
        assert p["measured_s"] > 0 and p["predicted_s"] > 0
        assert p["error"] == pytest.approx(abs(p["predicted_s"] - p["measured_s"])
                                           / p["measured_s"])
    assert result["mean_error"] == pytest.approx(np.mean([p["error"]
                                                          for p in result["points"]]))
    assert math.isfinite(result["max_error"])
    return result
