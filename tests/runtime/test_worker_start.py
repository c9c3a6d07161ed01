"""How local workers start (:func:`commgnn.runtime.launcher.worker_context`): forked from a
fork server that imported torch once, or spawned. Either way a worker sees the launcher's
environment as it is at launch, and dies with its launcher."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from polling import wait_for

from commgnn.core.errors import HostError
from commgnn.runtime.launcher import START_METHOD_ENV, launch

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


def hang_holding_the_gil(env) -> None:
    """Worker 1, once its heartbeat has beaten, blocks in native code that keeps the GIL
    (ctypes.PyDLL does not release it), using no CPU: its heartbeat thread starves."""
    import ctypes
    import time

    time.sleep(1.5)
    if env.rank == 1:
        ctypes.PyDLL(None).sleep(600)
    time.sleep(600)


def launcher_command(worker: str, on_start: str = "None") -> list[str]:
    """A launcher process running this module's ``worker`` on two workers."""
    script = ("import sys; sys.path[:0] = sys.argv[1:];"
              f"from test_worker_start import {worker};"
              "from commgnn.runtime.launcher import launch;"
              f"launch({worker}, (), 2, on_start={on_start})")
    return [sys.executable, "-c", script, *map(str, Path(__file__).parents[:2])]


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
    launcher = subprocess.Popen(launcher_command("sleep_forever",
                                                 "lambda p: print(*p, flush=True)"),
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


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_a_worker_hung_holding_the_gil_is_named_with_its_stack(method, tmp_path):
    """A worker silent without using CPU (no heartbeat: a thread holds the GIL in a
    blocking call) is named, and its threads' Python stacks reach the run's log: the line
    that made the blocking call, and the starved heartbeat thread."""
    done = subprocess.run(launcher_command("hang_holding_the_gil"),
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, START_METHOD_ENV: method,
                               "COMMGNN_HEARTBEAT_S": "0.5",
                               "COMMGNN_HEARTBEAT_TIMEOUT_S": "3"})
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]
    # (named at its last heartbeat; had it not beaten yet, from its start)
    assert re.fullmatch(r"commgnn\.core\.errors\.WorkerFailed: worker 1 \(pid \d+\) is "
                        r"unresponsive: no heartbeat (for|since it started) \d+\.\d s"
                        r"( ago)?; stopped the other workers \(its threads' Python stacks "
                        r"are in the log above\)", last), last
    stacks = done.stderr.split("commgnn: worker 1 (pid ")[1]  # after the header naming it
    assert re.search(r'test_worker_start.py", line \d+ in hang_holding_the_gil', stacks)
    assert "heartbeat.py" in stacks  # the starved thread, waiting for the GIL


def time_out_waiting(env) -> None:
    """Worker 0 gives up on worker 1, which waits in its own code."""
    import time

    time.sleep(1.5)
    if env.rank == 0:
        raise TimeoutError("RPC to worker 1 timed out after 1 s")
    time.sleep(600)


def test_after_a_timeout_every_live_worker_writes_its_stacks(tmp_path):
    """A timed-out call means a live peer did not answer: the log shows where it was."""
    done = subprocess.run(launcher_command("time_out_waiting"), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().endswith(
        "WorkerFailed: worker 0 raised TimeoutError: RPC to worker 1 timed out after 1 s; "
        "stopped the other workers (the live workers' Python stacks are in the log above)")
    stacks = done.stderr.split("commgnn: worker 1 (pid ")[1]
    assert re.search(r'test_worker_start.py", line \d+ in time_out_waiting', stacks)
    assert "commgnn: worker 0" not in done.stderr  # it had exited: nothing to ask
