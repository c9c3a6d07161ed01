"""Every socket a run listens on is bound to the rendezvous address, never to every
interface: the c10d store (also the RPC rendezvous), gloo's pairs, TensorPipe's listeners.
Checked on the live processes of a real 2-worker run, spawned and as srun tasks."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from polling import wait_for

from commgnn.runtime.launcher import free_ports, interface_for

pytestmark = pytest.mark.timeout(150)


def listening(pid: int) -> set[str]:
    """The addresses ``pid`` listens on (TCP)."""
    return {conn.laddr.ip for conn in psutil.Process(pid).net_connections(kind="inet")
            if conn.status == psutil.CONN_LISTEN}


def trained(staging: Path) -> bool:
    return all((staging / f"steps_w{w}.jsonl").exists() and
               (staging / f"steps_w{w}.jsonl").stat().st_size > 0 for w in range(2))


def command(spec, inputs, tmp: Path) -> list[str]:
    dataset, partition = inputs
    return [sys.executable, "-m", "commgnn", "train", "--spec", spec.to_json(), "--dataset",
            str(dataset), "--partition", str(partition), "--out", str(tmp / "run"),
            "--checkpoints", str(tmp / "ckpt")]


def other_local_ipv4() -> str | None:
    """An IPv4 address of this host that is not loopback (None if it has none)."""
    for entries in psutil.net_if_addrs().values():
        for entry in entries:
            if entry.family == socket.AF_INET and not ipaddress.ip_address(
                    entry.address).is_loopback:
                return entry.address
    return None


def test_the_interface_holding_an_address():
    assert interface_for("127.0.0.1") == "lo"
    addr = other_local_ipv4()
    if addr is not None:
        owner = [name for name, entries in psutil.net_if_addrs().items()
                 if any(e.address == addr for e in entries)]
        assert interface_for(addr) == owner[0]


def test_spawned_run_listens_on_loopback_only(tiny_inputs, tmp_path, make_spec):
    spec = make_spec(epochs=500, checkpoint=False, eval_every=0)
    proc = subprocess.Popen(command(spec, tiny_inputs, tmp_path), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    staging = tmp_path / "run.partial"
    try:
        wait_for(lambda: trained(staging) or proc.poll() is not None, 90, "training steps")
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        pids = json.loads((staging / "workers.json").read_text())
        workers = {pid: listening(pid) for pid in pids["worker_pids"]}
        launcher = listening(pids["launcher_pid"])
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert all(workers.values()), workers  # the store, gloo and TensorPipe listen
    assert set().union(launcher, *workers.values()) == {"127.0.0.1"}, (launcher, workers)


def test_srun_tasks_listen_on_the_master_address_only(tiny_inputs, tmp_path, make_spec):
    """As srun starts them, on a non-loopback address of this host where there is one
    (gloo and TensorPipe would otherwise follow the host name)."""
    addr = other_local_ipv4() or "127.0.0.1"
    port = free_ports(addr, 1)[0]
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("TORCHELASTIC_", "SLURM_", "GLOO_", "TP_")) and k not in
            ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    spec = make_spec(epochs=500, checkpoint=False, eval_every=0)
    tasks = [subprocess.Popen(command(spec, tiny_inputs, tmp_path), stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True,
                              env={**base, "SLURM_PROCID": str(rank), "SLURM_NTASKS": "2",
                                   "SLURM_LOCALID": str(rank), "MASTER_ADDR": addr,
                                   "MASTER_PORT": str(port)})
             for rank in range(2)]
    try:
        wait_for(lambda: trained(tmp_path / "run.partial")
                 or any(t.poll() is not None for t in tasks), 90, "training steps")
        assert all(t.poll() is None for t in tasks), tasks[0].stderr.read()[-3000:]
        found = {task.pid: listening(task.pid) for task in tasks}
    finally:
        for task in tasks:
            task.kill()
            task.communicate(timeout=30)
    assert all(found.values()), found
    assert set().union(*found.values()) == {addr}, found


def test_rpc_calibration_listens_on_loopback_only():
    """GreenDyGNN's RPC calibration (its own 2-worker launch) binds like a run."""
    import threading

    from commgnn.systems.greendygnn.rpc_calibration import measure_rpc

    seen: set[str] = set()
    done = threading.Event()

    def watch() -> None:  # the launcher must run on the main thread (signal handlers)
        while not done.is_set():
            for child in psutil.Process().children(recursive=True):
                with contextlib.suppress(psutil.Error):  # the child ended meanwhile
                    seen.update(listening(child.pid))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        points = measure_rpc("none", rows_grid=[1, 500], delays_ms=[0.0, 20.0], repeats=40,
                             feature_dim=16, time_dilation=1.0)
    finally:
        done.set()
        watcher.join()
    assert len(points) == 2 * 2 * 40
    assert seen == {"127.0.0.1"}, seen
