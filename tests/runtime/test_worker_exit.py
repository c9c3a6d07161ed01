"""A worker whose work is done ends at once: a finished run is never judged hung while its
workers' interpreters exit.

Before, a worker stopped its heartbeat when its work returned and then went through the
interpreter's exit — joining threads, finalizers, C++ destructors — which can block
without using CPU; past the heartbeat timeout the launcher named it "unresponsive: no
heartbeat" and failed a run that had finished (the soak's issue names one such failure:
worker 1 silent, with no CPU, at the end of a run). Forced here with a thread the exit
would wait for.
"""

from __future__ import annotations

import threading
import time

import pytest

from commgnn.runtime.launcher import START_METHOD_ENV, launch

pytestmark = pytest.mark.timeout(120)

HEARTBEAT = {"COMMGNN_HEARTBEAT_S": "0.5", "COMMGNN_HEARTBEAT_TIMEOUT_S": "3"}
#: How long the interpreter's exit would block (longer than the heartbeat timeout).
EXIT_BLOCKS_S = 30


def finish_leaving_a_thread_behind(env) -> None:
    """Worker 1 finishes its work with a (non-daemon) thread still running: the
    interpreter's exit joins it."""
    if env.rank == 1:
        threading.Thread(target=time.sleep, args=(EXIT_BLOCKS_S,), name="late").start()


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_a_finished_worker_ends_without_waiting_for_its_interpreters_exit(method,
                                                                           monkeypatch):
    monkeypatch.setenv(START_METHOD_ENV, method)
    for name, value in HEARTBEAT.items():
        monkeypatch.setenv(name, value)
    started = time.monotonic()
    launch(finish_leaving_a_thread_behind, (), 2)  # raised WorkerFailed before
    assert time.monotonic() - started < EXIT_BLOCKS_S / 2
