"""The workflow's answer to a transient failure: a training job whose attempt fails is
retried once from its last checkpoint, and the retry is recorded, not hidden.

A real Snakemake run of one tiny cell; once the run has checkpointed an epoch, one of its
workers is killed (SIGKILL: a fault no code path of the run can absorb). The job fails,
Snakemake starts it again, the run resumes from the checkpoint and finishes; its summary
and the runs table say attempt 2, the epoch it resumed from and the first attempt's error,
whose log is kept beside the run's.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from polling import wait_for

from commgnn.runtime.heartbeat import failed_attempt_error
from commgnn.train.summary import ATTEMPT_KEYS, COMMON_KEYS

pytestmark = pytest.mark.timeout(300)

EPOCHS = 40
CONFIG = {
    "results_dir": "out",
    "datasets": {"tiny": {"source": "synthetic", "preset": "tiny", "seed": 3}},
    "partitionings": {"metis2": {"method": "metis", "parts": 2, "halo_hops": 1}},
    "training": {"epochs": EPOCHS, "fanouts": [5, 5], "hidden": 16, "eval_every": 0,
                 "eval_max_nodes": 100},
    "networks": {"slow": {"preset": "10gbe", "time_dilation": 200}},
    "experiments": [{"systems": ["default"], "datasets": ["tiny"], "partitionings": ["metis2"],
                     "batch_sizes": [256], "networks": ["slow"]}],
}
RUN = "default/tiny/metis2/sage_b256_slow_s0"


def test_a_killed_worker_is_retried_from_the_checkpoint_and_recorded(repo_root, tmp_path):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    out = tmp_path / "out"
    staging = out / "runs" / (RUN + ".partial")
    checkpoint = out / "checkpoints" / RUN / "last.pt"
    log = out / "logs" / "train" / (RUN + ".log")
    stale = Path(f"{log}.attempt7")  # from an earlier invocation: a first attempt removes it
    stale.parent.mkdir(parents=True)
    stale.write_text("old\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--snakefile",
         str(repo_root / "Snakefile"), "--directory", str(tmp_path), "--configfile",
         str(tmp_path / "config.yaml"), "--until", "runs_table"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_for(lambda: checkpoint.exists() or proc.poll() is not None, 240, "a checkpoint")
        assert proc.poll() is None, proc.stdout.read()[-3000:]
        assert not stale.exists()
        victim = json.loads((staging / "workers.json").read_text())["worker_pids"][1]
        os.kill(victim, signal.SIGKILL)
        output, _ = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, output[-3000:]

    first = Path(f"{log}.attempt1")
    assert first.exists(), sorted(p.name for p in log.parent.iterdir())
    error = failed_attempt_error(first)
    assert "worker 1" in error and "SIGKILL" in error, error
    assert not Path(f"{log}.attempt2").exists()  # the second attempt succeeded

    summary = json.loads((out / "runs" / RUN / "summary.json").read_text())
    assert summary["attempt"] == 2
    assert summary["failed_attempt"] == error
    assert 1 <= summary["resumed_from_epoch"] < EPOCHS
    assert summary["epochs"] == EPOCHS
    epochs = [json.loads(line)["epoch"]
              for line in (out / "runs" / RUN / "epochs.jsonl").read_text().splitlines()]
    assert epochs == list(range(EPOCHS))  # every epoch once: kept ones, then the resumed
    assert "resuming from checkpoint" in log.read_text()

    table = pd.read_csv(out / "tables" / "runs.csv")
    row = table.iloc[0]
    assert row["attempt"] == 2 and row["resumed_from_epoch"] == summary["resumed_from_epoch"]
    assert row["failed_attempt"] == error


def test_every_summary_says_which_attempt_it_is():
    assert set(ATTEMPT_KEYS) <= set(COMMON_KEYS)


def test_the_failed_attempts_error_is_its_first_error_line(tmp_path):
    log = tmp_path / "a.log"
    log.write_text("INFO starting\ncommgnn: error: worker 1 (pid 9) was killed by signal "
                   "SIGKILL\ncommgnn train: error: worker 0 raised RuntimeError: peer gone\n")
    assert failed_attempt_error(log) == "worker 1 (pid 9) was killed by signal SIGKILL"
    log.write_text("Traceback (most recent call last):\n  ...\nMemoryError\n")
    assert failed_attempt_error(log) == "MemoryError"
    log.write_text("")
    assert "is empty" in failed_attempt_error(log)
    assert "could not be read" in failed_attempt_error(tmp_path / "missing.log")
