"""Kill a worker mid-epoch: the whole run ends quickly, names it, leaves nothing behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(180)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except FileNotFoundError:
        return False
    return state != "Z"


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_killed_worker_stops_the_run(tiny_inputs, tmp_path, make_spec):
    dataset, partition = tiny_inputs
    out = tmp_path / "run"
    staging = tmp_path / "run.partial"
    spec = make_spec(epochs=500, checkpoint=False, eval_every=0)
    proc = subprocess.Popen(
        [sys.executable, "-m", "commgnn", "train", "--spec", spec.to_json(), "--dataset",
         str(dataset), "--partition", str(partition), "--out", str(out), "--checkpoints",
         str(tmp_path / "ckpt")],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        steps = staging / "steps_w1.jsonl"
        wait_for(lambda: steps.exists() and steps.stat().st_size > 0, 120, "training steps")
        pids = json.loads((staging / "workers.json").read_text())["worker_pids"]
        os.kill(pids[1], signal.SIGKILL)
        killed_at = time.monotonic()
        _, stderr = proc.communicate(timeout=30)
        assert time.monotonic() - killed_at < 30
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode != 0
    assert "worker 1" in stderr and "SIGKILL" in stderr, stderr[-2000:]
    wait_for(lambda: not any(alive(p) for p in pids), 10, "workers to be gone")
    assert not out.exists(), "a failed run must not look complete"
