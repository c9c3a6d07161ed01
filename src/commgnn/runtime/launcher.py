"""Start P worker processes: spawned locally, or one per task under torchrun / srun.

Every launcher ends in the same call, ``worker_fn(env, *args)`` with a :class:`DistEnv`
telling the worker its rank, the world size and the rendezvous addresses, and every
worker runs a heartbeat and records its own failure (:mod:`commgnn.runtime.heartbeat`).
Locally, the launcher watches its children: the first failure in time — a worker that
raised (its own message), died (its signal or exit code) or fell silent (stopped, hung:
no heartbeat for the timeout) — ends the run at once: the others are killed and
:class:`WorkerFailed` names that worker in one line. Children also die with the launcher
(``PR_SET_PDEATHSIG``), so no run leaves orphans. Under torchrun and srun every worker
watches its peers' heartbeats in the c10d store and ends itself naming a silent peer;
srun ``--kill-on-bad-exit=1`` and torchrun's agent then end the rest.

Every socket a worker listens on is bound to the rendezvous address's interface
(:func:`bind_interface`, :func:`rendezvous_store`): the c10d store (served by worker 0
on ``master_addr`` only, also the RPC rendezvous), gloo's pairs and TensorPipe's
listeners. Under torchrun the agent serves the store; how it binds is torchrun's.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import ipaddress
import itertools
import logging
import multiprocessing as mp
import multiprocessing.connection
import os
import re
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from multiprocessing import forkserver
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, urlparse

from commgnn.core.errors import HostError, WorkerFailed
from commgnn.runtime import heartbeat

if TYPE_CHECKING:  # torch is imported where a worker needs it: a launcher starts its
    import torch.distributed as dist  # fork server before it imports torch itself

PR_SET_PDEATHSIG = 1


@dataclass(frozen=True)
class DistEnv:
    """Where this worker sits in the run and where to rendezvous."""

    rank: int
    world_size: int
    master_addr: str
    master_port: int  # c10d (gradient collectives)
    rpc_port: int  # master_port + 1, nominal: RPC rendezvouses through the c10d store
    launcher: str  # how this worker was started: "spawn" | "torchrun" | "srun"
    local_rank: int = 0
    scratch_dir: str = ""  # spawn: a per-run directory the launcher removes at the end
    #: spawn, worker 0: the store's listening socket, bound by the launcher before any
    #: worker started (:func:`listen`), so the port is never free between its choice and
    #: the store (another run on the host could take it, or its store be joined)
    store_listener: socket.socket | None = field(default=None, compare=False, repr=False)


def free_ports(addr: str, count: int) -> list[int]:
    """``count`` distinct currently-free TCP ports on ``addr`` (free *now*: any process may
    take one before it is used; a run's own store port comes from :func:`listen`)."""
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


def _die_with_parent(parent_pid: int | None = None) -> None:
    """Be killed when the parent dies (the launcher, or the fork server, which exits with
    the launcher); exit now if the parent, ``parent_pid``, is already gone (it died before
    the death signal was set)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:  # not Linux: the launcher's own cleanup still applies
        pass
    if parent_pid is not None and os.getppid() != parent_pid:
        os._exit(1)


# -- where to listen ------------------------------------------------------------------------
def _resolve(addr: str) -> tuple[int, str]:
    """``(family, ip)`` of ``addr`` (a name or an address)."""
    try:
        family, _, _, _, sockaddr = socket.getaddrinfo(addr, None, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as exc:
        raise HostError(f"training.master_addr: {addr!r}: does not resolve ({exc})") from None
    return family, sockaddr[0].split("%")[0]


def interface_for(addr: str) -> str:
    """The name of this host's network interface that reaches ``addr`` (``lo`` for
    127.0.0.1; the one holding the address when it is local)."""
    import psutil  # deferred: imports psutil

    family, ip = _resolve(addr)
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect((ip, 9))
            local = probe.getsockname()[0].split("%")[0]
        except OSError as exc:
            raise HostError(f"training.master_addr: {addr!r}: no route from this host "
                            f"({exc.strerror})") from None
    wanted = ipaddress.ip_address(local)
    for name, entries in psutil.net_if_addrs().items():
        for entry in entries:
            if entry.family == family and \
                    ipaddress.ip_address(entry.address.split("%")[0]) == wanted:
                return name
    raise HostError(f"training.master_addr: {addr!r}: no interface of this host holds "
                    f"{local}; set training.interface")


def bind_interface(env: DistEnv, interface: str | None) -> str:
    """Make gloo, TensorPipe and NCCL listen on ``interface`` (configured), else on the one
    that reaches the rendezvous address, unless ``GLOO_SOCKET_IFNAME`` /
    ``TP_SOCKET_IFNAME`` / ``NCCL_SOCKET_IFNAME`` already say where. Returns the
    interface."""
    name = interface or interface_for(env.master_addr)
    for var in ("GLOO_SOCKET_IFNAME", "TP_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"):
        if interface or var not in os.environ:
            os.environ[var] = name
    return name


# -- the rendezvous store -------------------------------------------------------------------
def _agent_store() -> bool:
    """Under torchrun, whether its agent serves the store on ``MASTER_PORT``."""
    return os.environ.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true"


def _client(env: DistEnv, timeout: float) -> dist.Store:
    import torch.distributed as dist  # deferred: imports torch

    store = dist.TCPStore(env.master_addr, env.master_port, None, False,
                          timeout=timedelta(seconds=timeout))
    if env.launcher == "torchrun" and _agent_store():
        attempt = (f"commgnn/{os.environ.get('TORCHELASTIC_RUN_ID', 'run')}/"
                   f"attempt_{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}")
        return dist.PrefixStore(attempt, store)
    return store


def rendezvous_store(env: DistEnv, timeout: float) -> dist.Store:
    """The run's c10d store: served by worker 0 on ``master_addr:master_port`` only (a
    socket bound to that address, not to every interface), or torchrun's agent's."""
    import torch.distributed as dist  # deferred: imports torch

    if env.rank != 0 or (env.launcher == "torchrun" and _agent_store()):
        return _client(env, timeout)
    sock = env.store_listener
    if sock is None or sock.fileno() < 0:  # srun/torchrun: this task binds it
        sock = listen(env.master_addr, env.master_port, env.world_size)
    return dist.TCPStore(env.master_addr, env.master_port, env.world_size, True,
                         timeout=timedelta(seconds=timeout), wait_for_workers=False,
                         master_listen_fd=sock.detach())


def listen(addr: str, port: int, world_size: int) -> socket.socket:
    """A socket listening on ``addr:port`` for the run's store (``port`` 0: one the kernel
    picks), bound to that address only; HostError naming the port if it cannot be.

    Spawned locally, the launcher calls this before any worker starts and hands the socket
    to worker 0: from the port's choice to the end of the store the port is held, so two
    runs starting together on one host never share one (a port chosen free and bound
    later — :func:`free_ports` — can be taken in between by another run, whose store this
    run's workers would then join)."""
    family, ip = _resolve(addr)
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((ip, port))
        sock.listen(max(128, 2 * world_size))
    except OSError as exc:
        sock.close()
        raise HostError(f"training.master_port: cannot listen on {ip}:{port} "
                        f"({exc.strerror})") from None
    return sock


_RPC_STORES: dict[str, dist.Store] = {}
_rpc_ids = itertools.count()


def _store_handler(url: str, **_kwargs) -> Iterator[tuple[dist.Store, int, int]]:
    parsed = urlparse(url)
    query = dict(parse_qsl(parsed.query))
    yield _RPC_STORES[parsed.netloc], int(query["rank"]), int(query["world_size"])


def rpc_init_method(store: dist.Store) -> str:
    """An ``init_method`` for :func:`torch.distributed.rpc.init_rpc` that rendezvouses
    through ``store`` (so RPC opens no store of its own)."""
    import torch.distributed as dist  # deferred: imports torch

    if not _RPC_STORES:
        with contextlib.suppress(RuntimeError):  # registered by an earlier run here
            dist.register_rendezvous_handler("commgnn", _store_handler)
    key = f"store{next(_rpc_ids)}"
    _RPC_STORES[key] = store
    return f"commgnn://{key}"


def watch_peers(env: DistEnv, timeout: float) -> None:
    """Under torchrun/srun, let this worker's heartbeat watch its peers through the
    store (spawned locally, the launcher watches every worker itself)."""
    beat = heartbeat.current()
    if env.launcher == "spawn" or beat is None:
        return
    owner_rank = None if env.launcher == "torchrun" and _agent_store() else 0
    address = f"{env.master_addr}:{env.master_port}"
    beat.watch_peers(heartbeat.StoreWatch(_client(env, timeout), env.rank, env.world_size,
                                          beat.interval, beat.timeout, address, owner_rank))


# -- launching ------------------------------------------------------------------------------
class WorkerTraceback(Exception):
    """A worker's traceback, as the cause of :class:`WorkerFailed` (``--debug`` shows it)."""


def quiet_known_warnings() -> None:
    """Filter, once per worker, what torch warns about its own internals: its RPC start-up
    gathers device maps over a bare gloo backend, which its object collective then calls
    deprecated (nothing a user can act on; training and calibration workers alike)."""
    warnings.filterwarnings("ignore", message=r"You are using a Backend .* as a ProcessGroup",
                            category=UserWarning)


def _local_entry(rank: int, worker_fn: Callable, args: tuple, world_size: int, addr: str,
                 ports: list[int], control_path: str, parent_pid: int,
                 environ: dict[str, str], store_listener: socket.socket | None) -> None:
    quiet_known_warnings()
    dump_stacks_on(STACKS_SIGNAL)
    _die_with_parent(parent_pid)
    _release_fork_server()
    if os.environ != environ:  # a forked worker has the fork server's; take the launcher's
        os.environ.clear()
        os.environ.update(environ)
    beat = heartbeat.start(rank, heartbeat.ControlDir(control_path))
    env = DistEnv(rank=rank, world_size=world_size, master_addr=addr, master_port=ports[0],
                  rpc_port=ports[1], launcher="spawn", local_rank=rank,
                  scratch_dir=control_path, store_listener=store_listener)
    try:
        worker_fn(env, *args)
    except BaseException as exc:  # recorded for the launcher, which reports it
        beat.record(exc)
        _exit_now(1)
    _exit_now(0)


def _exit_now(code: int) -> None:
    """End this worker now, beating to the last: its work is done (or recorded as failed),
    and the interpreter's own exit — joining threads, running finalizers and C++
    destructors (RPC agents, gloo) — can block without using CPU for longer than the
    heartbeat timeout, so the launcher would judge a finished worker hung (a run that
    had finished would fail)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(Exception):
            handler.flush()
    os._exit(code)


def _release_fork_server() -> None:
    """Close this worker's copy of the fork server's liveness pipe. multiprocessing hands
    it to every forked child (so that a child could fork through the server too); held by
    the workers, it would keep the server — and with it the workers — alive after the
    launcher died."""

    server = forkserver._forkserver  # private: there is no public way to let go of it
    if server._forkserver_alive_fd is not None:
        with contextlib.suppress(OSError):
            os.close(server._forkserver_alive_fd)
        server._forkserver_alive_fd = None


def _run_external(worker_fn: Callable, env: DistEnv, args: tuple) -> None:
    """This process is one worker of a torchrun/srun launch."""
    quiet_known_warnings()
    dump_stacks_on(STACKS_SIGNAL)
    beat = heartbeat.start(env.rank)
    try:
        worker_fn(env, *args)
    except Exception as exc:
        raise WorkerFailed(beat.blame(exc).message) from exc
    else:
        beat.stop_watching(done=True)
    finally:
        beat.stop_watching(done=False)
        beat.stop()


#: The signal on which a worker writes every thread's Python stack to its stderr (the
#: run's log): the launcher sends it to a hung worker, or after a timeout to every live
#: worker, before it stops the run.
STACKS_SIGNAL = signal.SIGUSR1
#: How long the launcher gives each worker to write its stacks.
STACKS_WAIT_S = 0.3
#: A failure whose message says something timed out (an RPC, a collective): the peer it
#: waited for is alive, so every live worker's stacks show where each one was.
TIMED_OUT = re.compile(r"(?i)\btime(d)?[ -]?out\b")


def dump_stacks_on(signum: int) -> None:
    """Write every thread's stack to stderr on ``signum``. faulthandler writes from the
    signal handler itself, without the GIL, so a worker hung holding it still answers."""
    with contextlib.suppress(ValueError, OSError, AttributeError, RuntimeError):
        faulthandler.register(signum, file=sys.stderr, all_threads=True)


def _dump_stacks(failure: heartbeat.Failure, procs: list) -> str:
    """Have the workers that can tell why the run is stuck write their threads' Python
    stacks to the log, each after a header naming it: a hung worker, or every live one
    after a timeout. What to add to the run's error ("" when none was asked)."""
    if failure.silent_pid:
        targets = [(failure.rank, failure.silent_pid)]
    elif TIMED_OUT.search(failure.message):
        targets = [(rank, p.pid) for rank, p in enumerate(procs)
                   if p.pid is not None and p.exitcode is None]
    else:
        return ""
    asked = False
    for rank, pid in targets:
        print(f"commgnn: {heartbeat.who(rank, pid)}: its threads' Python stacks",
              file=sys.stderr, flush=True)
        try:
            os.kill(pid, STACKS_SIGNAL)
        except OSError:  # it exited meanwhile
            continue
        asked = True
        time.sleep(STACKS_WAIT_S)
    if not asked:
        return ""
    whose = "its threads'" if failure.silent_pid else "the live workers'"
    return f" ({whose} Python stacks are in the log above)"


def _stop(procs: list) -> None:
    """Kill every live child (a stopped one too) and reap it."""
    procs = [p for p in procs if p.pid is not None]
    for proc in procs:
        if proc.exitcode is None:
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signal.SIGKILL)
    for proc in procs:
        proc.join(timeout=10)


#: Once a failure is seen, how long to let its cause surface (a killed worker's sockets
#: close before its exit is visible, so a peer's error can be seen first).
SETTLE_S = 1.0


def _watch(procs: list, control: heartbeat.ControlDir) -> heartbeat.Failure | None:
    """Wait until every child exits cleanly (None) or fails: then the first failure."""
    interval, timeout = heartbeat.settings()
    judge = heartbeat.Judge(control, [p.pid for p in procs], timeout,
                            suspect_after=max(3 * interval, 2.0))
    settled_at, failure = None, None
    while True:
        codes = [p.exitcode for p in procs]
        if all(code == 0 for code in codes):
            return None
        # Once seen, a failure stands (a silent worker that beats again within the settle
        # time still failed); an earlier one seen while settling replaces it.
        failure = judge.failure(codes) or failure
        now = time.monotonic()
        if failure is not None and settled_at is None:
            settled_at = now + SETTLE_S
        if settled_at is not None and now >= settled_at:
            return failure
        running = [p.sentinel for p, code in zip(procs, codes, strict=True) if code is None]
        wait = min(0.5, interval / 2) if settled_at is None else min(0.2, settled_at - now)
        multiprocessing.connection.wait(running, timeout=max(wait, 0.01))


#: How local workers start: ``forkserver`` (default: forked from one server process that
#: imported :data:`PRELOAD` once, for every worker of every run this process launches) or
#: ``spawn`` (each worker a fresh interpreter importing everything itself).
START_METHOD_ENV = "COMMGNN_WORKER_START"
START_METHODS = ("forkserver", "spawn")
#: What the fork server imports before forking any worker: torch and what DDP pulls in on
#: construction (``torch._dynamo``, ~1.5 s), the RPC agent, the worker's own module.
PRELOAD = ("torch", "torch.distributed.rpc", "torch._dynamo.utils", "numpy")


def worker_context(module: str | None = None):
    """The multiprocessing context local workers start from (:data:`START_METHOD_ENV`),
    the fork server preloading :data:`PRELOAD` and ``module`` (a commgnn one) — preloads
    take effect only before this process's fork server first starts; anything else a
    worker imports itself. A worker never inherits the launcher's threads (a fork server is a fresh
    interpreter), and takes the launcher's environment as it is at launch (what torch reads
    when it is imported, e.g. ``TORCH_CPP_LOG_LEVEL``, is the fork server's: the
    launcher's when the server started)."""
    method = os.environ.get(START_METHOD_ENV, "forkserver")
    if method not in START_METHODS:
        raise HostError(f"{START_METHOD_ENV}: {method!r} is not one of {list(START_METHODS)}")
    ctx = mp.get_context(method)
    if method == "forkserver":
        own = [module] if module and module.startswith("commgnn.") else []
        ctx.set_forkserver_preload([*PRELOAD, *own])
    return ctx


def prestart_fork_server(module: str | None = None) -> None:
    """Start the fork server now (its imports overlap whatever this process does before
    :func:`launch`); a no-op with the spawn start method."""
    if worker_context(module).get_start_method() == "forkserver":
        _fork_server_pid()


def _fork_server_pid() -> int:
    """This process's fork server (started if it is not running)."""

    forkserver.ensure_running()
    return forkserver._forkserver._forkserver_pid  # private: no public accessor


def launch(worker_fn: Callable, args: tuple, world_size: int, master_addr: str = "127.0.0.1",
           master_port: int = 0,
           on_start: Callable[[list[int]], None] | None = None) -> None:
    """Run ``worker_fn(env, *args)`` on ``world_size`` workers and wait for all of them.

    Under torchrun/srun this process *is* one worker. Otherwise ``world_size`` processes
    are spawned here, rendezvousing on ``master_port`` (c10d; 0: a port the kernel picks),
    which this process binds before any worker starts and hands to worker 0 (a port in use
    fails here, naming it); ``on_start`` receives their pids.
    Raises :class:`WorkerFailed` naming the first worker that failed.
    """
    heartbeat.settings()  # a bad setting fails here, before any worker starts
    env = external_env(master_port)
    if env is not None:
        if env.world_size != world_size:
            raise WorkerFailed(f"launcher gives {env.world_size} workers but the run needs "
                               f"{world_size} (one per partition)")
        _run_external(worker_fn, env, args)
        return
    ctx = worker_context(worker_fn.__module__)  # a bad start method fails before any work
    parent = os.getpid()
    if ctx.get_start_method() == "forkserver":  # the workers' parent is the server
        parent = _fork_server_pid()
    # The store's port is held from its choice on (see listen); the RPC port is nominal
    # (RPC rendezvouses through the store), as under torchrun and srun.
    listener = listen(master_addr, master_port, world_size)
    port = listener.getsockname()[1]
    ports = [port, port + 1]
    control = heartbeat.ControlDir.create()
    procs = [ctx.Process(target=_local_entry, name=f"commgnn-worker-{rank}",
                         args=(rank, worker_fn, args, world_size, master_addr, ports,
                               str(control.path), parent, dict(os.environ),
                               listener if rank == 0 else None))
             for rank in range(world_size)]

    def stop_children(signum, _frame):
        _stop(procs)
        raise WorkerFailed(f"launcher received signal {signal.Signals(signum).name}; "
                           "stopped all workers")

    previous = {s: signal.signal(s, stop_children) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        for proc in procs:
            proc.start()
        listener.close()  # worker 0 holds its own copy
        if on_start is not None:
            on_start([p.pid for p in procs])
        failure = _watch(procs, control)
        if failure is not None:
            stacks = _dump_stacks(failure, procs)
            _stop(procs)
            cause = WorkerTraceback(failure.detail) if failure.detail else None
            raise WorkerFailed(f"{failure.message}; stopped the other workers{stacks}") \
                from cause
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        listener.close()
        _stop(procs)
        control.remove()


def worker_threads(workers: int) -> int:
    """Intra-op threads of one worker: the CPUs SLURM gave its task, else an equal share of
    this machine's CPUs."""
    if os.environ.get("SLURM_CPUS_PER_TASK", "").isdigit():
        return max(1, int(os.environ["SLURM_CPUS_PER_TASK"]))
    return max(1, (os.cpu_count() or 1) // max(1, workers))
