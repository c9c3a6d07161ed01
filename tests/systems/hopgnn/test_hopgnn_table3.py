"""HopGNN Table 3: each variant's accuracy and its drop from DGL's, within cells of one
number of epochs — against hand-made toy runs."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from commgnn.systems.hopgnn.figures import hopgnn_table3

CELL = {"dataset": "uk", "model": "deepgcn_h16-7", "layers": 7, "workers": 4,
        "batch_size": 1024, "network": "10gbe", "partitioning": "metis4"}


def _run(system: str, seed: int, epochs: int, acc: float, **options) -> dict:
    return {**CELL, "base_system": system, "system": system, "seed": seed, "epochs": epochs,
            "test_acc": acc, **{f"option_{k}": v for k, v in options.items()}}


HOPGNN = {"mode": "micrograph", "pregather": True, "merging": "search"}


def test_table3_drops_only_against_dgl_of_as_many_epochs(tmp_path):
    runs = pd.DataFrame([
        _run("default", 0, 1, 0.08, schedule="global"),
        _run("default", 1, 1, 0.06, schedule="global"),
        _run("hopgnn", 0, 3, 0.17, **HOPGNN),  # the search's three epochs: no DGL beside it
        _run("default", 0, 3, 0.16, schedule="global"),
        _run("hopgnn", 0, 1, 0.07, **HOPGNN),
    ])
    runs.to_csv(tmp_path / "runs.csv", index=False)
    data = hopgnn_table3.make([tmp_path / "runs.csv"], tmp_path / "table3.png")
    by = data.set_index(["variant", "epochs"])
    assert by.loc[("DGL", 1), "test_acc"] == pytest.approx(0.07)
    assert by.loc[("DGL", 1), "seeds"] == 2
    assert by.loc[("All", 1), "drop_vs_dgl"] == pytest.approx(0.0)
    assert by.loc[("All", 3), "dgl_test_acc"] == pytest.approx(0.16)
    assert by.loc[("All", 3), "drop_vs_dgl"] == pytest.approx(-0.01)
    runs.drop(index=3).to_csv(tmp_path / "runs.csv", index=False)
    data = hopgnn_table3.make([tmp_path / "runs.csv"], tmp_path / "table3.png")
    by = data.set_index(["variant", "epochs"])
    assert math.isnan(by.loc[("All", 3), "drop_vs_dgl"])
    assert (tmp_path / "table3.png").stat().st_size > 0
