"""HopGNN Figure 11 with P3: speedups against DGL (P3 on its own random partitioning
falls back to the cell's DGL run), HopGNN over P3 per seed, bytes per step by kind —
against hand-computed toy runs."""

from __future__ import annotations

import pandas as pd
import pytest

from commgnn.systems.hopgnn.figures import hopgnn_fig11

CELL = {"dataset": "uk", "model": "sage_h16", "layers": 2, "workers": 4, "batch_size": 1024,
        "network": "10gbe"}


def _run(system: str, partitioning: str, seed: int, epoch_s: float, **options) -> dict:
    return {**CELL, "base_system": system, "system": system, "partitioning": partitioning,
            "seed": seed, "mean_epoch_time_s": epoch_s, "features_bytes_per_step": 0.0,
            "activations_bytes_per_step": 0.0, **{f"option_{k}": v for k, v in options.items()}}


def test_fig11_puts_p3_beside_dgl_and_hopgnn(tmp_path):
    runs = pd.DataFrame([
        _run("default", "metis4", 0, 10.0, schedule="global"),
        _run("default", "metis4", 1, 12.0, schedule="global"),
        _run("hopgnn", "metis4", 0, 4.0, mode="micrograph", pregather=True, merging="search"),
        _run("hopgnn", "metis4", 1, 4.0, mode="micrograph", pregather=True, merging="search"),
        {**_run("p3", "random4", 0, 8.0), "activations_bytes_per_step": 1000.0},
        {**_run("p3", "random4", 1, 6.0), "activations_bytes_per_step": 3000.0},
        # P3 pipelined is its own bar; HopGNN's speedup over P3 stays the unpipelined one's
        _run("p3", "random4", 0, 5.0, pipeline=2),
        _run("p3", "random4", 1, 4.0, pipeline=2),
    ])
    runs["option_pipeline"] = runs["option_pipeline"].fillna(0)
    runs.to_csv(tmp_path / "runs.csv", index=False)
    data = hopgnn_fig11.make([tmp_path / "runs.csv"], tmp_path / "fig11.png")
    by = data.set_index("variant")
    assert set(by.index) == {"DGL", "All", "p3", "p3+pipeline"}
    assert by.loc["p3+pipeline", "speedup_vs_dgl"] == pytest.approx((10 / 5 + 12 / 4) / 2)
    # P3 ran on random4, DGL on metis4 only: P3's seeds pair with the cell's DGL runs
    assert by.loc["p3", "speedup_vs_dgl"] == pytest.approx((10 / 8 + 12 / 6) / 2)
    assert by.loc["All", "speedup_vs_dgl"] == pytest.approx((10 / 4 + 12 / 4) / 2)
    assert by.loc["All", "speedup_vs_p3"] == pytest.approx((8 / 4 + 6 / 4) / 2)
    assert by.loc["All", "speedup_vs_p3_std"] == pytest.approx(pd.Series([2.0, 1.5]).std())
    assert by.loc["p3", "activations_bytes_per_step"] == pytest.approx(2000.0)
    assert (tmp_path / "fig11.png").stat().st_size > 0


def test_fig11_without_p3_has_no_p3_speedup(tmp_path):
    runs = pd.DataFrame([
        _run("default", "metis4", 0, 10.0, schedule="global"),
        _run("hopgnn", "metis4", 0, 5.0, mode="micrograph", pregather=True, merging="search"),
    ])
    runs.to_csv(tmp_path / "runs.csv", index=False)
    data = hopgnn_fig11.make([tmp_path / "runs.csv"], tmp_path / "fig11.png")
    assert data["speedup_vs_p3"].isna().all()
    assert data.set_index("variant").loc["All", "speedup_vs_dgl"] == pytest.approx(2.0)
