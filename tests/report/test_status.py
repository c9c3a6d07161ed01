"""``commgnn status``: each run's state from its records, staging directory and log."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from commgnn.report.status import run_statuses

CELL = "sage_b1024_10gbe_s0"


def _dead_pid() -> int:
    gone = subprocess.Popen(["true"])
    gone.wait()
    return gone.pid


def _epochs(directory: Path, epochs: int, torn: bool = False) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    text = "".join(json.dumps({"epoch": e}) + "\n" for e in range(epochs))
    (directory / "epochs.jsonl").write_text(text + ('{"epo' if torn else ""))


def _finished(results: Path, system: str, epoch_s: float = 0.25) -> None:
    out = results / "runs" / system / "tiny" / "metis2" / CELL
    _epochs(out, 3)
    (out / "summary.json").write_text(json.dumps({"mean_epoch_time_s": epoch_s}))


def _staged(results: Path, system: str, launcher_pid: int, epochs: int,
            host: str | None = None) -> None:
    staging = results / "runs" / system / "tiny" / "metis2" / f"{CELL}.partial"
    _epochs(staging, epochs, torn=True)
    (staging / "workers.json").write_text(json.dumps({
        "launcher_pid": launcher_pid, "worker_pids": [], "host": host or socket.gethostname()}))


def _log(results: Path, system: str, text: str) -> None:
    log = results / "logs" / "train" / system / "tiny" / "metis2" / f"{CELL}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text(text)


ERROR = ("commgnn train: error: worker 1 (pid 4242) raised OSError: [Errno 28] No space "
         "left on device; stopped the other workers")


def _results(tmp_path: Path) -> Path:
    results = tmp_path / "results"
    _finished(results, "done")
    _log(results, "done", "INFO epoch 3/3: ...\n")
    _staged(results, "going", os.getpid(), 1)  # this process stands in for its launcher
    _staged(results, "killed", _dead_pid(), 2)
    _staged(results, "remote", os.getpid(), 2, host="another-host")  # its pid means nothing
    _staged(results, "broke", _dead_pid(), 1)
    _log(results, "broke", f"INFO epoch 1/3: ...\n{ERROR}\n")
    _log(results, "never", f"{ERROR}\n")  # failed before any record
    _finished(results, "extended")  # a finished run whose extension failed later
    time.sleep(0.01)
    _log(results, "extended", f"{ERROR}\n")
    os.utime(results / "logs/train/extended/tiny/metis2" / f"{CELL}.log",
             (time.time() + 5, time.time() + 5))
    return results


def test_each_run_gets_its_state(tmp_path):
    by_system = {s.run.split("/")[0]: s for s in run_statuses(_results(tmp_path))}
    assert {k: (s.state, s.epochs) for k, s in by_system.items()} == {
        "broke": ("failed", 1), "done": ("finished", 3), "extended": ("failed", 3),
        "going": ("running", 1), "killed": ("partial", 2), "never": ("failed", 0),
        "remote": ("partial", 2)}
    assert by_system["done"].epoch_s == 0.25
    assert by_system["broke"].detail == ERROR
    assert by_system["done"].run == f"done/tiny/metis2/{CELL}"


def test_the_cli_lists_and_filters(tmp_path):
    results = _results(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "commgnn", "status", str(results), "--state",
                           "failed"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [ln.split()[0] for ln in lines[1:-1]] == [
        f"{s}/tiny/metis2/{CELL}" for s in ("broke", "extended", "never")]
    assert all(ln.endswith(ERROR) for ln in lines[1:-1])
    assert lines[-1] == f"3 failed (3 runs under {results})"
    missing = subprocess.run([sys.executable, "-m", "commgnn", "status",
                              str(tmp_path / "nowhere")], capture_output=True, text=True,
                             timeout=60)
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"commgnn status: error: {tmp_path / 'nowhere'}: no " \
                                     "results directory"
