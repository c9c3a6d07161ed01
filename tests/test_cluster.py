"""Cluster requests derived from the config (commgnn.cluster), the srun launch prefix, the
SLURM rendezvous port and the resources every workflow rule declares."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
import yaml

from commgnn import cluster
from commgnn.data.store import write_dataset
from commgnn.data.synthetic import generate_synthetic
from commgnn.runtime.launcher import worker_threads

DEFAULTS = cluster.ClusterSettings()


def test_estimated_size_matches_the_written_dataset(tmp_path):
    spec = {"source": "synthetic", "preset": "tiny", "nodes": 3000, "feature_dim": 48}
    shape = cluster.dataset_shape(spec)
    write_dataset(generate_synthetic(spec, name="t"), tmp_path / "ds")
    on_disk = sum(f.stat().st_size for f in (tmp_path / "ds").glob("*.npy")) / 2**20
    assert shape.nodes == 3000 and shape.feature_dim == 48
    assert shape.train_nodes == 1800  # tiny's 0.6 train split
    # The generator's edge count is a target (duplicates dropped): within 10 %.
    assert shape.mb == pytest.approx(on_disk, rel=0.10)


def test_public_and_rmat_shapes():
    products = cluster.dataset_shape({"source": "ogb", "name": "ogbn-products"})
    assert products.mb == pytest.approx(
        (2_449_029 * (400 + 24) + 123_718_280 * 8) / 2**20)
    cora = cluster.dataset_shape({"source": "planetoid", "name": "cora", "path": "x"})
    assert (cora.nodes, cora.train_nodes) == (2708, 140)
    rmat = cluster.dataset_shape({"source": "rmat", "scale": 10})
    assert (rmat.nodes, rmat.edges, rmat.feature_dim) == (1024, 2 * 1024 * 16, 128)


def test_train_cell_requests_hand_computed():
    shape = cluster.DatasetShape(nodes=100_000, edges=0, feature_dim=0, train_nodes=60_000)
    mb = 100_000 * 24 / 2**20
    res = cluster.train_resources(shape, workers=4, epochs=5, layers=3, device="cpu",
                                  settings=cluster.ClusterSettings(workers_per_node=2))
    worker_mb = 1000 + 1.5 * mb
    epoch_min = 3.0 * 60_000 * 1.4e-3 * 2 / 60  # 3 layers: twice SAGE-2's work
    assert res == {"tasks": 4, "cpus_per_task": 4, "mpi": "srun", "nodes": 2,
                   "mem_mb": int(-(-(1000 + 2 * worker_mb) // 1)),
                   "runtime": int(-(-(10 + 5 * epoch_min) // 1))}
    one_node = cluster.train_resources(shape, 4, 5, 3, "cpu", DEFAULTS)
    assert "nodes" not in one_node and one_node["mem_mb"] > res["mem_mb"]
    gpu = cluster.train_resources(shape, 4, 5, 3, "cuda", DEFAULTS)
    assert (gpu["gpu"], gpu["tasks_per_gpu"]) == (4, 1)
    single = cluster.train_resources(shape, 1, 5, 3, "cpu", DEFAULTS)
    assert "mpi" not in single  # the SLURM plugin refuses an MPI job with one task
    doubled = cluster.train_resources(
        shape, 4, 5, 3, "cpu", cluster.ClusterSettings(mem_factor=2, runtime_factor=2))
    assert doubled["mem_mb"] == pytest.approx(2 * one_node["mem_mb"], abs=1)
    assert doubled["runtime"] == pytest.approx(2 * one_node["runtime"], abs=1)
    # a system that starts its own workers (distdgl): one task, every worker's CPUs
    external = cluster.train_resources(shape, 4, 5, 3, "cpu", DEFAULTS, external=True)
    assert external == {"tasks": 1, "cpus_per_task": 16, "mem_mb": one_node["mem_mb"],
                        "runtime": one_node["runtime"]}
    assert cluster.srun_prefix(external, {"SLURM_JOB_ID": "7"}) == ""


def test_memory_requests_cover_the_measured_peaks():
    """Peak RSS of products-like's jobs on this machine (results/bench-products, Snakemake
    benchmark files): each request covers it, with less than 2x headroom."""
    big = cluster.dataset_shape({"source": "synthetic", "preset": "products-like"})
    train = cluster.train_resources(big, 4, 3, 2, "cpu", DEFAULTS)
    for requested, measured in ((cluster.dataset_resources(big, DEFAULTS), 3_750),
                                (cluster.partition_resources(big, DEFAULTS), 15_312),
                                (cluster.presample_resources(big, 3, DEFAULTS), 1_511),
                                (train, 13_728)):
        assert measured < requested["mem_mb"] < 2 * measured


def test_srun_prefix_only_inside_an_allocation():
    res = {"tasks": 4, "cpus_per_task": 2, "mpi": "srun", "nodes": 2, "gpu": 4}
    assert cluster.srun_prefix(res, environ={}) == ""
    assert cluster.srun_prefix({"tasks": 1, "cpus_per_task": 2, "mpi": None},
                               environ={"SLURM_JOB_ID": "7"}) == ""
    assert cluster.srun_prefix(res, environ={"SLURM_JOB_ID": "7"}) == (
        "srun --kill-on-bad-exit=1 --label --ntasks=4 --cpus-per-task=2 --nodes=2 "
        "--gpus-per-task=1")


def test_worker_threads_follow_the_slurm_task(monkeypatch):
    monkeypatch.setenv("SLURM_CPUS_PER_TASK", "3")
    assert worker_threads(8) == 3
    monkeypatch.delenv("SLURM_CPUS_PER_TASK")
    assert worker_threads(10_000) == 1


RULES_WITHOUT_WORK = {"all", "download_dataset"}  # a target and a localrule


def test_every_working_rule_declares_resources(repo_root, tmp_path):
    """A dry run of a config with every kind of job: each rule that does work asks for
    memory and runtime; a train cell asks for a task per worker launched by srun."""
    config = {
        "results_dir": "out",
        "datasets": {"tiny": {"source": "synthetic", "preset": "tiny"}},
        "partitionings": {"metis2": {"method": "metis", "parts": 2}},
        "training": {"epochs": 2, "fanouts": [5, 5], "device": "cuda"},
        "systems": {"greendygnn-dqn": {"system": "greendygnn", "controller": "dqn", "window": 1}},
        "cluster": {"workers_per_node": 1, "cpus_per_worker": 3},
        "experiments": [{"systems": ["default", "rapidgnn", "greendygnn-dqn"],
                         "datasets": ["tiny"], "partitionings": ["metis2"],
                         "networks": ["10gbe"]}],
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "-n", "--cores", "2", "--snakefile",
         str(repo_root / "Snakefile"), "--directory", str(tmp_path), "--configfile",
         str(tmp_path / "config.yaml"), "--workflow-profile", "none"],
        capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    jobs = re.findall(r"^(?:local)?rule (\w+):\n(.*?)(?=^\S|\Z)", proc.stdout, re.M | re.S)
    by_rule: dict[str, list[dict]] = {}
    for rule, body in jobs:
        line = re.search(r"^\s+resources: (.*)$", body, re.M)
        items = dict(kv.split("=", 1) for kv in line.group(1).split(", ")) if line else {}
        by_rule.setdefault(rule, []).append(items)
    assert {"dataset", "partition", "presample", "calibrate", "validate_simulator",
            "train_policy", "train", "runs_table", "partition_table",
            "system_figure"} <= set(by_rule)
    for rule, entries in by_rule.items():
        if rule not in RULES_WITHOUT_WORK:
            for res in entries:
                assert int(res["mem_mb"]) > 0 and int(res["runtime"]) > 0, rule
    for train in by_rule["train"]:
        assert (train["tasks"], train["cpus_per_task"], train["mpi"]) == ("2", "3", "srun")
        assert (train["nodes"], train["gpu"], train["tasks_per_gpu"]) == ("2", "2", "1")
    for calibrate in by_rule["calibrate"]:
        assert (calibrate["cpus_per_task"], calibrate["gpu"]) == ("6", "2")
