"""benchmarks/collect_hopgnn_merging.py on hand-made HopGNN runs: target epoch times, the
search's settled merge count against the no-merge run, and ``--update`` keeping the rows of
(model, seed) pairs whose run directories are gone."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
merging = importlib.import_module("collect_hopgnn_merging")


def _run(root: Path, name: str, options: dict, seed: int, epochs: list[tuple[float, int]],
         model: str = "sage_h16") -> Path:
    """A run whose epochs take (raw seconds, merges); dilation 10, 4 time steps less merges,
    miss rate 0.25 unmerged and 0.5 merged."""
    run = root / name / f"{model}_s{seed}"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps(
        {"base_system": "hopgnn", "system_options": options, "model": model, "seed": seed}))
    (run / "epochs.jsonl").write_text("".join(json.dumps(
        {"epoch": e, "time_s": raw, "time_dilation": 10.0, "time_steps": 4 - merges,
         "merges": merges, "miss_rows": 25 if merges == 0 else 50, "input_rows": 100}) + "\n"
        for e, (raw, merges) in enumerate(epochs)))
    return run


def test_the_search_settles_and_update_keeps_gone_seeds(tmp_path):
    pg = {"mode": "micrograph", "pregather": True, "merging": "none"}
    search = {"merging": "search"}
    seed0 = [_run(tmp_path, "pg", pg, 0, [(10.0, 0)]),
             _run(tmp_path, "search", search, 0, [(10.0, 0), (16.0, 1), (10.0, 0)]),
             _run(tmp_path, "mg", {**pg, "pregather": False}, 0, [(30.0, 0)])]  # not compared
    prefix = tmp_path / "out" / "merging"
    merging.main(prefix, seed0)
    rows = json.loads(prefix.with_suffix(".json").read_text())["rows"]
    assert len(rows) == 1
    row = rows[0]
    assert row["search_merges_by_epoch"] == [0, 1, 0]
    assert row["search_settled_merges"] == 0
    assert row["mean_epoch_s"] == {"none": 1.0, "search": pytest.approx(1.2)}
    assert row["search_over_none"] == pytest.approx(1.2)
    assert row["miss_rate"]["search"] == pytest.approx((0.25 + 0.5 + 0.25) / 3)

    # a later session: seed 0's directories are gone, seed 1 ran
    for run in seed0:
        for path in run.iterdir():
            path.unlink()
        run.rmdir()
    seed1 = [_run(tmp_path, "pg", pg, 1, [(12.0, 0)])]
    merging.main(prefix, seed1, update=True)
    saved = json.loads(prefix.with_suffix(".json").read_text())
    assert [(r["model"], r["seed"]) for r in saved["rows"]] == [("sage_h16", 0), ("sage_h16", 1)]
    assert saved["rows"][0] == row
    assert saved["rows"][1]["mean_epoch_s"] == {"none": 1.2}
    assert saved["runs"] == [str(r) for r in seed0] + [str(r) for r in seed1]
    # without --update only the given runs remain
    merging.main(prefix, seed1)
    assert len(json.loads(prefix.with_suffix(".json").read_text())["rows"]) == 1
