"""configs/compare.yaml: every system on one workload, clean and congested, 3 seeds — one
DAG with the comparison, the claims ledger, GreenDyGNN's control chain and every figure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

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
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--snakefile",
         str(repo_root / "Snakefile"), "--directory", str(tmp_path), "--configfile",
         str(CONFIG), "--dry-run", "--quiet", "rules"],
        capture_output=True, text=True, check=False, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    counts = dict(line.split()[:2] for line in proc.stdout.splitlines()
                  if len(line.split()) == 2 and line.split()[1].isdigit())
    assert int(counts["train"]) == len(runs)
    for rule in ("compare", "claims", "figure_index", "calibrate", "train_policy"):
        assert int(counts[rule]) == 1, rule
