"""``commgnn status``: every training run under a results directory and where it stands.

A run is ``<results>/runs/<system>/<dataset>/<partitioning>/<cell>``; its staging directory
(``<cell>.partial``, the records of a run in progress) and its Snakemake log
(``<results>/logs/train/…/<cell>.log``) say the rest:

- ``running``: a staging directory whose launcher (``workers.json``, written by a local
  launch: under torchrun or srun a run in progress shows as partial) is alive on this host;
- ``failed``: the log reports an error (``commgnn train: error: …``; each attempt rewrites
  its log) and nothing is running (a failed extension of a finished run too: the finished
  one stays);
- ``partial``: a staging directory, nothing running, no error (killed, or interrupted);
- ``finished``: a ``summary.json`` and nothing else going on.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from pathlib import Path

from commgnn.runtime.heartbeat import alive

STATES = ("running", "failed", "partial", "finished")
STAGING_SUFFIX = ".partial"


@dataclass(frozen=True)
class RunStatus:
    run: str  # <system>/<dataset>/<partitioning>/<cell>
    state: str
    epochs: int  # epochs recorded (the staging directory's while one exists)
    epoch_s: float | None  # finished: the mean epoch time, target seconds
    detail: str  # failed: the error line


def _epochs(directory: Path) -> int:
    path = directory / "epochs.jsonl"
    if not path.is_file():
        return 0
    seen = set()
    for line in path.read_text().splitlines():
        try:
            seen.add(json.loads(line)["epoch"])
        except (ValueError, KeyError, TypeError):
            continue  # a torn last line: the run was killed mid-write
    return len(seen)


def _launcher_alive(staging: Path) -> bool:
    try:
        record = json.loads((staging / "workers.json").read_text())
        pid = int(record["launcher_pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if record.get("host", socket.gethostname()) != socket.gethostname():
        return False  # another host's pid says nothing here
    return alive(pid)


def _error(log: Path) -> str:
    """The log's last error line, if its run ended with one."""
    if not log.is_file():
        return ""
    lines = [ln.strip() for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    errors = [ln for ln in lines if ": error: " in ln]
    return errors[-1] if errors else ""


def run_statuses(results: Path) -> list[RunStatus]:
    """Every run under ``results`` (finished, staged or logged), sorted by name."""
    runs_dir, logs_dir = results / "runs", results / "logs" / "train"
    names: set[str] = set()
    if runs_dir.is_dir():
        for summary in runs_dir.glob("*/*/*/*/summary.json"):
            names.add(summary.parent.relative_to(runs_dir).as_posix())
        for staging in runs_dir.glob(f"*/*/*/*{STAGING_SUFFIX}"):
            names.add(staging.relative_to(runs_dir).as_posix()[:-len(STAGING_SUFFIX)])
    if logs_dir.is_dir():
        names.update(log.relative_to(logs_dir).as_posix()[:-len(".log")]
                     for log in logs_dir.glob("*/*/*/*.log"))
    return [_status(runs_dir, logs_dir, name) for name in sorted(names)]


def _status(runs_dir: Path, logs_dir: Path, name: str) -> RunStatus:
    out = runs_dir / name
    staging = out.with_name(out.name + STAGING_SUFFIX)
    summary = out / "summary.json"
    error = _error(logs_dir / f"{name}.log")
    finished = summary.is_file()
    if staging.is_dir() and _launcher_alive(staging):
        return RunStatus(name, "running", _epochs(staging), None, "")
    if error:
        where = staging if staging.is_dir() else out
        return RunStatus(name, "failed", _epochs(where), None, error)
    if staging.is_dir():
        return RunStatus(name, "partial", _epochs(staging), None, "")
    if not finished:  # a log only: the job never got as far as its records
        return RunStatus(name, "failed" if error else "partial", 0, None, error)
    epoch_s = json.loads(summary.read_text()).get("mean_epoch_time_s")
    return RunStatus(name, "finished", _epochs(out), epoch_s, "")


def render(statuses: list[RunStatus], results: Path) -> str:
    """The listing: one line per run, then the count per state."""
    if not statuses:
        return f"no runs under {results}"
    width = max(len(s.run) for s in statuses)
    lines = [f"{'run':<{width}}  {'state':<8}  epochs  epoch (target s)  detail"]
    for s in statuses:
        epoch = f"{s.epoch_s:.4g}" if s.epoch_s is not None else "-"
        lines.append(f"{s.run:<{width}}  {s.state:<8}  {s.epochs:>6}  {epoch:>16}  {s.detail}"
                     .rstrip())
    counts = {state: sum(s.state == state for s in statuses) for state in STATES}
    lines.append(", ".join(f"{n} {state}" for state, n in counts.items() if n)
                 + f" ({len(statuses)} runs under {results})")
    return "\n".join(lines)
