"""Every caption, comparison label and ledger row says which traffic the congestion of its
runs delayed (the runs' ``congestion_reach``), and runs tables that predate the column
read as ``unknown`` instead of failing."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from commgnn.core.spec import RunSpec
from commgnn.report.claims import COLUMNS, Claim, Measured, above, judge, ratio_band
from commgnn.report.figures import compare
from commgnn.report.labels import reach_column
from commgnn.report.setting import describe_runs

DATASETS = {"arxiv": {"source": "synthetic", "preset": "arxiv-like", "nodes": 16934}}
SINGLE_LINK = {"kind": "scenario", "name": "single-link", "delay_ms": 20, "onset_epoch": 1}


def _spec(network: str, congestion: dict | None) -> RunSpec:
    net = {"preset": "10gbe", "time_dilation": 60}
    if congestion is not None:
        net["congestion"] = congestion
    return RunSpec(system="default", dataset="arxiv", partitioning="metis4", model="sage",
                   batch_size=1024, network=network, network_spec=net, seed=0, workers=4,
                   training={"epochs": 3, "fanouts": [10, 15], "device": "cpu"})


def test_the_caption_names_the_reach_of_each_congested_network():
    text = describe_runs([_spec("clean", None), _spec("paper", SINGLE_LINK),
                          _spec("whole", {**SINGLE_LINK, "applies_to": "all"})], DATASETS)
    assert "congestion scenario:single-link on fetch+sampling traffic" in text
    assert "whole (10gbe, time dilation f = 60: times are raw ÷ 60; congestion " \
           "scenario:single-link on all traffic)" in text
    assert "clean (10gbe, time dilation f = 60: times are raw ÷ 60)" in text  # no reach


def _run(network: str, congestion: str, system: str = "default", **extra) -> dict:
    return {"dataset": "arxiv", "model": "sage", "layers": 2, "workers": 4,
            "batch_size": 1024, "network": network, "congestion": congestion, "epochs": 3,
            "system": system, "base_system": system, "partitioning": "metis4", "seed": 0,
            "mean_epoch_time_s": 1.0, "time_dilation": 60.0, "traffic_mb_per_step": 1.0,
            "fetch_mb_per_step": 1.0, "network_all_s_per_step": 0.1,
            "energy_target_per_epoch_j": 10.0, "test_acc": 0.5, **extra}


def test_the_comparison_names_the_reach_and_reads_an_older_runs_table(tmp_path):
    new = pd.DataFrame([_run("clean", "none", congestion_reach="none"),
                        _run("single-link", "scenario:single-link", congestion_reach="all")])
    rows = {row["network"]: row for _, row in compare.table(new).iterrows()}
    assert rows["single-link"]["congestion_reach"] == "all"
    assert "congestion scenario:single-link on all traffic" in \
        compare.workload_label(rows["single-link"])
    assert ", congestion" not in compare.workload_label(rows["clean"])
    # a runs table from before the column: clean runs are "none", congested ones unknown
    old = pd.DataFrame([_run("clean", "none"), _run("single-link", "scenario:single-link")])
    old.to_csv(tmp_path / "runs.csv", index=False)
    data = compare.make([tmp_path / "runs.csv"], tmp_path / "compare.png")
    rows = {row["network"]: row for _, row in data.iterrows()}
    assert rows["single-link"]["congestion_reach"] == "unknown"
    assert rows["clean"]["congestion_reach"] == "none"
    assert "congestion scenario:single-link (reach not recorded)" in \
        compare.workload_label(rows["single-link"])


def test_runs_of_different_reaches_are_not_pooled():
    runs = pd.DataFrame([_run("net", "scenario:single-link", congestion_reach="all"),
                         _run("net", "scenario:single-link", congestion_reach="fetch+sampling",
                              seed=1)])
    assert sorted(compare.table(runs)["congestion_reach"]) == ["all", "fetch+sampling"]


def _claim() -> Claim:
    def measure(table: pd.DataFrame) -> Measured:
        return Measured(float(table["value"].mean()), math.nan, 2.0, table)
    return Claim(id="toy", paper="Toy", claim="x", paper_value="2", figure="toy_fig",
                 measure=measure, band=ratio_band(), direction=above(1.0),
                 systems=("default",))


def test_the_ledger_row_names_the_reach_of_its_runs():
    assert "reach" in COLUMNS
    tables = {"toy_fig": pd.DataFrame({"value": [2.0]})}
    runs = pd.DataFrame({"base_system": ["default", "default"], "time_dilation": [60.0] * 2,
                         "congestion": ["none", "scenario:single-link"],
                         "congestion_reach": ["none", "fetch+sampling"]})
    row = judge(_claim(), tables, runs, {})
    assert row["verdict"] == "reproduced"
    assert row["reach"] == "fetch+sampling, none"
    whole = judge(_claim(), tables, runs.assign(congestion_reach=["none", "all"]), {})
    assert whole["reach"] == "all, none"
    # an older runs table: no column, a congested run's reach is unknown
    old = judge(_claim(), tables, runs.drop(columns="congestion_reach"), {})
    assert (old["verdict"], old["reach"]) == ("reproduced", "none, unknown")
    assert judge(_claim(), tables, None, {})["reach"] == ""


@pytest.mark.parametrize(("column", "expected"), [
    (None, ["none", "unknown"]), (["none", "all"], ["none", "all"]),
    ([None, "fetch+sampling"], ["none", "fetch+sampling"]),
])
def test_reach_column_fills_what_is_not_recorded(column, expected):
    runs = pd.DataFrame({"congestion": ["none", "scenario:single-link"]})
    if column is not None:
        runs["congestion_reach"] = column
    assert list(reach_column(runs)) == expected
