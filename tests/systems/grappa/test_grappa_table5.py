"""Grappa Table 5 analogue (Cluster-GCN against Grappa, GCN-2) on hand-made runs tables."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest

from commgnn.catalog import FIGURES
from commgnn.systems.clustergcn.system import ClusterGCNSystem
from commgnn.systems.grappa.figures import grappa_table5

CELL = {"dataset": "d", "workers": 2, "network": "10gbe", "batch_size": 64, "layers": 2,
        "model": "gcn", "epochs": 3}
GRAPPA_OPTIONS = {"option_estimator": "resampling", "option_switching": "sweep",
                  "option_remote_edge_fraction": 0.0, "option_mode": "sampling",
                  "option_active_workers": 0}
CLUSTER_OPTIONS = {"option_clusters": 8, "option_clusters_per_batch": 2,
                   "option_diag_lambda": 1.0}


def _run(system, base, partitioning, seed, epoch_s, acc, **extra):
    return {**CELL, "run_id": f"{system}/{seed}/{extra.get('model', 'gcn')}", "system": system,
            "base_system": base, "partitioning": partitioning, "seed": seed,
            "mean_epoch_time_s": epoch_s, "test_acc": acc, **extra}


def _tables(tmp_path, rows) -> list:
    runs, parts = tmp_path / "runs.csv", tmp_path / "partition_stats.csv"
    pd.DataFrame(rows).to_csv(runs, index=False)
    pd.DataFrame([{"dataset": "d", "partitioning": "metis2", "method": "metis", "part": p,
                   "partition_time_s": 2.0} for p in range(2)] +
                 [{"dataset": "d", "partitioning": "chunk2", "method": "chunk", "part": p,
                   "partition_time_s": 0.25} for p in range(2)]).to_csv(parts, index=False)
    return [runs, parts]


ROWS = [
    _run("clustergcn", "clustergcn", "metis2", 0, 1.0, 0.70, clustering_raw_s=3.0,
         **CLUSTER_OPTIONS),
    _run("clustergcn", "clustergcn", "metis2", 1, 2.0, 0.72, clustering_raw_s=5.0,
         **CLUSTER_OPTIONS),
    _run("grappa", "grappa", "chunk2", 0, 3.5, 0.80, switch_s_per_epoch=0.5, **GRAPPA_OPTIONS),
    _run("grappa", "grappa", "chunk2", 1, 4.5, 0.76, switch_s_per_epoch=0.5, **GRAPPA_OPTIONS),
    # not in the table: Grappa-UW, a GraphSAGE Grappa, a 3-layer Cluster-GCN, default
    _run("grappa-uw", "grappa", "chunk2", 0, 9.0, 0.1, switch_s_per_epoch=0.5,
         **{**GRAPPA_OPTIONS, "option_estimator": "none"}),
    _run("grappa", "grappa", "chunk2", 0, 9.0, 0.1, switch_s_per_epoch=0.5,
         **{**GRAPPA_OPTIONS, "model": "sage"}),
    _run("clustergcn", "clustergcn", "metis2", 0, 9.0, 0.1, clustering_raw_s=1.0,
         **{**CLUSTER_OPTIONS, "model": "gcn-3", "layers": 3}),
    _run("default", "default", "metis2", 0, 9.0, 0.1),
]


def test_registered_and_declared():
    assert "grappa_table5" in FIGURES
    assert ClusterGCNSystem.figures["grappa_table5"] == ("runs", "partition_stats")


def test_estimators_by_hand(tmp_path, monkeypatch):
    drawn = {}
    monkeypatch.setattr(grappa_table5, "save_table",
                        lambda shown, out, title, empty, **kw: drawn.update(shown=shown))
    data = grappa_table5.make(_tables(tmp_path, ROWS), tmp_path / "t5.png")
    assert list(data.columns) == grappa_table5.COLUMNS
    assert data["system"].tolist() == ["Cluster-GCN", "Grappa"]
    cg, gr = (data.iloc[i] for i in range(2))
    assert cg["setting"] == "C=8 q=2 λ=1" and gr["setting"] == "grappa"
    assert cg["seeds"] == gr["seeds"] == 2
    sd = math.sqrt(0.5)  # sample spread of two values 1 apart
    # Cluster-GCN: epochs 1, 2; accuracy .70, .72; partition 2 + clustering 3 | 5
    assert cg["epoch_time_s"] == pytest.approx(1.5)
    assert cg["epoch_time_std_s"] == pytest.approx(sd)
    assert cg["test_acc"] == pytest.approx(0.71)
    assert cg["test_acc_std"] == pytest.approx(0.02 * sd)
    assert cg["clustering_s"] == pytest.approx(4.0) and cg["partition_s"] == 2.0
    assert cg["preprocessing_s"] == pytest.approx(6.0)
    assert cg["preprocessing_std_s"] == pytest.approx(2 * sd)
    assert math.isnan(cg["switch_s"])
    assert cg["total_500_s"] == pytest.approx(6.0 + 500 * 1.5)
    # Grappa: epochs without switches 3, 4; switches 0.5 x 3 epochs; partition 0.25
    assert gr["epoch_time_s"] == pytest.approx(3.5)
    assert gr["test_acc"] == pytest.approx(0.78)
    assert gr["switch_s"] == pytest.approx(1.5) and math.isnan(gr["clustering_s"])
    assert gr["preprocessing_s"] == pytest.approx(1.75)
    assert gr["total_500_s"] == pytest.approx(1.75 + 500 * 3.5)
    # against Grappa in the same cell, and the paper's values
    assert cg["epoch_time_vs_grappa"] == pytest.approx(1.5 / 3.5)
    assert cg["acc_vs_grappa"] == pytest.approx(-0.07)
    assert gr["epoch_time_vs_grappa"] == 1.0 and gr["acc_vs_grappa"] == 0.0
    assert (cg["paper_epoch_time_s"], cg["paper_test_acc"], cg["paper_preprocessing_s"]) == \
        (1.2, 0.7390, 881.0)
    assert (gr["paper_epoch_time_s"], gr["paper_test_acc"], gr["paper_preprocessing_s"]) == \
        (2.6, 0.7663, 125.0)
    assert cg["paper_total_500_s"] == pytest.approx(1481)
    assert gr["paper_total_500_s"] == pytest.approx(1425)
    assert cg["paper_epoch_time_vs_grappa"] == pytest.approx(1.2 / 2.6)
    assert cg["run_ids"] == "clustergcn/0/gcn;clustergcn/1/gcn"
    shown = drawn["shown"]
    assert shown["epoch time, s"].tolist() == ["1.5±0.707 (1.2)", "3.5±0.707 (2.6)"]
    assert shown["of which, s"].tolist() == ["partition 2 + clustering 4",
                                             "partition 0.25 + switches 1.5"]


def test_draws_the_table_and_an_empty_one_says_so(tmp_path, monkeypatch):
    inputs = _tables(tmp_path, ROWS)
    data = grappa_table5.make(inputs, tmp_path / "t5.png")
    assert (tmp_path / "t5.png").stat().st_size > 0 and (tmp_path / "t5.pdf").is_file()
    assert len(data) == 2
    drawn = {}
    monkeypatch.setattr(grappa_table5, "save_table",
                        lambda shown, out, title, empty, **kw: drawn.update(shown=shown,
                                                                            empty=empty))
    data = grappa_table5.make(_tables(tmp_path, ROWS[4:]), tmp_path / "none.png")
    assert data.empty and list(data.columns) == grappa_table5.COLUMNS
    assert drawn["shown"].empty
    assert drawn["empty"] == "no two-layer GCN run of Cluster-GCN or Grappa in the runs table"


def test_runs_behind(make_spec):
    def spec(system, model="gcn", fanouts=(5, 5), **options):
        base = make_spec(system, fanouts=list(fanouts))
        resolved = {**options, "system": system}
        return dataclasses.replace(base, model=model, system_options=resolved)

    assert grappa_table5.runs_behind(spec("clustergcn"))
    assert grappa_table5.runs_behind(spec("grappa", estimator="resampling"))
    assert not grappa_table5.runs_behind(spec("grappa", estimator="none"))
    assert not grappa_table5.runs_behind(spec("grappa", model="sage"))
    assert not grappa_table5.runs_behind(spec("clustergcn", model="gcn-3",
                                              fanouts=(5, 5, 5)))
    assert not grappa_table5.runs_behind(spec("default"))


def test_model_selection_follows_the_columns(tmp_path, monkeypatch):
    """Runs that recorded model selection: the largest gain of the last 3 evaluations over
    seeds (unknown if any seed has none) and the cell's Grappa's follow the columns."""
    monkeypatch.setattr(grappa_table5, "save_table", lambda *a, **kw: None)
    gains = [0.001, 0.004, 0.002, math.nan, 0.0, 0.0, 0.0, 0.0]  # ROWS' order
    rows = [{**row, "val_gain_last3": g} for row, g in zip(ROWS, gains, strict=True)]
    data = grappa_table5.make(_tables(tmp_path, rows), tmp_path / "t5.png")
    assert list(data.columns) == [*grappa_table5.COLUMNS, "val_gain_last3",
                                  "val_gain_last3_grappa"]
    cg, gr = (data.iloc[i] for i in range(2))
    assert cg["val_gain_last3"] == pytest.approx(0.004) and math.isnan(gr["val_gain_last3"])
    assert math.isnan(cg["val_gain_last3_grappa"])
