"""configs/hopgnn-paper.yaml: HopGNN's Figures 11 and 12 with P3 build as one DAG — every
dataset, system, model (3, 7 and 10 layers, hidden 16 and 128) and seed is a train job."""

from __future__ import annotations

from pathlib import Path

import yaml
from dry_run import job_counts

from commgnn.experiments import expand_experiments
from commgnn.systems.hopgnn.system import HopGNNSystem

PAPER_CONFIG = Path(__file__).parents[1] / "configs" / "hopgnn-paper.yaml"


def test_hopgnn_paper_config_builds_the_whole_grid(repo_root, tmp_path):
    config = yaml.safe_load(PAPER_CONFIG.read_text())
    runs = expand_experiments(config)
    # 4 datasets x (DGL, Naive, HopGNN, P3) x 5 models x 2 hidden sizes x 3 seeds
    assert len(runs) == 4 * 4 * 10 * 3
    depth = {run.model: len(run.get("fanouts")) for run in runs}
    assert depth["deepgcn_h128-7"] == 7 and depth["film_h16-10"] == 10
    assert depth["gat_h16"] == 3
    hidden = {run.model: run.get("hidden") for run in runs}
    assert hidden["film_h128-10"] == 128 and hidden["sage_h16"] == 16
    assert {run.partitioning for run in runs if run.system == "p3"} == {"random4"}
    counts = job_counts(repo_root, tmp_path, PAPER_CONFIG)
    assert int(counts["train"]) == len(runs)
    assert int(counts["system_figure"]) == len(HopGNNSystem.figures)
