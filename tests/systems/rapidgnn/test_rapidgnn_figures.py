"""RapidGNN's evaluation figures (Table 2, Figures 4-9, Table 3) against hand-computed
values on small runs tables and run directories written to disk."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pandas as pd
import pytest

from commgnn.catalog import figure_module
from commgnn.core.errors import InputError, NotApplicable
from commgnn.core.spec import RunSpec, run_id
from commgnn.report.setting import describe_runs
from commgnn.systems.rapidgnn.figures import (
    rapidgnn_fig4,
    rapidgnn_fig6,
    rapidgnn_fig7,
    rapidgnn_fig9,
    rapidgnn_table2,
    rapidgnn_table3,
)
from commgnn.systems.rapidgnn.figures.rapidgnn_runs import load_runs, role

PARTS = {"m4": "metis", "r4": "random", "m2": "metis"}


def _run(system, part, seed, epoch_s, steps=4, model="sage", base=None, **extra) -> dict:
    workers = 2 if part == "m2" else 4
    row = {"system": system, "base_system": base or system, "dataset": "prod",
           "partitioning": part, "model": model, "layers": 2, "workers": workers,
           "batch_size": 1000, "network": "net", "seed": seed, "epochs": 2,
           "mean_epoch_time_s": epoch_s, "steps_per_epoch": steps,
           "network_s_per_step": 0.1, "fetch_wait_s_per_step": 0.05,
           "fetch_mb_per_step": 5.0, "remote_bytes_per_epoch": 4e7,
           "step_remote_bytes_per_epoch": 3.2e7,
           "peak_rss_bytes": 5e8, "batch_feature_bytes_max": 2e6, "energy_meter": "modelled",
           **extra}
    row["run_id"] = run_id(system, "prod", part, model, 1000, "net", seed)
    return row


RUNS = [
    _run("rapidgnn", "m4", 0, 2.0, fetch_mb_per_step=2.0, cache_bytes_max=3e6,
         staged_bytes_max=1e6),
    _run("rapidgnn", "m4", 1, 2.4, fetch_mb_per_step=2.0, cache_bytes_max=3e6,
         staged_bytes_max=1e6),
    _run("default", "m4", 0, 3.0, network_s_per_step=0.5),
    _run("default", "m4", 1, 4.8, network_s_per_step=0.3),
    _run("default", "r4", 0, 4.0, network_s_per_step=0.6),
    _run("default", "m4", 0, 5.0, model="gcn", network_s_per_step=0.7),
    _run("rapidgnn", "m2", 0, 4.0, steps=8),
    # neither plays a role: a sweep variant and a variant of the baseline
    _run("rapidgnn-h0", "m4", 0, 9.0, base="rapidgnn"),
    _run("dgl-global", "m4", 0, 9.0, base="default"),
]


@pytest.fixture
def inputs(tmp_path: Path) -> list[Path]:
    tables = tmp_path / "tables"
    tables.mkdir()
    pd.DataFrame(RUNS).to_csv(tables / "runs.csv", index=False)
    pd.DataFrame([{"dataset": "prod", "partitioning": p, "method": m, "part": i}
                  for p, m in PARTS.items() for i in range(2)]).to_csv(
        tables / "partition_stats.csv", index=False)
    dataset = tmp_path / "datasets" / "prod"
    dataset.mkdir(parents=True)
    (dataset / "meta.json").write_text(json.dumps(
        {"source": {"source": "synthetic", "preset": "products-like"}, "stats": {}}))
    return [tables / "runs.csv", tables / "partition_stats.csv", dataset]


def _run_dir(root: Path, row: dict, epochs: list[dict]) -> Path:
    directory = root / "runs" / row["run_id"]
    directory.mkdir(parents=True)
    keys = ("system", "base_system", "dataset", "partitioning", "model", "layers", "workers",
            "batch_size", "network", "seed")
    (directory / "summary.json").write_text(json.dumps({k: row[k] for k in keys}))
    (directory / "epochs.jsonl").write_text("".join(
        json.dumps({"epoch": i, "time_dilation": 2.0, **e}) + "\n"
        for i, e in enumerate(epochs)))
    return directory


def test_roles():
    runs = pd.DataFrame(RUNS)
    runs["method"] = runs["partitioning"].map(PARTS)
    assert [role(row) for _, row in runs.iterrows()] == [
        "RapidGNN", "RapidGNN", "DGL-METIS", "DGL-METIS", "DGL-Random", "GCN", "RapidGNN",
        None, None]


def test_load_runs_names_the_paper_dataset_and_refuses_ambiguous_pairs(inputs, tmp_path):
    runs = load_runs(inputs)
    assert set(runs["paper_dataset"]) == {"OGBN-Products"}
    assert runs.loc[0, "step_time_s"] == 0.5
    twin = {**RUNS[2], "partitioning": "m4b", "run_id": "default/prod/m4b/sage_b1000_net_s0"}
    pd.DataFrame([*RUNS, twin]).to_csv(tmp_path / "tables" / "runs.csv", index=False)
    stats = pd.read_csv(tmp_path / "tables" / "partition_stats.csv")
    pd.concat([stats, pd.DataFrame([{"dataset": "prod", "partitioning": "m4b",
                                     "method": "metis", "part": 0}])]).to_csv(
        tmp_path / "tables" / "partition_stats.csv", index=False)
    with pytest.raises(InputError, match=r"default/prod/m4/sage_b1000_net_s0, "
                                         r"default/prod/m4b/sage_b1000_net_s0 play the same"):
        load_runs(inputs)


@pytest.mark.parametrize("name", ["rapidgnn_table2", "rapidgnn_fig4", "rapidgnn_fig6",
                                  "rapidgnn_fig7", "rapidgnn_table3", "rapidgnn_fig8",
                                  "rapidgnn_fig9"])
def test_figures_without_a_rapidgnn_run_say_so(inputs, tmp_path, name):
    """Only a sweep variant (no run plays RapidGNN): every figure is drawn, empty, but
    Table 2, whose every row is a speedup over a baseline: it does not apply."""
    pd.DataFrame([RUNS[2], RUNS[7]]).to_csv(tmp_path / "tables" / "runs.csv", index=False)
    run_dirs = [_run_dir(tmp_path / "results", RUNS[7], [{"time_s": 1.0, "train_acc": 0.5,
                                                          "train_loss": 1.0}])]
    module = figure_module(name)
    if name == "rapidgnn_table2":
        with pytest.raises(NotApplicable, match="no cell runs rapidgnn beside a baseline"):
            module.make([*inputs, *run_dirs], tmp_path / f"{name}.png")
        return
    data = module.make([*inputs, *run_dirs], tmp_path / f"{name}.png")
    assert "RapidGNN" not in set(data.get("role", [])) and (tmp_path / f"{name}.png").is_file()


def test_table2_speedups_pair_seeds(inputs, tmp_path):
    data = rapidgnn_table2.make(inputs, tmp_path / "t2.png").set_index(
        ["dataset", "baseline"])
    metis = data.loc[("prod", "DGL-METIS")]
    # step: seed 0 (3.0/4) / (2.0/4) = 1.5, seed 1 4.8 / 2.4 = 2.0
    assert metis["step_speedup"] == pytest.approx(1.75)
    assert metis["step_speedup_std"] == pytest.approx(math.sqrt(0.125))
    assert metis["network_speedup"] == pytest.approx(4.0)  # 0.5 / 0.1 and 0.3 / 0.1
    assert metis["fetch_wait_speedup"] == pytest.approx(1.0)
    assert metis["seeds"] == 2 and metis["workers"] == 4  # the 2-worker run is not a cell
    assert (metis["paper_step_speedup"], metis["paper_network_speedup"]) == (1.42, 5.81)
    assert metis["run_ids"].count("rapidgnn/prod/m4") == 2
    random = data.loc[("prod", "DGL-Random")]
    assert random["step_speedup"] == pytest.approx(2.0) and random["seeds"] == 1
    assert data.loc[("prod", "GCN"), "network_speedup"] == pytest.approx(7.0)
    average = data.loc[("Average", "DGL-METIS")]
    assert average["step_speedup"] == pytest.approx(1.75)
    assert average["paper_step_speedup"] == 2.46
    assert (tmp_path / "t2.png").stat().st_size > 0 and (tmp_path / "t2.pdf").is_file()


def test_fig4_megabytes_per_step(inputs, tmp_path):
    data = rapidgnn_fig4.make(inputs, tmp_path / "f4.png").set_index("role")
    assert data.loc["RapidGNN", "mb_per_step"] == 2.0
    assert data.loc["DGL-METIS", "mb_per_step"] == 5.0
    assert data.loc["RapidGNN", "reduction"] == pytest.approx(2.5)
    # the step bytes scaled by all remote bytes (cache fills) over the steps' own
    assert data.loc["RapidGNN", "mb_incl_fills_per_step"] == pytest.approx(2.0 * 4 / 3.2)
    assert (data.loc["RapidGNN", "paper_mb_per_step"],
            data.loc["DGL-METIS", "paper_mb_per_step"]) == (2.0, 4.8)


def test_fig6_speedup_over_the_fewest_workers(inputs, tmp_path):
    data = rapidgnn_fig6.make(inputs, tmp_path / "f6.png")
    rapid = data[data["role"] == "RapidGNN"].set_index("workers")
    assert rapid.loc[2, "speedup"] == 1.0
    assert rapid.loc[4, "speedup"] == pytest.approx(2.0)  # seed 0 only: 4.0 / 2.0
    assert rapid.loc[4, "seeds"] == 1 and rapid.loc[4, "paper_speedup_range"] == "1.7-2.1"
    assert set(rapid.loc[4, "run_ids"].split(";")) == {
        "rapidgnn/prod/m2/sage_b1000_net_s0", "rapidgnn/prod/m4/sage_b1000_net_s0"}


def test_fig7_memory(inputs, tmp_path):
    data = rapidgnn_fig7.make(inputs, tmp_path / "f7.png")
    at4 = data[data["workers"] == 4].set_index("role")
    assert at4.loc["RapidGNN", "device_feature_mb"] == pytest.approx(6.0)  # 3 + 1 + 2
    assert at4.loc["DGL-METIS", "device_feature_mb"] == pytest.approx(2.0)
    assert at4.loc["DGL-METIS", "rss_mb"] == pytest.approx(500.0)


def test_table3_energy_per_worker(inputs, tmp_path):
    root = tmp_path / "results"
    rapid = _run_dir(root, RUNS[0], [
        {"time_s": 2.0, "energy_target_cpu_j": 40, "energy_target_gpu_j": 100,
         "energy_target_j": 140, "energy_j": 8, "energy_cpu_j": 8},
        {"time_s": 2.0, "energy_target_cpu_j": 80, "energy_target_gpu_j": 100,
         "energy_target_j": 180, "energy_j": 8, "energy_cpu_j": 8}])
    dgl = _run_dir(root, RUNS[2], [
        {"time_s": 3.0, "energy_target_cpu_j": 80, "energy_target_gpu_j": 120,
         "energy_target_j": 200, "energy_j": 12, "energy_cpu_j": 12},
        {"time_s": 3.0, "energy_target_cpu_j": 120, "energy_target_gpu_j": 120,
         "energy_target_j": 240, "energy_j": 12, "energy_cpu_j": 12}])
    data = rapidgnn_table3.make([*inputs, rapid, dgl], tmp_path / "t3.png")
    rows = data.set_index(["source", "part", "role"])
    cpu = rows.loc[("target-model", "cpu", "RapidGNN")]
    # per worker (4): epochs 10 and 20 J over 1 s of target time each
    assert (cpu["total_j"], cpu["mean_epoch_j"], cpu["min_epoch_j"], cpu["max_epoch_j"]) \
        == (30, 15, 10, 20)
    assert cpu["mean_power_w"] == 15 and cpu["total_duration_s"] == 2
    assert cpu["vs_dgl_metis"] == pytest.approx(30 / 50 - 1)
    host = rows.loc[("modelled", "cpu", "DGL-METIS")]  # the host meter over raw time
    assert host["total_j"] == 6 and host["total_duration_s"] == 6
    assert ("modelled", "gpu", "RapidGNN") not in rows.index  # no GPU part on this host
    assert math.isnan(cpu["paper_total_j"])  # not the paper's cell (batch 3000, 3 workers)


def test_fig9_training_accuracy_curves(inputs, tmp_path):
    root = tmp_path / "results"
    dirs = [_run_dir(root, row, [{"time_s": 1.0, "train_acc": acc, "train_loss": 1.0},
                                 {"time_s": 1.0, "train_acc": acc + 0.1, "train_loss": 0.5}])
            for row, acc in ((RUNS[0], 0.5), (RUNS[1], 0.7), (RUNS[2], 0.5), (RUNS[6], 0.2))]
    data = rapidgnn_fig9.make([*inputs, *dirs], tmp_path / "f9.png")
    assert set(data["workers"]) == {4}  # the 4-worker cell has a baseline; 2 has none
    rapid = data[data["role"] == "RapidGNN"].set_index("epoch")
    assert list(rapid["train_acc"]) == pytest.approx([0.6, 0.7])
    assert rapid.loc[0, "train_acc_std"] == pytest.approx(math.sqrt(0.02))


def test_describe_runs_states_scale_workers_dilation_seeds():
    datasets = {"prod": {"source": "synthetic", "preset": "products-like", "nodes": 612257}}
    spec = RunSpec(system="rapidgnn", dataset="prod", partitioning="m4", model="sage",
                   batch_size=1000, network="net",
                   network_spec={"preset": "10gbe", "time_dilation": 13}, seed=2, workers=4)
    text = describe_runs([spec], datasets)
    assert "612,257 nodes (1/4 of ogbn-products's 2,449,029)" in text
    assert "time dilation f = 13" in text and "Workers: 4." in text and "Seeds: 2." in text
    assert "Devices: training.device auto (" in text and "split evenly" in text
    on_cpu = dataclasses.replace(spec, training={"device": "cpu"})
    assert "Devices: the CPU." in describe_runs([on_cpu], datasets)


def test_table2_keeps_cells_apart_by_network(inputs, tmp_path):
    other = [{**row, "network": "slow", "mean_epoch_time_s": 2 * row["mean_epoch_time_s"],
              "run_id": row["run_id"].replace("_net_", "_slow_")} for row in RUNS[:4]]
    pd.DataFrame([*RUNS, *other]).to_csv(tmp_path / "tables" / "runs.csv", index=False)
    data = rapidgnn_table2.make(inputs, tmp_path / "t2.png")
    metis = data[data["baseline"] == "DGL-METIS"].set_index(["dataset", "network"])
    assert metis.loc[("prod", "net"), "step_speedup"] == pytest.approx(1.75)
    assert metis.loc[("prod", "slow"), "step_speedup"] == pytest.approx(1.75)
    assert {("Average", "net"), ("Average", "slow")} <= set(metis.index)
    gcn = data[data["baseline"] == "GCN"].set_index(["dataset", "network"])
    assert list(gcn.index) == [("prod", "net"), ("Average", "net")]  # no GCN run on "slow"


def test_table3_divides_a_host_wide_rapl_reading_among_its_workers(inputs, tmp_path):
    root = tmp_path / "results"
    runs = pd.DataFrame(RUNS)
    runs.loc[[0, 2], "energy_meter"] = "modelled+rapl"
    runs.to_csv(tmp_path / "tables" / "runs.csv", index=False)
    dirs = []
    for row in (RUNS[0], RUNS[2]):
        directory = _run_dir(root, row, [{"time_s": 2.0, "energy_target_cpu_j": 4,
                                          "energy_target_gpu_j": 4, "energy_target_j": 8,
                                          "energy_j": 160 + 40, "energy_cpu_j": 160,
                                          "energy_gpu_j": 40}])
        summary = json.loads((directory / "summary.json").read_text())
        summary["hosts"] = ["a", "a", "b", "b"]  # two workers per host read one RAPL
        (directory / "summary.json").write_text(json.dumps(summary))
        dirs.append(directory)
    data = rapidgnn_table3.energy([*inputs, *dirs]).set_index(["source", "part", "role"])
    host = data.loc[("modelled+rapl", slice(None), "RapidGNN")]["total_j"]
    # cpu: 160 J summed over 4 workers, each host's counter read twice: 160 / 4 / 2
    assert host.loc["cpu"] == 20 and host.loc["gpu"] == 10 and host.loc["total"] == 30
