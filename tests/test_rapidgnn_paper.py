"""RapidGNN's evaluation config (configs/rapidgnn-paper.yaml): the whole grid builds a DAG,
and a tiny slice of the same grid runs through real Snakemake to every figure."""

from __future__ import annotations

import copy
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest
import yaml

from commgnn.systems.rapidgnn.figures.rapidgnn_runs import BASELINES, RAPIDGNN
from commgnn.systems.rapidgnn.system import RapidGNNSystem

PAPER_CONFIG = Path(__file__).parents[1] / "configs" / "rapidgnn-paper.yaml"
#: The slice: one dataset (the one every experiment has), one batch size (every one of
#: the grid's scaled to it), one seed, two epochs (three for the sweep, which asks for
#: more), two sweep points: 10 runs.
SLICE_DATASET = "products-like"
BATCH = 300
SWEEP = ("rapidgnn-h0", "rapidgnn-h100k")


def tiny_slice(config: dict, results_dir: str) -> dict:
    """``config`` restricted to the slice (module doc), its dataset a tiny synthetic one."""
    tiny = copy.deepcopy(config)
    tiny["results_dir"] = results_dir
    tiny["datasets"] = {SLICE_DATASET: {"source": "synthetic", "preset": "tiny", "seed": 3,
                                        "nodes": 3000}}
    tiny["training"].update(epochs=2, eval_max_nodes=100, checkpoint=False)
    tiny["systems"] = {k: {**v, "n_hot": v["n_hot"] // 100}
                       for k, v in tiny["systems"].items()
                       if k == "rapidgnn" or k in SWEEP}
    experiments = []
    for exp in tiny["experiments"]:
        exp = {**exp, "datasets": [d for d in exp["datasets"] if d == SLICE_DATASET],
               "batch_sizes": [BATCH],
               "systems": [s for s in exp["systems"] if s in tiny["systems"]
                           or s == "default"],
               "seeds": exp["seeds"][:1]}
        if "epochs" in exp:
            exp["epochs"] = 3
        if exp["datasets"] and exp["systems"]:
            experiments.append(exp)
    tiny["experiments"] = experiments
    return tiny


def snakemake(repo: Path, workdir: Path, config_path: Path, *extra: str):
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--snakefile",
         str(repo / "Snakefile"), "--directory", str(workdir), "--configfile",
         str(config_path), *extra],
        capture_output=True, text=True, check=False, timeout=600)


def test_paper_config_builds_the_whole_grid(repo_root, tmp_path):
    proc = snakemake(repo_root, tmp_path, PAPER_CONFIG, "--dry-run", "--quiet", "rules")
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = dict(line.split()[:2] for line in proc.stdout.splitlines()
                  if line.split() and line.split()[0] in ("train", "system_figure"))
    # (2 systems x 3 datasets x 3 batch sizes + random + gcn) x 3 seeds, scaling
    # 2 x 3 x 2 partitionings x 3 seeds, energy 2 x 3 seeds, sweep 5 x 3 batch sizes
    assert int(counts["train"]) == (6 + 3 + 3) * 3 * 3 + 36 + 6 + 15
    assert int(counts["system_figure"]) == len(RapidGNNSystem.figures)


@pytest.mark.timeout(600)
def test_paper_config_slice_regenerates_every_figure(repo_root, tmp_path):
    config = tiny_slice(yaml.safe_load(PAPER_CONFIG.read_text()), "out")
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = snakemake(repo_root, tmp_path, path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    check_figures(tmp_path / "out")
    # the report: each figure's caption, then what its runs were run on
    report = tmp_path / "report.zip"
    proc = snakemake(repo_root, tmp_path, path, "--report", str(report))
    assert proc.returncode == 0, proc.stderr[-4000:]
    with zipfile.ZipFile(report) as archive:
        html = next(archive.read(n).decode() for n in archive.namelist()
                    if n.endswith("report.html"))
    assert "RapidGNN Table 2 analogue" in html
    assert ("Datasets: products-like: synthetic tiny, 3,000 nodes. Workers: 2, 3, 4. "
            "Devices: training.device auto (each run's device plan is in its summary: a GPU "
            "where every worker has one, shared round-robin when workers outnumber GPUs); "
            "a GPU's NVML energy is split evenly among the workers sharing it. "
            "Networks: 10gbe-p100 (10gbe, time dilation f = 13: times are raw \\u00f7 13). "
            "Seeds: 0. Epochs: 2.") in html  # Table 2's runs: not the longer sweep


def check_figures(out: Path) -> None:
    """The slice's figures: every file, and their values against the runs they name."""
    figures = out / "figures"
    for name in RapidGNNSystem.figures:
        for suffix in (".png", ".pdf", ".csv"):
            assert (figures / f"{name}{suffix}").stat().st_size > 0, name + suffix
    runs = pd.read_csv(out / "tables" / "runs.csv").set_index("run_id")

    table2 = pd.read_csv(figures / "rapidgnn_table2.csv")
    cells = table2[table2["dataset"] != "Average"]
    assert set(cells["baseline"]) == set(BASELINES)
    assert (cells["batch_size"] == BATCH).all() and (cells["workers"] == 4).all()
    for _, row in cells.iterrows():  # every speedup recomputed from the runs it names
        base, rapid = row["run_ids"].split(";")
        step = runs.loc[base, "mean_epoch_time_s"] / runs.loc[base, "steps_per_epoch"] / (
            runs.loc[rapid, "mean_epoch_time_s"] / runs.loc[rapid, "steps_per_epoch"])
        assert row["step_speedup"] == pytest.approx(step)
        assert row["network_speedup"] == pytest.approx(
            runs.loc[base, "network_s_per_step"] / runs.loc[rapid, "network_s_per_step"])
    average = table2[table2["dataset"] == "Average"].set_index("baseline")
    assert average.loc["DGL-METIS", "paper_step_speedup"] == 2.46

    fig4 = pd.read_csv(figures / "rapidgnn_fig4.csv")
    fig4 = fig4.set_index("role")
    assert fig4.loc["DGL-METIS", "mb_per_step"] > fig4.loc[RAPIDGNN, "mb_per_step"]

    fig5 = pd.read_csv(figures / "rapidgnn_fig5.csv")
    sweep = fig5[fig5["system"].isin(SWEEP)].set_index("system")
    assert set(sweep["workers"]) == {2} and list(sweep["n_hot"]) == [0, 1000]
    assert (sweep["epochs"] == 3).all()  # the sweep's own epochs
    assert sweep.loc["rapidgnn-h0", "step_remote_rows_per_epoch"] > \
        sweep.loc["rapidgnn-h100k", "step_remote_rows_per_epoch"]

    fig6 = pd.read_csv(figures / "rapidgnn_fig6.csv")
    rapid = fig6[fig6["role"] == RAPIDGNN].set_index("workers")
    assert list(rapid.index) == [2, 3, 4] and rapid.loc[2, "speedup"] == 1.0

    fig7 = pd.read_csv(figures / "rapidgnn_fig7.csv")
    for _, row in fig7.iterrows():  # one seed: each row is one run's
        run = runs.loc[row["run_ids"]]
        kept = (run.get("cache_bytes_max", 0) + run.get("staged_bytes_max", 0)) \
            if row["role"] == RAPIDGNN else 0
        assert row["device_feature_mb"] * 1e6 == pytest.approx(
            kept + run["batch_feature_bytes_max"])
        assert row["rss_mb"] * 1e6 == pytest.approx(run["peak_rss_bytes"])
        assert run["peak_rss_bytes"] > run["batch_feature_bytes_max"]
    rapid = runs[runs.index.str.startswith("rapidgnn/")]
    assert (rapid["cache_bytes_max"] + rapid["staged_bytes_max"]
            <= rapid["memory_bound_bytes"]).all()  # RapidGNN's bound 2 n_hot d + Q m_max d

    table3 = pd.read_csv(figures / "rapidgnn_table3.csv")
    target = table3[table3["source"] == "target-model"]
    assert set(target["part"]) == {"cpu", "gpu", "total"}
    assert set(table3["source"]) == {"target-model", "modelled"}  # this host: no meters
    energy_runs = target[target["workers"] == 3]
    assert len(energy_runs) == 6  # 2 roles x 3 parts
    assert list(energy_runs["total_duration_s"]) == pytest.approx(
        list(2 * energy_runs["mean_epoch_duration_s"]))  # 2 epochs

    fig9 = pd.read_csv(figures / "rapidgnn_fig9.csv")
    assert set(fig9["role"]) == {RAPIDGNN, *BASELINES}
    assert (fig9["workers"] == 4).all() and sorted(set(fig9["epoch"])) == [0, 1]
    assert fig9["train_acc"].between(0, 1).all()
