"""Per-machine NICs: one egress and one ingress link per emulated machine, shared by every
thread and process on it.

Each link is a *calendar*: the intervals (``time.monotonic``, one clock for every process
of the host) for which it is reserved. A transfer of ``s`` serialisation seconds from
machine ``a`` to ``b`` takes the earliest interval of length ``s``, from the moment it
asks on, in which both ``a``'s egress and ``b``'s ingress are free, and reserves it on
both::

    start  = earliest t >= asked with [t, t + s) free on egress[a] and on ingress[b]
    finish = start + s

so concurrent transfers through a link share its bandwidth: two equal transfers that
start together finish after twice the time of one. A gap one link leaves while the
other end of its transfer is busy stays usable by any transfer that fits it (a switch's
flows fill it); with one "free at" time a link (before the testbed's "congestion v3") a
chunk waiting for a busy ingress held its egress idle too. ``benchmarks/nic_patterns.py``
measures the makespans against the ideal fair share: a ring 1.00x, a 4-machine
all-to-all of requests 1.20x with the owners asked at once (1.78x with one "free at"
time), 1.29x with each worker taking the owners :func:`in_turn`. A transfer is reserved
in chunks (at most :data:`MAX_CHUNKS`, at least :data:`CHUNK_BYTES` each), the next
chunk reserved when half of the current one has passed; concurrent transfers therefore
interleave chunk by chunk (as flows on a real NIC do) instead of queueing whole, and a
transfer alone runs back to back with no gaps. A link holds at most
:data:`CALENDAR_SLOTS` future intervals (touching ones are joined); a full calendar joins
its two closest intervals, giving up the gap between them.

The calendars live in one small file (``/dev/shm`` where present), memory-mapped by every
process of a run and guarded by ``flock`` across processes and a lock across threads,
so trainers, prefetchers, cache builders, RPC responses and the all-reduce of all
workers on the host queue on the same links. Without a path the calendars are private to
the process (unit tests, single-process use).
"""

from __future__ import annotations

import contextlib
import fcntl
import mmap
import os
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

#: Smallest chunk a transfer is reserved in (bytes), and the most chunks per transfer.
CHUNK_BYTES = 64 * 1024
MAX_CHUNKS = 64
#: The most future intervals a link's calendar holds.
CALENDAR_SLOTS = 256
#: Gaps shorter than this (seconds) are not kept: the reservations around them are joined.
MIN_GAP_S = 1e-7


def in_turn(rank: int, peers) -> list[int]:
    """``peers`` in the order worker ``rank`` charges what it receives from (or sends to)
    them one after another: the ones above ``rank`` first, ascending, then the ones below.
    When every worker of an all-to-all takes its peers in this order, each round is a
    permutation (round ``k``: ``rank`` with ``rank + k`` mod P) and no machine's link serves
    two workers at once; in plain ascending order every worker starts with the same peer
    and its egress carries them all (``benchmarks/nic_patterns.py``: 2.2x the ideal
    makespan of a 4-machine all-to-all, against 1.3x in turn)."""
    return sorted((int(p) for p in peers), key=lambda p: (p <= rank, p))


def clock_file(tag: str) -> Path:
    """Where the NIC clocks of a run tagged ``tag`` live (``/dev/shm`` if present)."""
    root = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    return root / f"commgnn-nic-{tag}"


class NicClocks:
    """The reservation calendars of every machine's egress and ingress link (see module
    doc). Link ``2 m`` is machine ``m``'s egress, ``2 m + 1`` its ingress; each holds a
    count and up to :data:`CALENDAR_SLOTS` sorted, disjoint ``[start, end)`` intervals."""

    def __init__(self, machines: int, path: str | os.PathLike[str] | None = None) -> None:
        self.machines = int(machines)
        self.path = Path(path) if path is not None else None
        self._thread_lock = threading.Lock()
        links = 2 * self.machines
        floats = links * (1 + 2 * CALENDAR_SLOTS)
        if self.path is None:
            self._fd = None
            self._map = None
            flat = np.zeros(floats, dtype=np.float64)
        else:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            with self._file_lock():
                if os.fstat(self._fd).st_size < floats * 8:
                    os.ftruncate(self._fd, floats * 8)  # new bytes are zeros: links free
            self._map = mmap.mmap(self._fd, floats * 8)
            flat = np.frombuffer(self._map, dtype=np.float64, count=floats)
        self._count = flat[:links]  # intervals held, as floats (one array, one file)
        self._slots = flat[links:].reshape(links, CALENDAR_SLOTS, 2)

    @contextlib.contextmanager
    def _file_lock(self):
        if self._fd is None:
            yield
            return
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def reserve(self, src: int, dst: int, seconds: float, not_before: float) -> float:
        """Occupy ``src``'s egress and ``dst``'s ingress for ``seconds`` from the earliest
        moment (not before ``not_before``) both are free that long; return the finish time."""
        horizon = min(time.monotonic(), not_before)  # what ended before it has passed
        with self._thread_lock, self._file_lock():
            egress, ingress = 2 * src, 2 * dst + 1
            busy = sorted(self._intervals(egress, horizon) + self._intervals(ingress, horizon))
            start = not_before
            for b_start, b_end in busy:
                if b_start >= start + seconds:
                    break
                start = max(start, b_end)
            finish = start + seconds
            self._book(egress, horizon, start, finish)
            self._book(ingress, horizon, start, finish)
        return finish

    def busy_until(self, link: int) -> float:
        """The end of ``link``'s last reservation (0 when it has none)."""
        n = int(self._count[link])
        return float(self._slots[link, n - 1, 1]) if n else 0.0

    def _intervals(self, link: int, now: float) -> list[tuple[float, float]]:
        held = self._slots[link, : int(self._count[link])]
        return [tuple(iv) for iv in held[held[:, 1] > now].tolist()]

    def _book(self, link: int, now: float, start: float, finish: float) -> None:
        """Insert ``[start, finish)`` into ``link``'s calendar: drop what has passed, join
        touching intervals, and join the closest two when the calendar is full."""
        kept = self._intervals(link, now)
        kept.append((start, finish))
        kept.sort()
        joined: list[list[float]] = []
        for a, b in kept:
            if joined and a <= joined[-1][1] + MIN_GAP_S:
                joined[-1][1] = max(joined[-1][1], b)
            else:
                joined.append([a, b])
        while len(joined) > CALENDAR_SLOTS:
            gaps = [joined[i + 1][0] - joined[i][1] for i in range(len(joined) - 1)]
            i = int(np.argmin(gaps))
            joined[i][1] = joined[i + 1][1]
            del joined[i + 1]
        self._slots[link, : len(joined)] = joined
        self._count[link] = len(joined)

    def close(self) -> None:
        if self._map is not None:
            self._count = np.zeros(0)
            self._slots = np.zeros((0, CALENDAR_SLOTS, 2))
            self._map.close()
            self._map = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def unlink(self) -> None:
        """Close and remove the file (the run that created it does this at the end)."""
        self.close()
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()


def transfer(clocks: NicClocks, src: int, dst: int, nbytes: float, bytes_per_s: float,
             wait_until) -> tuple[float, float]:
    """Carry ``nbytes`` from machine ``src`` to ``dst`` at ``bytes_per_s`` through the shared
    links, really waiting (``wait_until(monotonic_deadline)``); returns the (monotonic) time
    the transfer asked for the links and the time it finished."""
    now = time.monotonic()
    if nbytes <= 0 or bytes_per_s == float("inf"):
        return now, now
    chunks = int(min(MAX_CHUNKS, max(1, -(-int(nbytes) // CHUNK_BYTES))))
    chunk_s = nbytes / bytes_per_s / chunks
    finish = now
    for k in range(chunks):
        finish = clocks.reserve(src, dst, chunk_s, finish if k else now)
        if k + 1 < chunks:
            wait_until(finish - chunk_s / 2)
    wait_until(finish)
    return now, finish
