"""The default config.yaml (one seed) and configs/compare.yaml (3 seeds): every system on
one workload, clean and congested — one DAG with the comparison, the claims ledger,
GreenDyGNN's control chain and every figure."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from dry_run import job_counts

from commgnn.experiments import expand_experiments
from commgnn.systems.registry import discover

ROOT = Path(__file__).parents[1]
CONFIG = ROOT / "configs" / "compare.yaml"
#: Every built-in system but the real DistDGL peer (its own environment; `distdgl` in the
#: README); other tests register systems of their own.
SYSTEMS = {name for name, cls in discover().items()
           if cls.__module__.startswith("commgnn.systems.")} - {"distdgl"}


@pytest.mark.parametrize(("config", "networks", "seeds"), [
    (ROOT / "config.yaml", ("10gbe-dilated", "10gbe-dilated-single-link"), {0}),
    (CONFIG, ("clean", "single-link"), {0, 1, 2}),
], ids=["default", "compare"])
def test_config_runs_every_system_on_one_workload(repo_root, tmp_path, config, networks,
                                                  seeds):
    runs = expand_experiments(yaml.safe_load(config.read_text()))
    assert {run.base_system for run in runs} == SYSTEMS
    sage = [run for run in runs if run.model == "sage"]
    for network in networks:  # every SAGE system in both conditions
        assert {r.base_system for r in sage if r.network == network} == SYSTEMS - {
            "clustergcn"}
    assert {(r.dataset, r.batch_size, tuple(r.get("fanouts"))) for r in runs} == {
        (runs[0].dataset, runs[0].batch_size, tuple(runs[0].get("fanouts")))}
    assert {run.seed for run in runs} == seeds
    counts = job_counts(repo_root, tmp_path, config)
    assert int(counts["train"]) == len(runs)
    for rule in ("compare", "claims", "figure_index", "calibrate", "train_policy"):
        assert int(counts[rule]) == 1, rule
    # The simulator validation only in the comparison (the default's 10-minute budget).
    assert counts.get("validate_simulator", 0) == (1 if config == CONFIG else 0)


def test_figures_without_their_products_are_not_built(repo_root, tmp_path):
    """GreenDyGNN without the learned controller: no control chain, so none of the
    figures that read it (the calibration, the policy, the simulator's validation); and
    with `control.validate: false`, no validation figure."""
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    config.pop("control")
    config["experiments"] = [{**config["experiments"][0], "systems": ["greendygnn"],
                              "networks": ["10gbe-dilated"]}]
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    counts = job_counts(repo_root, tmp_path, path)
    assert "calibrate" not in counts and "train_policy" not in counts
    from commgnn.systems.greendygnn.system import GreenDyGNNSystem
    reads_control = [name for name, kinds in GreenDyGNNSystem.figures.items()
                     if {"control", "validation"} & set(kinds)]
    assert reads_control
    assert counts["system_figure"] == len(GreenDyGNNSystem.figures) - len(reads_control)
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    assert config["control"]["validate"] is False
    counts = job_counts(repo_root, tmp_path, ROOT / "config.yaml")
    validated = dict(config, control={**config["control"], "validate": True,
                                      "validation": {"windows": [4], "delays_ms": [20]}})
    path.write_text(yaml.safe_dump(validated))
    with_validation = job_counts(repo_root, tmp_path, path)
    assert with_validation["system_figure"] == counts["system_figure"] + 1  # Figure 8
    assert with_validation["validate_simulator"] == 1
