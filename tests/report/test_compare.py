"""The side-by-side comparison against hand-computed toy runs: systems of one workload
together (each on its own partitioning), seeds averaged with their spread, epoch time over
the same seed's oracle run, workloads kept apart."""

from __future__ import annotations

import pandas as pd
import pytest

from commgnn.report.figures import compare
from commgnn.report.palette import GREY, system_styles
from commgnn.systems.registry import discover, get_system

WORKLOAD = {"dataset": "arxiv", "model": "sage", "layers": 2, "workers": 4,
            "batch_size": 1024, "network": "10gbe", "congestion": "none", "epochs": 3}


def _run(system, base, partitioning, seed, epoch_s, **extra) -> dict:
    return {**WORKLOAD, "system": system, "base_system": base, "partitioning": partitioning,
            "seed": seed, "mean_epoch_time_s": epoch_s, "time_dilation": 60.0,
            "traffic_mb_per_step": 1.0, "fetch_mb_per_step": 1.0,
            "network_all_s_per_step": 0.1, "energy_target_per_epoch_j": 10.0,
            "test_acc": 0.5, **extra}


def _runs() -> pd.DataFrame:
    return pd.DataFrame([
        _run("oracle", "oracle", "metis4", 0, 1.0), _run("oracle", "oracle", "metis4", 1, 2.0),
        _run("default", "default", "metis4", 0, 3.0, test_acc=0.6),
        _run("default", "default", "metis4", 1, 5.0, test_acc=0.8),
        _run("default", "default", "random4", 0, 8.0),
        _run("grappa", "grappa", "chunk4", 0, 2.0), _run("grappa", "grappa", "chunk4", 1, 3.0),
        # another workload (congested): no oracle there
        {**_run("default", "default", "metis4", 0, 9.0), "congestion": "scenario:single-link"},
    ])


def test_systems_of_a_workload_side_by_side(tmp_path):
    runs = _runs()
    runs.to_csv(tmp_path / "runs.csv", index=False)
    data = compare.make([tmp_path / "runs.csv"], tmp_path / "compare.png")
    clean = data[data["congestion"] == "none"].set_index("entry")
    # default ran on two partitionings of this workload: one entry each
    assert sorted(clean.index) == ["default (metis4)", "default (random4)", "grappa",
                                   "oracle"]
    metis = clean.loc["default (metis4)"]
    assert metis["seeds"] == 2
    assert metis["mean_epoch_time_s"] == pytest.approx(4.0)
    assert metis["mean_epoch_time_s_std"] == pytest.approx(pd.Series([3.0, 5.0]).std())
    assert metis["test_acc"] == pytest.approx(0.7)
    # over the same seed's oracle run: (3/1 + 5/2) / 2
    assert metis["vs_oracle"] == pytest.approx((3 / 1 + 5 / 2) / 2)
    # grappa on chunks: the oracle of its workload ran on one partitioning only
    assert clean.loc["grappa", "vs_oracle"] == pytest.approx((2 / 1 + 3 / 2) / 2)
    assert clean.loc["oracle", "vs_oracle"] == pytest.approx(1.0)
    congested = data[data["congestion"] != "none"]
    assert list(congested["entry"]) == ["default"]  # one partitioning in its workload
    assert congested["vs_oracle"].isna().all()  # no oracle under congestion
    assert (tmp_path / "compare.png").stat().st_size > 0
    assert (tmp_path / "compare.pdf").stat().st_size > 0


def test_the_figure_draws_the_workloads_with_most_systems():
    data = compare.table(_runs())
    drawn = compare.shown(data)
    assert set(drawn["congestion"]) == {"none"}  # 4 entries beat 1


def test_a_system_keeps_its_colour_and_a_variant_gets_a_hatch():
    styles = system_styles([("dgl-global", "default"), ("default", "default"),
                            ("oracle", "oracle"), ("rapidgnn-h5k", "rapidgnn")])
    assert styles["default"] == (get_system("default").colour, "")
    assert styles["dgl-global"][0] == get_system("default").colour
    assert styles["dgl-global"][1] != ""
    assert styles["oracle"] == (GREY, "")
    assert styles["rapidgnn-h5k"] == (get_system("rapidgnn").colour, "")  # the only one
    # every built-in system declares a colour of its own
    built_in = [cls for cls in discover().values()
                if cls.__module__.startswith("commgnn.systems.")]
    colours = [cls.colour for cls in built_in]
    assert None not in colours and len(set(colours)) == len(colours)
