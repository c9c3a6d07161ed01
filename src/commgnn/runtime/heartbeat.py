"""Worker liveness and failure records: which worker failed first, and how.

Every worker runs a heartbeat thread (:class:`Heartbeat`) from its start. A stopped
process, or one hung holding the GIL, stops all its threads (the thread needs the GIL),
so a heartbeat older than the timeout names it (a main thread deadlocked with the GIL
released keeps the heartbeat alive: the collective and RPC timeouts end that run); one
that still uses CPU (native code holding the GIL) is busy, and is failed only after
``BUSY_TIMEOUTS`` timeouts (where its ``/proc`` can be read). A worker that raises
records its own failure (rank, wall time, exception type, one-line message, traceback)
before it cleans up, so the earliest failure can be told apart from the ones it caused in
other workers.

* Spawned locally, the launcher and its workers share a :class:`ControlDir` (under
  ``/dev/shm``, never the run's own disk): each worker touches ``beat_w<r>`` every
  interval and writes ``failure_w<r>.json`` when it fails; the launcher judges
  (:class:`Judge`): the earliest record, a dead child (dated at its last heartbeat) or a
  silent one (stopped, hung), and ends the run.
* Under torchrun or srun no process sees every worker, so each worker also beats into
  the run's c10d store and watches its peers there (:class:`StoreWatch`): a peer silent
  for the timeout, or an unreachable store, ends this worker at once with a message
  naming the peer (srun ``--kill-on-bad-exit`` and torchrun's agent end the rest). A
  worker that raises a communication error waits up to the timeout for an earlier
  failure of a peer to blame (:meth:`Heartbeat.blame`).

Settings (environment): ``COMMGNN_HEARTBEAT_S`` (interval, default 1 s) and
``COMMGNN_HEARTBEAT_TIMEOUT_S`` (silence that fails a worker, default 10 s).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from commgnn.core.errors import CommgnnError, ConfigError, WorkerFailed
from commgnn.runtime.prefetch import PrefetchError

INTERVAL_ENV = "COMMGNN_HEARTBEAT_S"
TIMEOUT_ENV = "COMMGNN_HEARTBEAT_TIMEOUT_S"
DEFAULT_INTERVAL_S = 1.0
DEFAULT_TIMEOUT_S = 10.0
#: Exit status of a worker ended by its heartbeat thread (a peer or the store failed).
PEER_FAILED_EXIT = 2
DONE = "done"
CONTROL_PREFIX = "commgnn-ctl-"
LAUNCHER_FILE = "launcher.pid"
#: How a worker ended by its heartbeat thread says why (the CLI: ``commgnn train: error:``).
ERROR_PREFIX = "commgnn: error:"
#: A one-line failure in a run's log: a worker's or the command's.
ERROR_LINE = re.compile(r"^commgnn(?: [\w-]+)?: error: (.*)$", re.M)


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (a zombie counts as gone)."""
    if not os.path.isdir("/proc"):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        return True


def settings() -> tuple[float, float]:
    """``(interval, timeout)`` in seconds from the environment (ConfigError if bad)."""
    values = []
    for name, default in ((INTERVAL_ENV, DEFAULT_INTERVAL_S), (TIMEOUT_ENV, DEFAULT_TIMEOUT_S)):
        raw = os.environ.get(name, "")
        try:
            value = float(raw) if raw else default
        except ValueError:
            value = -1.0
        if not 0 < value < 1e6:
            raise ConfigError(f"{name}={raw!r}: not a positive number of seconds")
        values.append(value)
    interval, timeout = values
    if timeout < 2 * interval:
        raise ConfigError(f"{TIMEOUT_ENV}={timeout:g}: shorter than two heartbeats "
                          f"({INTERVAL_ENV}={interval:g})")
    return interval, timeout


# -- failures -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Failure:
    """One worker's failure: who, when (wall clock; a silent death: its last heartbeat),
    a one-line message naming it, its traceback when it raised, and the pid of a worker
    found stopped, or alive but silent, on this host."""

    rank: int
    time: float
    message: str
    detail: str = ""
    stopped_pid: int = 0
    silent_pid: int = 0

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str | bytes) -> Failure:
        data = json.loads(text)
        return cls(rank=int(data["rank"]), time=float(data["time"]),
                   message=str(data["message"]), detail=str(data.get("detail", "")),
                   stopped_pid=int(data.get("stopped_pid", 0)),
                   silent_pid=int(data.get("silent_pid", 0)))


def who(rank: int, pid: int | None = None, host: str | None = None) -> str:
    """``worker 1 (pid 123)``, ``worker 1 (pid 123 on node7)``."""
    where = " ".join(p for p in (f"pid {pid}" if pid else "", f"on {host}" if host else "") if p)
    return f"worker {rank} ({where})" if where else f"worker {rank}"


def _user_facing(exc: BaseException) -> bool:
    return isinstance(exc, CommgnnError) or (isinstance(exc, OSError) and bool(exc.errno))


def cause_of(exc: BaseException) -> BaseException:
    """The exception to report for ``exc``: the first user-facing one (bad input, a full
    disk …) along its ``__cause__`` chain, else the first that is not a prefetcher's
    wrapper (:class:`PrefetchError` names what failed, not why)."""
    chain, seen = [], set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__
    for candidate in chain:
        if _user_facing(candidate):
            return candidate
    return next((c for c in chain if not isinstance(c, PrefetchError)), chain[-1])


_SOURCE_PREFIX = re.compile(r"^\[[^\]]*\.(?:cc|cpp|h|hpp):\d+\]\s*")


def first_line(exc: BaseException) -> str:
    """``exc``'s message as one line (an RPC's remote error keeps the remote worker)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    if not lines:
        return repr(exc)
    if lines[0].startswith("On WorkerInfo(") and len(lines) > 1:
        return f"{lines[0]} {lines[1]}"
    return _SOURCE_PREFIX.sub("", lines[0])


def raised(rank: int, exc: BaseException) -> str:
    """``worker 0 raised BlockFileError: /path: truncated …`` (a WorkerFailed as is)."""
    cause = cause_of(exc)
    if isinstance(cause, WorkerFailed):
        return first_line(cause)
    return f"worker {rank} raised {type(cause).__name__}: {first_line(cause)}"


def failed_attempt_error(log: Path) -> str:
    """The error a failed attempt's log ends with: its first ``commgnn …: error:`` line (a
    worker's or the command's one-line cause), else its last line; says so when the log
    cannot be read."""
    try:
        text = Path(log).read_text(errors="replace")
    except OSError as exc:
        return f"(the failed attempt's log {log} could not be read: {exc.strerror})"
    found = ERROR_LINE.search(text)
    if found:
        return found.group(1).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else f"(the failed attempt's log {log} is empty)"


# -- local launcher: a shared directory ---------------------------------------------------
class ControlDir:
    """Heartbeat and failure files shared by a local launcher and its workers."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)

    @classmethod
    def create(cls) -> ControlDir:
        """A fresh directory in ``/dev/shm`` (else the temp dir): never the run's disk.
        It records the launcher's pid; directories of launchers that died without
        removing theirs (SIGKILL) are removed here."""
        shm = "/dev/shm"
        root = shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None
        cls.sweep(Path(root or tempfile.gettempdir()))
        control = cls(tempfile.mkdtemp(prefix=CONTROL_PREFIX, dir=root))
        (control.path / LAUNCHER_FILE).write_text(str(os.getpid()))
        return control

    @staticmethod
    def sweep(root: Path) -> None:
        """Remove the control directories under ``root`` whose launcher is gone."""
        for path in root.glob(f"{CONTROL_PREFIX}*"):
            try:
                pid = int((path / LAUNCHER_FILE).read_text())
            except (OSError, ValueError):
                continue  # being created, or not ours to judge
            if not alive(pid):
                shutil.rmtree(path, ignore_errors=True)

    def _beat_file(self, rank: int) -> Path:
        return self.path / f"beat_w{rank}"

    def _failure_file(self, rank: int) -> Path:
        return self.path / f"failure_w{rank}.json"

    def beat(self, rank: int) -> None:
        path = self._beat_file(rank)
        try:
            os.utime(path)
        except FileNotFoundError:
            path.touch()

    def last_beat(self, rank: int) -> float | None:
        """Wall time of ``rank``'s last heartbeat (None before its first)."""
        try:
            return self._beat_file(rank).stat().st_mtime
        except FileNotFoundError:
            return None

    def record(self, failure: Failure) -> None:
        """Write ``failure`` (atomically; the first record of a worker stays)."""
        path = self._failure_file(failure.rank)
        if path.exists():
            return
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(failure.to_json())
        os.replace(tmp, path)

    def failure(self, rank: int) -> Failure | None:
        try:
            return Failure.from_json(self._failure_file(rank).read_text())
        except (FileNotFoundError, ValueError, KeyError):
            return None

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


def proc_state(pid: int) -> str | None:
    """The one-letter state of ``pid`` in ``/proc`` (``T``: stopped), None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def cpu_ticks(pid: int) -> int | None:
    """CPU time (user + system, clock ticks) ``pid`` has used; None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12])


#: A worker that has not sent its first heartbeat (it is still importing and starting)
#: counts as silent since its launch only after this many heartbeat timeouts.
START_TIMEOUTS = 3

#: A silent worker that still computes (native code holding the GIL starves the
#: heartbeat thread) is failed only after this many heartbeat timeouts.
BUSY_TIMEOUTS = 6


class Progress:
    """Whether silent processes still compute: their CPU time grows between looks."""

    def __init__(self) -> None:
        self._ticks: dict[int, int | None] = {}

    def busy(self, pid: int) -> bool | None:
        """True if ``pid`` used CPU (or waited on a disk) since the last look, None on the
        first look."""
        now, before = cpu_ticks(pid), self._ticks.get(pid, -1)
        self._ticks[pid] = now
        if before == -1:
            return None
        return proc_state(pid) == "D" or (now is not None and before is not None
                                          and now > before)


def stop_signal(pid: int) -> str:
    """The signal that stopped child ``pid`` (``SIGSTOP``), or ``""`` if unknown (also when
    ``pid`` is not this process's child: a worker forked by the fork server)."""
    try:
        info = os.waitid(os.P_PID, pid, os.WSTOPPED | os.WNOHANG | os.WNOWAIT)
    except (ChildProcessError, OSError, AttributeError):
        return ""
    if info is None or info.si_code != os.CLD_STOPPED:
        return ""
    with contextlib.suppress(ValueError):
        return signal.Signals(info.si_status).name
    return ""


def silent(rank: int, pid: int, last: float, now: float, host: str | None = None,
           never_beat: bool = False) -> Failure:
    """The failure of a live worker whose last heartbeat was at ``last`` (``never_beat``:
    it was launched at ``last`` and has sent none)."""
    age = now - last
    local = host in (None, socket.gethostname())
    state = proc_state(pid) if local else "?"
    stopped = state in ("T", "t")
    if stopped:
        sig = stop_signal(pid)
        how = f"was stopped ({sig})" if sig else "was stopped"
    elif state in (None, "Z", "X"):
        how = "died"
    else:
        how = "is unresponsive" + (" (busy)" if state in ("R", "D") else "")
    hung = local and not stopped and state not in (None, "Z", "X")
    since = f"no heartbeat since it started {age:.1f} s ago" if never_beat else \
        f"no heartbeat for {age:.1f} s"
    return Failure(rank, last, f"{who(rank, pid, host)} {how}: {since}",
                   stopped_pid=pid if stopped else 0, silent_pid=pid if hung else 0)


def exited(rank: int, pid: int, code: int, last: float) -> Failure:
    """The failure of a worker that exited with ``code`` without a record."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        how = f"was killed by signal {name}"
    else:
        how = f"exited with code {code}"
    return Failure(rank, last, f"{who(rank, pid)} {how}")


class Judge:
    """The local launcher's view of its children: the first failure, if any.

    A failure record counts at its time; a child that died without one, or stopped
    beating for ``timeout``, counts at its last heartbeat. Once anything failed, a live
    child silent for ``suspect_after`` is a candidate too (a stopped worker whose peer
    timed out first), so the earliest failure wins, not the first noticed. A silent child
    that still uses CPU is busy, not hung: it fails after ``BUSY_TIMEOUTS`` timeouts. A
    child that never beat counts as silent since the launch after ``START_TIMEOUTS``.
    """

    def __init__(self, control: ControlDir, pids: list[int], timeout: float,
                 suspect_after: float) -> None:
        self.control, self.pids = control, pids
        self.timeout, self.suspect_after = timeout, suspect_after
        self.started = time.time()
        self._stopped_since: dict[int, float] = {}
        self._progress = Progress()

    def _silent_for(self, rank: int, last: float, now: float, limit: float) -> bool:
        """Whether ``rank``, silent since ``last``, counts as failed after ``limit`` s."""
        busy = self._progress.busy(self.pids[rank])
        if busy is None or (busy and now - last <= BUSY_TIMEOUTS * self.timeout):
            return False
        return now - last > limit

    def _last(self, rank: int, now: float) -> float | None:
        """Last sign of life: the heartbeat, else (before the first) the time it was
        first seen stopped; None when it is still starting."""
        beat = self.control.last_beat(rank)
        if beat is not None:
            return beat
        if proc_state(self.pids[rank]) in ("T", "t"):
            return self._stopped_since.setdefault(rank, now)
        self._stopped_since.pop(rank, None)
        return None

    def failure(self, exitcodes: list[int | None]) -> Failure | None:
        """The earliest failure among the children (``exitcodes``: None while running)."""
        now = time.time()
        found: list[Failure] = []
        quiet: dict[int, float] = {}
        starting: set[int] = set()
        for rank, code in enumerate(exitcodes):
            record = self.control.failure(rank)
            last = self._last(rank, now)
            if record is not None:
                found.append(record)
            elif code not in (None, 0):
                found.append(exited(rank, self.pids[rank], code, last or self.started))
            elif code is None and last is not None:
                quiet[rank] = last
            elif code is None and now - self.started > START_TIMEOUTS * self.timeout:
                quiet[rank] = self.started  # never beat: hung while it started
                starting.add(rank)
        silent_for = {r: self._silent_for(r, last, now, self.suspect_after)
                      for r, last in quiet.items()}

        def failure_of(rank: int) -> Failure:
            return silent(rank, self.pids[rank], quiet[rank], now, never_beat=rank in starting)

        found += [failure_of(r) for r, last in quiet.items()
                  if silent_for[r] and now - last > self.timeout]
        if not found:
            return None
        failed = {f.rank for f in found}
        found += [failure_of(r) for r in quiet if r not in failed and silent_for[r]]
        return min(found, key=lambda f: f.time)


# -- torchrun / srun: the c10d store ------------------------------------------------------
def bounded(fn, timeout: float, default=None):
    """``fn()``, or ``default`` if it raises or takes longer than ``timeout`` (a store
    call to a stopped server blocks for ever; the thread is left behind, daemonic)."""
    result = [default]

    def target() -> None:
        with contextlib.suppress(Exception):
            result[0] = fn()

    thread = threading.Thread(target=target, name="commgnn-store-call", daemon=True)
    thread.start()
    thread.join(timeout)
    return result[0]


class StoreWatch:
    """Beat into the run's c10d store and watch the peers' beats there, on a thread.

    ``store`` is this worker's own client connection to the store at ``address``, served
    by worker ``owner_rank`` (None: torchrun's agent). A store call to a stopped server
    never returns, so the heartbeat thread judges from the time of the last completed
    poll (:meth:`failure`), and names the worker serving it.
    """

    def __init__(self, store, rank: int, world_size: int, interval: float, timeout: float,
                 address: str, owner_rank: int | None) -> None:
        self.store, self.rank, self.world = store, rank, world_size
        self.interval, self.timeout = interval, timeout
        self.address, self.owner_rank = address, owner_rank
        self.host = socket.gethostname()
        self._progress = Progress()
        self._count = 0
        start = time.monotonic()
        self._seen: dict[int, tuple[bytes | None, float]] = {
            peer: (None, start) for peer in range(world_size) if peer != rank}
        self._last_ok = start
        self._error = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="commgnn-peers", daemon=True)

    def start(self) -> StoreWatch:
        self._thread.start()
        return self

    def stop(self, done: bool) -> None:
        """Stop watching; ``done``: tell the peers this worker finished (they stop
        watching it)."""
        self._stop.set()
        if done:
            bounded(lambda: self.beat(DONE), self.timeout)

    def _key(self, rank: int) -> str:
        return f"beat/{rank}"

    def beat(self, value: str | None = None) -> None:
        self._count += 1
        self.store.set(self._key(self.rank), value or json.dumps(
            {"pid": os.getpid(), "host": self.host, "n": self._count}))

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.beat()
                for peer, (value, _) in list(self._seen.items()):
                    if self.store.check([self._key(peer)]):
                        current = self.store.get(self._key(peer))
                        if current != value:
                            self._seen[peer] = (current, time.monotonic())
                self._last_ok = time.monotonic()
            except Exception as exc:  # the store stopped answering
                self._error = first_line(exc)
            self._stop.wait(self.interval)

    def failure(self) -> Failure | None:
        """A peer silent for the timeout, or the store itself; None while all is well."""
        if self._stop.is_set():
            return None
        now = time.monotonic()
        if now - self._last_ok > self.timeout:
            return self._store_failure(now)
        for peer, (value, since) in list(self._seen.items()):
            quiet = now - since
            if value == DONE.encode() or quiet <= self.timeout / 2:
                continue
            info = json.loads(value) if value else {}
            local = info and info.get("host") == self.host
            busy = self._progress.busy(int(info["pid"])) if local else False
            if quiet <= self.timeout or busy is None or \
                    (busy and quiet <= BUSY_TIMEOUTS * self.timeout):
                continue  # a peer on this host still computing is busy, not hung
            last = time.time() - quiet
            if not info:
                return Failure(peer, last, f"{who(peer)} is unresponsive: no heartbeat "
                               f"for {quiet:.1f} s (none since the rendezvous)")
            found = silent(peer, int(info["pid"]), last, last + quiet, host=info.get("host"))
            return self._serving(found) if peer == self.owner_rank else found
        return None

    def _serving(self, found: Failure) -> Failure:
        """``found`` (the store's server failed) saying what it serves."""
        return replace(found, message=f"{found.message}; it serves the rendezvous store at "
                                      f"{self.address}")

    def _store_failure(self, now: float) -> Failure:
        """The store has not answered since the last completed poll: its server failed."""
        quiet = now - self._last_ok
        last = time.time() - quiet
        why = self._error or f"no answer for {quiet:.1f} s"
        if self.owner_rank is None:
            return Failure(-1, last, f"the torchrun agent's store at {self.address} is "
                           f"unresponsive: {why}")
        value = self._seen.get(self.owner_rank, (None, 0.0))[0]
        info = json.loads(value) if value and value != DONE.encode() else {}
        if not info:
            return Failure(self.owner_rank, last, f"worker {self.owner_rank} (serving the "
                           f"rendezvous store at {self.address}) is unresponsive: {why}")
        return self._serving(silent(self.owner_rank, int(info["pid"]), last, last + quiet,
                                    host=info.get("host")))

    def record(self, failure: Failure) -> None:
        """Store ``failure`` (the first record of a worker stays)."""
        self.store.compare_set(f"failed/{failure.rank}", "", failure.to_json())

    def failures(self) -> list[Failure]:
        """The failures the workers recorded in the store so far."""
        found = []
        for peer in range(self.world):
            key = f"failed/{peer}"
            if self.store.check([key]):
                found.append(Failure.from_json(self.store.get(key)))
        return found


# -- the worker's side --------------------------------------------------------------------
class Heartbeat:
    """This worker's heartbeat thread and its failure record (one per worker process)."""

    def __init__(self, rank: int, control: ControlDir | None = None) -> None:
        self.rank = rank
        self.control = control
        self.interval, self.timeout = settings()
        self.watch: StoreWatch | None = None
        self.recorded: Failure | None = None
        self.scratch: list[Path] = []  # files this worker removes when a peer ends it
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="commgnn-heartbeat",
                                        daemon=True)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def watch_peers(self, watch: StoreWatch) -> None:
        """From now on also beat into the store and end this worker when a peer (or the
        store) falls silent."""
        self.watch = watch.start()

    def stop_watching(self, done: bool = True) -> None:
        """Stop watching the peers (before the final shutdown, when peers exit in turn);
        ``done`` tells them this worker finished."""
        watch, self.watch = self.watch, None
        if watch is not None:
            watch.stop(done)

    def stop(self) -> None:
        """Stop beating (a later :func:`start` in this process starts a new heartbeat)."""
        global _current
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.interval + 1)
        if _current is self:
            _current = None

    def _run(self) -> None:
        while True:
            if self.control is not None:
                with contextlib.suppress(OSError):
                    self.control.beat(self.rank)
            watch = self.watch
            failure = watch.failure() if watch is not None else None
            if failure is not None:
                self._end(failure)
            if self._stop.wait(self.interval):
                return

    def _end(self, failure: Failure) -> None:
        """A peer (or the store) failed: say so and end this worker now (its main thread
        may be blocked in a collective for minutes). A peer stopped on this host is
        killed first: a launcher's SIGTERM would wait for it (torchrun: 30 s)."""
        print(f"{ERROR_PREFIX} {failure.message}", file=sys.stderr, flush=True)
        if failure.stopped_pid and failure.rank != self.rank:
            with contextlib.suppress(OSError):
                os.kill(failure.stopped_pid, signal.SIGKILL)
        for path in self.scratch:
            with contextlib.suppress(OSError):
                path.unlink()
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os._exit(PEER_FAILED_EXIT)

    def record(self, exc: BaseException) -> Failure:
        """Record ``exc`` as this worker's failure (the first one stays) and return it."""
        with self._lock:
            if self.recorded is not None:
                return self.recorded
            detail = "".join(traceback.format_exception(exc))
            self.recorded = Failure(self.rank, time.time(), raised(self.rank, exc), detail)
        if self.control is not None:
            with contextlib.suppress(OSError):
                self.control.record(self.recorded)
        watch = self.watch
        if watch is not None:
            bounded(lambda: watch.record(self.recorded), self.interval)
        return self.recorded

    def blame(self, exc: BaseException) -> Failure:
        """The failure to report for ``exc`` under torchrun/srun: an earlier failure of a
        peer recorded in the store, waited for (up to the heartbeat timeout: a silent peer
        ends this worker from the heartbeat thread meanwhile) when ``exc`` is a
        communication error rather than this worker's own (bad input, a full disk)."""
        own = self.record(exc)
        watch = self.watch
        if watch is None:
            return own
        # a silent peer is named by the heartbeat thread within timeout + 3 intervals
        wait = 0.0 if _user_facing(cause_of(exc)) else self.timeout + 4 * self.interval + 1
        deadline = time.monotonic() + wait
        while True:
            found = bounded(watch.failures, self.interval, default=[])
            earlier = [f for f in found if f.rank != self.rank and f.time < own.time]
            if earlier:
                return min(earlier, key=lambda f: f.time)
            if time.monotonic() >= deadline:
                return own
            time.sleep(self.interval / 2)


_current: Heartbeat | None = None


def start(rank: int, control: ControlDir | None = None) -> Heartbeat:
    """Start this process's heartbeat (once; later calls return the running one)."""
    global _current
    if _current is None:
        _current = Heartbeat(rank, control).start()
    return _current


def current() -> Heartbeat | None:
    return _current


def record_failure(exc: BaseException) -> None:
    """Record ``exc`` as this worker's failure, if a heartbeat runs (else nothing)."""
    if _current is not None:
        _current.record(exc)
