"""benchmarks/run_archive.py: a run's records and a control directory go into the archive
(``.jsonl`` gzipped) and come back byte for byte; an unfinished run is refused, naming it,
with nothing written."""

from __future__ import annotations

import gzip
import importlib
import json
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
archive = importlib.import_module("run_archive")


def _run_dir(root: Path) -> Path:
    run = root / "runs" / "dgl" / "toy" / "metis2" / "sage_b8_10gbe_s0"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps({"system": "default", "workers": 2}))
    (run / "epochs.jsonl").write_text('{"epoch": 0, "time_s": 1.5}\n')
    for rank in range(2):
        (run / f"steps_w{rank}.jsonl").write_text(
            "".join(json.dumps({"step": s, "rank": rank}) + "\n" for s in range(50)))
    (run / "train.log").write_text("not archived\n")
    return run


def test_save_then_restore_gives_the_same_bytes(tmp_path):
    results = tmp_path / "bench-toy"
    run = _run_dir(results)
    policy = results / "control" / "toy" / "metis2" / "sage_b8_congested" / "policy"
    policy.mkdir(parents=True)
    (policy / "training.json").write_text('{"episodes": 3}')
    (policy / "nested").mkdir()
    (policy / "nested" / "trace.jsonl").write_text('{"e": 0}\n')
    root = tmp_path / "archive"

    written = archive.save(results, [run, policy], root)

    stored = root / "bench-toy"
    names = sorted(str(p.relative_to(stored)) for p in written)
    assert names == sorted([
        "runs/dgl/toy/metis2/sage_b8_10gbe_s0/summary.json",
        "runs/dgl/toy/metis2/sage_b8_10gbe_s0/epochs.jsonl.gz",
        "runs/dgl/toy/metis2/sage_b8_10gbe_s0/steps_w0.jsonl.gz",
        "runs/dgl/toy/metis2/sage_b8_10gbe_s0/steps_w1.jsonl.gz",
        "control/toy/metis2/sage_b8_congested/policy/training.json",
        "control/toy/metis2/sage_b8_congested/policy/nested/trace.jsonl.gz",
    ])
    packed = stored / "runs/dgl/toy/metis2/sage_b8_10gbe_s0/steps_w1.jsonl.gz"
    assert gzip.decompress(packed.read_bytes()) == (run / "steps_w1.jsonl").read_bytes()
    # same records => same archive bytes (gzip's header carries no time)
    again = archive.save(results, [run], tmp_path / "archive2")
    assert (again[2].read_bytes()
            == (stored / "runs/dgl/toy/metis2/sage_b8_10gbe_s0/steps_w0.jsonl.gz").read_bytes())

    fresh = tmp_path / "fresh" / "bench-toy"
    restored = archive.restore(stored, fresh)
    assert len(restored) == 6
    for original in [*run.glob("*.json*"), *policy.rglob("*.json*")]:
        twin = fresh / original.relative_to(results)
        assert twin.read_bytes() == original.read_bytes()
    assert not (fresh / run.relative_to(results) / "train.log").exists()
    assert not list(fresh.rglob("*.partial"))


def test_an_unfinished_run_is_refused_and_nothing_is_written(tmp_path):
    results = tmp_path / "bench-toy"
    done = _run_dir(results)
    unfinished = results / "runs" / "dgl" / "toy" / "metis2" / "sage_b8_10gbe_s1"
    unfinished.mkdir(parents=True)
    (unfinished / "steps_w0.jsonl").write_text("{}\n")
    root = tmp_path / "archive"
    with pytest.raises(SystemExit, match=re.escape("sage_b8_10gbe_s1: no summary.json")):
        archive.save(results, [done, unfinished], root)
    assert not root.exists()
    with pytest.raises(SystemExit, match="not under the results directory"):
        archive.save(results, [tmp_path], root)
