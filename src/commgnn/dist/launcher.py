"""Start P worker processes: spawned locally, or one per task under torchrun / srun.

Every launcher ends in the same call, ``worker_fn(env, *args)`` with a :class:`DistEnv`
telling the worker its rank, the world size and the rendezvous addresses. Locally, the
launcher watches its children: when one dies (crash, kill, non-zero exit) the others are
stopped within seconds and :class:`WorkerFailed` names the failed worker; children also
die with the launcher (``PR_SET_PDEATHSIG``), so no run leaves orphans. Under torchrun the
elastic agent, and under srun ``--kill-on-bad-exit=1``, give the same guarantee.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

import torch.multiprocessing as mp
from torch.multiprocessing.spawn import ProcessExitedException, ProcessRaisedException

from commgnn.errors import WorkerFailed

PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class DistEnv:
    """Where this worker sits in the run and where to rendezvous."""

    rank: int
    world_size: int
    master_addr: str
    master_port: int  # c10d (gradient collectives)
    rpc_port: int  # TensorPipe RPC rendezvous
    launcher: str  # how this worker was started: "spawn" | "torchrun" | "srun"
    local_rank: int = 0


def free_ports(addr: str, count: int) -> list[int]:
    """``count`` distinct currently-free TCP ports on ``addr``."""
    socks, ports = [], []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((addr, 0))
            socks.append(sock)
            ports.append(sock.getsockname()[1])
    finally:
        for sock in socks:
            sock.close()
    return ports


def _slurm_master() -> str:
    """The first node of the step: task 0 runs there (srun's block distribution)."""
    nodelist = (os.environ.get("SLURM_STEP_NODELIST") or os.environ.get("SLURM_JOB_NODELIST")
                or os.environ.get("SLURM_NODELIST"))
    if not nodelist:
        raise WorkerFailed("under srun: set MASTER_ADDR or SLURM_STEP_NODELIST")
    out = subprocess.run(["scontrol", "show", "hostnames", nodelist], capture_output=True,
                         text=True, check=True)
    return out.stdout.split()[0]


#: Ports a SLURM step derives its rendezvous from (two each: c10d, then RPC).
SLURM_PORT_BASE, SLURM_PORT_SLOTS = 20000, 20000


def slurm_port(job_id: int, step_id: int) -> int:
    """The c10d port of a SLURM step that names none (RPC takes the next one).

    Every task of the step computes the same port from the job and step ids; two steps on
    one node collide only when their ids agree modulo the 20000 slots (20000-59999).
    """
    return SLURM_PORT_BASE + 2 * ((job_id * 8 + step_id) % SLURM_PORT_SLOTS)


def external_env(master_port: int = 0) -> DistEnv | None:
    """The environment torchrun or srun set up for this process, if any.

    Under srun the rendezvous is ``MASTER_ADDR`` (else the step's first node) and
    ``MASTER_PORT``, else ``master_port`` when non-zero, else :func:`slurm_port`.
    """
    if "TORCHELASTIC_RUN_ID" in os.environ or ("RANK" in os.environ and
                                               "WORLD_SIZE" in os.environ):
        port = int(os.environ["MASTER_PORT"])
        return DistEnv(rank=int(os.environ["RANK"]), world_size=int(os.environ["WORLD_SIZE"]),
                       master_addr=os.environ["MASTER_ADDR"], master_port=port,
                       rpc_port=port + 1, launcher="torchrun",
                       local_rank=int(os.environ.get("LOCAL_RANK", 0)))
    if "SLURM_PROCID" in os.environ and int(os.environ.get("SLURM_NTASKS", "1")) > 1:
        port = int(os.environ.get("MASTER_PORT") or master_port or
                   slurm_port(int(os.environ.get("SLURM_JOB_ID", 0)),
                              int(os.environ.get("SLURM_STEP_ID", 0))))
        addr = os.environ.get("MASTER_ADDR") or _slurm_master()
        return DistEnv(rank=int(os.environ["SLURM_PROCID"]),
                       world_size=int(os.environ["SLURM_NTASKS"]), master_addr=addr,
                       master_port=port, rpc_port=port + 1, launcher="srun",
                       local_rank=int(os.environ.get("SLURM_LOCALID", 0)))
    return None


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:  # not Linux: the launcher's own cleanup still applies
        pass


def _local_entry(rank: int, worker_fn: Callable, args: tuple, world_size: int, addr: str,
                 ports: list[int]) -> None:
    _die_with_parent()
    env = DistEnv(rank=rank, world_size=world_size, master_addr=addr, master_port=ports[0],
                  rpc_port=ports[1], launcher="spawn", local_rank=rank)
    worker_fn(env, *args)


def _describe(exc: Exception) -> str:
    if isinstance(exc, ProcessExitedException):
        how = (f"was killed by signal {exc.signal_name}" if exc.signal_name
               else f"exited with code {exc.exit_code}")
        return f"worker {exc.error_index} (pid {exc.error_pid}) {how}"
    if isinstance(exc, ProcessRaisedException):
        lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
        return f"worker {exc.error_index} (pid {exc.error_pid}) raised: {lines[-1] if lines else exc}"
    return str(exc)


def launch(worker_fn: Callable, args: tuple, world_size: int, master_addr: str = "127.0.0.1",
           master_port: int = 0,
           on_start: Callable[[list[int]], None] | None = None) -> None:
    """Run ``worker_fn(env, *args)`` on ``world_size`` workers and wait for all of them.

    Under torchrun/srun this process *is* one worker. Otherwise ``world_size`` processes
    are spawned here, rendezvousing on ``master_port`` (c10d) and ``master_port + 1``
    (RPC), or on two free ports when it is 0; ``on_start`` receives their pids. Raises
    :class:`WorkerFailed`.
    """
    env = external_env(master_port)
    if env is not None:
        if env.world_size != world_size:
            raise WorkerFailed(f"launcher gives {env.world_size} workers but the run needs "
                               f"{world_size} (one per partition)")
        worker_fn(env, *args)
        return
    ports = [master_port, master_port + 1] if master_port else free_ports(master_addr, 2)
    context = mp.start_processes(_local_entry,
                                 args=(worker_fn, args, world_size, master_addr, ports),
                                 nprocs=world_size, join=False, start_method="spawn")
    pids = [p.pid for p in context.processes]
    if on_start is not None:
        on_start(pids)

    def stop_children(signum, _frame):
        for proc in context.processes:
            if proc.is_alive():
                proc.kill()
        raise WorkerFailed(f"launcher received signal {signal.Signals(signum).name}; "
                           "stopped all workers")

    previous = {s: signal.signal(s, stop_children) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        while not context.join(timeout=0.5, grace_period=2.0):
            pass
    except (ProcessExitedException, ProcessRaisedException) as exc:
        raise WorkerFailed(f"{_describe(exc)}; stopped the other workers") from None
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for proc in context.processes:
            if proc.is_alive():
                proc.kill()

