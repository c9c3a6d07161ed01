"""The tiny pipeline every end-to-end test shares: its config, and Snakemake run on it.

One real ``snakemake --cores 2`` run of :data:`TINY` (every built-in system but distdgl,
each on the tiny dataset) is made once per test session (the ``tiny_pipeline`` fixture in
``conftest.py``); the pipeline test checks it whole, the report tests read its run
records one system at a time.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

TINY = {
    "results_dir": "out",
    "datasets": {"tiny": {"source": "synthetic", "preset": "tiny", "seed": 3}},
    "partitionings": {
        "metis2": {"method": "metis", "parts": 2, "halo_hops": 1},
        "chunk3": {"method": "chunk", "parts": 2, "chunks": 3, "chunk_method": "random"},
    },
    "training": {"epochs": 1, "fanouts": [5, 5], "hidden": 16, "eval_max_nodes": 100},
    "systems": {"rapidgnn": {"n_hot": 50, "prefetch_depth": 2},
                "rapidgnn-h200": {"system": "rapidgnn", "n_hot": 200},
                "grappa-uw": {"system": "grappa", "estimator": "none"},
                "dgl-global": {"system": "default", "schedule": "global"},
                "hopgnn-naive": {"system": "hopgnn", "mode": "naive"},
                "greendygnn": {"window": 2, "cache_rows": 100},
                "greendygnn-heuristic": {"system": "greendygnn", "controller": "heuristic",
                                         "window": 2, "cache_rows": 100, "warmup_epochs": 1},
                "greendygnn-dqn": {"system": "greendygnn", "controller": "dqn", "window": 2,
                                   "cache_rows": 100, "warmup_epochs": 1},
                "bgl": {"cache_rows": 100},
                "clustergcn": {"clusters": 8, "clusters_per_batch": 2}},
    # calibrate -> validate_simulator, train_policy -> the dqn run, on a small grid
    # (three pulls a point and a 20 ms delay: on a busy 2-core host one pull's software
    # cost, undilated at f = 1, reached 15 ms and fitted a negative κ)
    "control": {"calibration": {"windows": [2, 8], "rpc_rows": [10, 200],
                                "rpc_delays_ms": [0, 20], "rpc_repeats": 3},
                "validation": {"windows": [4], "delays_ms": [5]},
                "policy": {"episodes": 20, "episode_epochs": 3, "hidden": [16],
                           "warmup": 20, "eval_profiles": 1}},
    # GreenDyGNN's single-link congestion preset on node 1, from the first epoch
    # (dilated `auto`: its four runs share one workload probe, the `dilation` rule's)
    "networks": {"10gbe-single": {"preset": "10gbe", "time_dilation": "auto", "congestion": {
        "kind": "scenario", "name": "single-link", "delay_ms": 5, "onset_epoch": 0,
        "final_clean": False}}},
    "experiments": [{"systems": ["default", "oracle", "rapidgnn", "rapidgnn-h200", "dgl-global",
                                 "hopgnn", "hopgnn-naive", "p3"],
                     "datasets": ["tiny"], "partitionings": ["metis2"], "batch_sizes": [256],
                     "networks": ["10gbe"]},
                    {"systems": ["greendygnn", "greendygnn-heuristic", "greendygnn-dqn", "bgl"],
                     "datasets": ["tiny"], "partitionings": ["metis2"],
                     "batch_sizes": [256], "networks": ["10gbe-single"]},
                    {"systems": ["greendygnn"], "datasets": ["tiny"],
                     "partitionings": ["metis2"], "batch_sizes": [256],
                     "networks": ["10gbe"]},
                    # the papers' other baselines and deep models (issue 20)
                    {"systems": ["p3"], "datasets": ["tiny"], "partitionings": ["metis2"],
                     "models": ["deepgcn", "film"], "batch_sizes": [256],
                     "networks": ["10gbe"]},
                    {"systems": ["clustergcn"], "datasets": ["tiny"],
                     "partitionings": ["metis2"], "models": ["gcn"], "batch_sizes": [256],
                     "networks": ["10gbe"]},
                    {"systems": ["grappa", "grappa-uw"], "datasets": ["tiny"],
                     "partitionings": ["chunk3"], "batch_sizes": [256],
                     "networks": ["10gbe"]}],
}


def snakemake(repo: Path, workdir: Path, config: dict, *extra: str) -> subprocess.CompletedProcess:
    cfg = workdir / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--snakefile",
         str(repo / "Snakefile"), "--directory", str(workdir), "--configfile", str(cfg), *extra],
        capture_output=True, text=True, check=False, timeout=600,
    )
