"""A tiny synthetic dataset partitioned in two, shared by the training tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from commgnn.data.store import write_dataset
from commgnn.data.synthetic import generate_synthetic
from commgnn.partition import partition_graph, write_partition
from commgnn.train.spec import RunSpec


@pytest.fixture(scope="session")
def tiny_inputs(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("tiny")
    ds = generate_synthetic({"preset": "tiny", "nodes": 600, "seed": 5}, name="tiny")
    write_dataset(ds, root / "dataset")
    part = partition_graph(ds, {"method": "metis", "parts": 2, "seed": 0})
    write_partition(part, root / "partition")
    return root / "dataset", root / "partition"


def make_spec(system: str = "default", epochs: int = 2, network: str = "none",
              **training) -> RunSpec:
    net = {"preset": network}
    base = {"epochs": epochs, "fanouts": [5, 5], "hidden": 16, "lr": 0.01,
            "eval_max_nodes": 50, "rpc_timeout_s": 20, "collective_timeout_s": 20}
    base.update(training)
    return RunSpec(system=system, dataset="tiny", partitioning="metis2", model="sage",
                   batch_size=64, network=network, network_spec=net, seed=7, workers=2,
                   training=base)
