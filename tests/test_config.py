"""Config validation: bad configs fail with the key path, before any work starts."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest
import yaml

from commgnn.core.config import ConfigError, load_config, validate

GOOD = {
    "datasets": {"tiny": {"source": "synthetic", "preset": "tiny", "seed": 1}},
    "partitionings": {"m2": {"method": "metis", "parts": 2}},
}


def test_default_config_is_valid(repo_root):
    cfg = load_config(repo_root / "config.yaml")
    assert cfg["datasets"]


def test_minimal_config_is_valid():
    validate(GOOD)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda c: c.update(bogus=1), "config: Additional properties are not allowed ('bogus'"),
        (lambda c: c["datasets"]["tiny"].update(nodes=-5), "config.datasets.tiny.nodes"),
        (lambda c: c["datasets"]["tiny"].update(nodes="many"), "config.datasets.tiny.nodes"),
        (lambda c: c["datasets"]["tiny"].update(colour="red"), "'colour' was unexpected"),
        (lambda c: c["datasets"]["tiny"].update(source="imaginary"), "config.datasets.tiny.source"),
        (lambda c: c["partitionings"]["m2"].update(parts=0), "config.partitionings.m2.parts"),
        (lambda c: c["partitionings"]["m2"].update(method="spectral"),
         "config.partitionings.m2.method"),
        (lambda c: c["datasets"].update(cora={"source": "planetoid", "name": "cora"}),
         "config.datasets.cora: 'path' is a required property"),
        (lambda c: c.pop("partitionings"), "'partitionings' is a required property"),
    ],
)
def test_bad_config_names_the_key(mutate, expected):
    cfg = copy.deepcopy(GOOD)
    mutate(cfg)
    with pytest.raises(ConfigError) as info:
        validate(cfg)
    assert expected in str(info.value)


def test_missing_and_malformed_files(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("datasets: [unclosed\n")
    with pytest.raises(ConfigError, match=r"bad\.yaml: not valid YAML"):
        load_config(bad)


def test_cli_rejects_bad_spec_before_work(tmp_path):
    out = tmp_path / "ds"
    proc = subprocess.run(
        [sys.executable, "-m", "commgnn", "dataset", "--name", "x", "--out", str(out),
         "--spec", '{"source": "synthetic", "nodes": 0}'],
        capture_output=True, text=True, check=False,
    )
    assert proc.returncode == 2
    assert "datasets.x.nodes" in proc.stderr
    assert not out.exists()


def test_cli_validate(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({**GOOD, "extra": True}))
    proc = subprocess.run([sys.executable, "-m", "commgnn", "validate", str(path)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "extra" in proc.stderr


def test_cli_validate_reports_a_named_model_in_one_line(tmp_path):
    """`commgnn validate` builds a named model's PyG conv on a tiny bipartite graph: an
    unknown class or one without bipartite input is one line naming the key."""
    config = {**GOOD, "models": {"gatv2": {"conv": "GATv3Conv"},
                                 "gcn_pyg": {"conv": "GCNConv", "hidden": 16},
                                 "ok": {"conv": "GATv2Conv", "args": {"heads": 2}}},
              "experiments": [{"systems": ["default"], "datasets": ["tiny"],
                               "partitionings": ["m2"], "models": ["ok-2", "deepgcn"]}]}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = subprocess.run([sys.executable, "-m", "commgnn", "validate", "--no-host", str(path)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert any(line.strip() == "models.gatv2.conv: 'GATv3Conv' is not a torch_geometric.nn "
               "convolution" for line in lines), lines
    assert any(line.strip().startswith("models.gcn_pyg.conv: 'GCNConv' does not accept "
                                       "bipartite input") for line in lines), lines
    assert not any("models.ok" in line for line in lines)
