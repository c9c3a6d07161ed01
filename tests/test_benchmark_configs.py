"""Every committed benchmark config, and every part overlaid on its base the way
``snakemake --configfile BASE PART`` merges them, passes the schema and expands to runs:
a config committed beside its results is one a user can rerun."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
from snakemake.utils import update_config

from commgnn.core import config as cfg
from commgnn.experiments import expand_experiments

CONFIGS = Path(__file__).parents[1] / "benchmarks" / "configs"
BASES = sorted(CONFIGS.glob("*.yaml"))
PARTS = sorted(CONFIGS.glob("*_parts/*.yaml"))


def overlay(base: dict, part: dict) -> dict:
    """``base`` with ``part`` merged as ``snakemake --configfile BASE PART`` merges them
    (Snakemake's own ``update_config``: mappings merge key by key, lists are replaced)."""
    merged = copy.deepcopy(base)
    update_config(merged, copy.deepcopy(part))
    return merged


def test_the_overlay_replaces_lists_and_merges_mappings():
    base = {"experiments": [1, 2], "training": {"epochs": 30, "lr": 0.1}}
    part = {"experiments": [3], "training": {"epochs": 8}}
    assert overlay(base, part) == {"experiments": [3], "training": {"epochs": 8, "lr": 0.1}}
    assert base["training"]["epochs"] == 30


def test_every_parts_folder_has_its_base():
    for folder in {p.parent for p in PARTS}:
        assert (CONFIGS / f"{folder.name.removesuffix('_parts')}.yaml").is_file(), folder


@pytest.mark.parametrize("path", BASES, ids=lambda p: p.name)
def test_a_benchmark_config_validates_and_expands(path):
    assert expand_experiments(cfg.load_config(path))


@pytest.mark.parametrize("path", PARTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_part_overlaid_on_its_base_validates_and_expands(path):
    base = cfg.read_yaml(CONFIGS / f"{path.parent.name.removesuffix('_parts')}.yaml")
    merged = overlay(base, cfg.read_yaml(path))
    cfg.validate(merged, prefix="")
    runs = {run.to_json() for run in expand_experiments(merged)}
    assert runs
    assert runs <= {run.to_json() for run in expand_experiments(base)}, \
        f"{path.name} runs a spec its base's matrix (the final figures pass) does not"
