"""The CUDA path of a training run (NCCL, device maps, NVML): runs where a GPU is present.

One worker on one GPU (NCCL refuses two ranks on one device)."""

from __future__ import annotations

import json

import pytest
import torch

from commgnn.data.store import write_dataset
from commgnn.data.synthetic import generate_synthetic
from commgnn.partition import partition_graph, write_partition

pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


def test_one_worker_trains_on_the_gpu(tmp_path, run_on_tiny, make_spec):
    ds = generate_synthetic({"preset": "tiny", "nodes": 600, "seed": 5}, name="tiny")
    write_dataset(ds, tmp_path / "dataset")
    write_partition(partition_graph(ds, {"method": "random", "parts": 1, "seed": 0}),
                    tmp_path / "partition")
    inputs = (tmp_path / "dataset", tmp_path / "partition")
    spec = make_spec(device="cuda", network="10gbe")
    spec = type(spec)(**{**spec.__dict__, "workers": 1})
    out = run_on_tiny(tmp_path, inputs, spec)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["device"] == "cuda:0"
    assert "nvml" in summary["energy_meter"] or summary["energy_meter"].startswith("modelled")
    assert summary["remote_rows_per_epoch"] == 0  # one worker owns everything
    assert summary["test_acc"] > 0.2
