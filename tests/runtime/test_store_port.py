"""A spawned run's rendezvous port is held from its choice to its store: no other process
on the host can take it while the workers start.

The soak (issue 41) found two runs started together on one host failing at once: the
launcher chose a free port, released it, and worker 0 bound it only once it had started
(seconds later); meanwhile another run's launcher chose the same port and its store
listened there, so this run's worker 0 could not listen ("Address already in use") and
its peers joined the other run's store, whose worker 3 then died of ``std::bad_alloc``.
Here the window is forced open: worker 0 starts late (an injected delay) while worker 1
tries to bind the port as another run would.
"""

from __future__ import annotations

import errno
import json
import socket
import time
from datetime import timedelta
from pathlib import Path

import pytest

from commgnn.core.errors import HostError
from commgnn.runtime.launcher import START_METHOD_ENV, launch, rendezvous_store

pytestmark = pytest.mark.timeout(120)

#: How long worker 0 takes to reach its store in the forced interleaving (seconds).
WORKER0_DELAY_S = 2.0


def take_the_port_while_worker0_starts(env, out: str) -> None:
    """Worker 1 binds the run's store port (SO_REUSEADDR, as another run's launcher or
    worker 0 does) while worker 0 is still starting; then both meet through the store."""
    taken = ""
    if env.rank == 0:
        time.sleep(WORKER0_DELAY_S)
    else:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((env.master_addr, env.master_port))
            sock.listen(1)
            taken = "bound"
        except OSError as exc:
            taken = errno.errorcode.get(exc.errno, str(exc.errno))
        finally:
            sock.close()
    store = rendezvous_store(env, 30)
    store.set(f"hello/{env.rank}", str(env.rank))
    peer = store.get(f"hello/{1 - env.rank}").decode()
    Path(out, f"w{env.rank}.json").write_text(json.dumps({"taken": taken, "peer": peer,
                                                          "port": env.master_port}))
    store.set(f"done/{env.rank}", "1")
    if env.rank == 0:  # it serves the store: it leaves last
        store.wait(["done/1"], timedelta(seconds=30))


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_the_store_port_cannot_be_taken_while_the_workers_start(method, monkeypatch,
                                                                 tmp_path):
    monkeypatch.setenv(START_METHOD_ENV, method)
    launch(take_the_port_while_worker0_starts, (str(tmp_path),), 2)
    seen = [json.loads((tmp_path / f"w{r}.json").read_text()) for r in range(2)]
    assert seen[1]["taken"] == "EADDRINUSE", seen  # the port was never free to another
    assert [s["peer"] for s in seen] == ["1", "0"]  # and the store is this run's
    assert seen[0]["port"] == seen[1]["port"]


def test_a_master_port_in_use_fails_before_any_worker_starts():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        started = []
        with pytest.raises(HostError, match=rf"^training.master_port: cannot listen on "
                                            rf"127.0.0.1:{port} \(Address already in use\)$"):
            launch(take_the_port_while_worker0_starts, ("/nonexistent",), 2,
                   master_port=port, on_start=started.append)
        assert started == []
