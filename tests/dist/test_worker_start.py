"""How local workers start (:func:`commgnn.dist.launcher.worker_context`): forked from a
fork server that imported torch once, or spawned. Either way a worker sees the launcher's
environment as it is at launch, and dies with its launcher."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from polling import wait_for

from commgnn.dist.launcher import START_METHOD_ENV, launch
from commgnn.errors import HostError

pytestmark = pytest.mark.timeout(120)


def record_environment(env, out: str) -> None:
    """A worker: write what it sees (its variable, its parent, torch's modules)."""
    Path(out, f"w{env.rank}.json").write_text(json.dumps({
        "mark": os.environ.get("COMMGNN_TEST_MARK"), "ppid": os.getppid(),
        "dynamo": "torch._dynamo" in sys.modules}))


def sleep_forever(env) -> None:
    """A worker that outlives any test."""
    import time

    time.sleep(600)


def _seen(out: Path, world: int) -> list[dict]:
    return [json.loads((out / f"w{rank}.json").read_text()) for rank in range(world)]


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_a_worker_sees_the_launchers_environment_at_launch(method, monkeypatch, tmp_path):
    monkeypatch.setenv(START_METHOD_ENV, method)
    for mark in ("first", "second"):  # the fork server outlives the first launch
        out = tmp_path / mark
        out.mkdir()
        monkeypatch.setenv("COMMGNN_TEST_MARK", mark)
        launch(record_environment, (str(out),), 2)
        seen = _seen(out, 2)
        assert [s["mark"] for s in seen] == [mark, mark]
        if method == "spawn":  # each worker a fresh interpreter, the launcher's child
            assert [s["ppid"] for s in seen] == [os.getpid()] * 2
            assert not any(s["dynamo"] for s in seen)
        else:  # forked from one server that imported what DDP pulls in
            assert seen[0]["ppid"] == seen[1]["ppid"] != os.getpid()
            assert all(s["dynamo"] for s in seen)


def test_an_unknown_start_method_is_one_line(monkeypatch):
    monkeypatch.setenv(START_METHOD_ENV, "fork")
    with pytest.raises(HostError, match=r"^COMMGNN_WORKER_START: 'fork' is not one of"):
        launch(record_environment, ("/nonexistent",), 2)


def test_forked_workers_die_with_a_killed_launcher(tmp_path):
    """SIGKILL of the launcher (no cleanup runs): its fork server exits, and the workers
    with it (their parent-death signal)."""
    script = ("import sys; sys.path[:0] = sys.argv[1:];"
              "from test_worker_start import sleep_forever;"
              "from commgnn.dist.launcher import launch;"
              "launch(sleep_forever, (), 2, on_start=lambda p: print(*p, flush=True))")
    here = Path(__file__)
    launcher = subprocess.Popen([sys.executable, "-c", script, *map(str, here.parents[:2])],
                                stdout=subprocess.PIPE, text=True,
                                env={**os.environ, START_METHOD_ENV: "forkserver"})
    try:
        pids = [int(p) for p in launcher.stdout.readline().split()]
        assert len(pids) == 2
        assert all(psutil.pid_exists(p) for p in pids)
        launcher.send_signal(signal.SIGKILL)
        launcher.wait(10)

        def gone() -> bool:
            return not any(psutil.pid_exists(p) and psutil.Process(p).status()
                           != psutil.STATUS_ZOMBIE for p in pids)

        wait_for(gone, 10, "workers to die with their launcher")
    finally:
        launcher.kill()
