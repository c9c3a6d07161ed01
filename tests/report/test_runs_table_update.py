"""``commgnn runs-table --update``: a runs table kept across sessions keeps the rows of runs
whose directories are gone, a run given again replaces its row, and a file that is not a runs
table is refused by name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

RUN = {"system": "dgl", "base_system": "default", "dataset": "toy", "partitioning": "metis4",
       "model": "sage", "batch_size": 8, "network": "10gbe", "workers": 4, "epochs": 1}


def _summary(root: Path, seed: int, epoch_s: float) -> Path:
    directory = root / f"s{seed}"
    directory.mkdir(parents=True)
    (directory / "summary.json").write_text(json.dumps(
        {**RUN, "seed": seed, "mean_epoch_time_s": epoch_s}))
    return directory


def _runs_table(*args: str | Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "commgnn", "runs-table", *map(str, args)],
                          capture_output=True, text=True, check=False, timeout=120)


def test_update_keeps_gone_runs_and_replaces_given_ones(tmp_path):
    out = tmp_path / "runs.csv"
    first = [_summary(tmp_path / "a", seed, 2.0 + seed) for seed in (0, 1)]
    assert _runs_table("--out", out, *first).returncode == 0
    # a later session: seed 0's directory is gone, seed 1 reran (3.5 s), seed 2 is new
    later = [_summary(tmp_path / "b", 1, 3.5), _summary(tmp_path / "b", 2, 4.0)]
    assert _runs_table("--out", out, "--update", *later).returncode == 0
    table = pd.read_csv(out)
    assert table["seed"].tolist() == [0, 1, 2]
    assert table["mean_epoch_time_s"].tolist() == [2.0, 3.5, 4.0]
    assert table["run_id"].is_unique
    # without --update the table is the given runs only
    assert _runs_table("--out", out, later[1]).returncode == 0
    assert pd.read_csv(out)["seed"].tolist() == [2]


def test_update_refuses_a_file_that_is_not_a_runs_table(tmp_path):
    out = tmp_path / "other.csv"
    out.write_text("a,b\n1,2\n")
    proc = _runs_table("--out", out, "--update", _summary(tmp_path, 0, 1.0))
    assert proc.returncode == 2
    assert f"{out}: no run_id column (not a runs table)" in proc.stderr
    assert out.read_text() == "a,b\n1,2\n"
