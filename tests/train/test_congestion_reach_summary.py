"""Every run summary names the reach of its congestion (``congestion_reach``: which traffic
the schedule delayed), beside ``congestion``; the runs table carries it, and a runs table
made from summaries that predate it says ``unknown`` for a congested run instead of
failing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from commgnn.report.tables import runs_table
from commgnn.train.summary import COMMON_KEYS, congestion_label, congestion_reach

ROOT = Path(__file__).parents[2]
SINGLE_LINK = {"kind": "scenario", "name": "single-link", "delay_ms": 20, "onset_epoch": 1}


@pytest.mark.parametrize(("network", "label", "reach"), [
    ({"preset": "10gbe"}, "none", "none"),
    ({"preset": "10gbe", "congestion": {"kind": "none"}}, "none", "none"),
    # a scenario that delays nothing in the run's epochs is no congestion
    ({"preset": "10gbe", "congestion": {"kind": "scenario", "name": "clean"}}, "none", "none"),
    ({"preset": "10gbe", "congestion": SINGLE_LINK}, "scenario:single-link", "fetch+sampling"),
    ({"preset": "10gbe", "congestion": {**SINGLE_LINK, "applies_to": "all"}},
     "scenario:single-link", "all"),
    ({"preset": "10gbe", "congestion": {"kind": "greendygnn"}}, "greendygnn",
     "fetch+sampling"),
    ({"preset": "10gbe", "congestion": {"kind": "epochs", "table": {"1": {"1": 5}}}},
     "epochs", "all"),
    ({"preset": "10gbe", "congestion": {"kind": "epochs", "table": {"1": {"1": 5}},
                                        "applies_to": ["allreduce", "fetch"]}},
     "epochs", "allreduce+fetch"),
], ids=["clean", "none-kind", "clean-scenario", "single-link", "single-link-all",
        "greendygnn", "epochs", "epochs-listed"])
def test_the_summary_names_the_reach_that_ran(network, label, reach):
    assert congestion_label(network, 4, 10) == label  # 10 epochs: past every warm-up
    assert congestion_reach(network, 4, 10) == reach


def test_the_reach_is_a_common_key_beside_the_congestion():
    keys = list(COMMON_KEYS)
    assert keys.index("congestion_reach") == keys.index("congestion") + 1


def test_the_default_and_compare_configs_record_their_reaches():
    default = yaml.safe_load((ROOT / "config.yaml").read_text())
    compare = yaml.safe_load((ROOT / "configs" / "compare.yaml").read_text())
    assert congestion_reach(default["networks"]["10gbe-dilated-single-link"], 4, 3) == \
        "fetch+sampling"  # the paper's reach
    assert congestion_reach(compare["networks"]["single-link"], 4, 3) == "all"
    assert congestion_reach(compare["networks"]["clean"], 4, 3) == "none"


def _summary(directory: Path, network: str, congestion: str, **extra) -> Path:
    directory.mkdir(parents=True)
    summary = {"system": "default", "base_system": "default", "dataset": "d",
               "partitioning": "p", "model": "sage", "layers": 2, "batch_size": 64,
               "network": network, "congestion": congestion, "seed": 0, **extra}
    (directory / "summary.json").write_text(json.dumps(summary))
    return directory


def test_the_runs_table_carries_the_reach_and_reads_older_summaries(tmp_path):
    dirs = [_summary(tmp_path / "a", "slow", "scenario:single-link",
                     congestion_reach="fetch+sampling"),
            _summary(tmp_path / "b", "whole", "scenario:single-link", congestion_reach="all"),
            _summary(tmp_path / "c", "old-slow", "scenario:single-link"),  # before the key
            _summary(tmp_path / "d", "old-clean", "none")]
    table = runs_table(dirs).set_index("network")
    assert table.loc["slow", "congestion_reach"] == "fetch+sampling"
    assert table.loc["whole", "congestion_reach"] == "all"
    assert table.loc["old-slow", "congestion_reach"] == "unknown"
    assert table.loc["old-clean", "congestion_reach"] == "none"
