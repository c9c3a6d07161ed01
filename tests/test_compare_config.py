"""configs/compare.yaml: every system on one workload, clean and congested, 3 seeds — one
DAG with the comparison, the claims ledger, GreenDyGNN's control chain and every figure."""

from __future__ import annotations

from pathlib import Path

import yaml
from dry_run import job_counts

from commgnn.systems.registry import discover
from commgnn.train.spec import expand_experiments

CONFIG = Path(__file__).parents[1] / "configs" / "compare.yaml"
#: Every built-in system but the real DistDGL peer (its own environment; `distdgl` in the
#: README); other tests register systems of their own.
SYSTEMS = {name for name, cls in discover().items()
           if cls.__module__.startswith("commgnn.systems.")} - {"distdgl"}


def test_compare_config_runs_every_system_on_one_workload(repo_root, tmp_path):
    runs = expand_experiments(yaml.safe_load(CONFIG.read_text()))
    assert {run.base_system for run in runs} == SYSTEMS
    sage = [run for run in runs if run.model == "sage"]
    for network in ("clean", "single-link"):  # every SAGE system in both conditions
        assert {r.base_system for r in sage if r.network == network} == SYSTEMS - {
            "clustergcn"}
    assert {run.seed for run in runs} == {0, 1, 2}
    counts = job_counts(repo_root, tmp_path, CONFIG)
    assert int(counts["train"]) == len(runs)
    for rule in ("compare", "claims", "figure_index", "calibrate", "train_policy"):
        assert int(counts[rule]) == 1, rule
