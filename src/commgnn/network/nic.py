"""Per-machine NICs: one egress and one ingress link per emulated machine, shared by every
thread and process on it.

Each link is a *virtual clock*: the time (``time.monotonic``, one clock for every process
of the host) at which it is next free. A transfer of ``s`` serialisation seconds from
machine ``a`` to ``b`` starts when both ``a``'s egress and ``b``'s ingress are free and
occupies both until it finishes::

    start  = max(now, egress_free[a], ingress_free[b])
    finish = start + s          and   egress_free[a] = ingress_free[b] = finish

so concurrent transfers through a link share its bandwidth: two equal transfers that
start together finish after twice the time of one. A transfer is reserved in chunks (at
most :data:`MAX_CHUNKS`, at least :data:`CHUNK_BYTES` each), the next chunk reserved
when half of the current one has passed; concurrent transfers therefore interleave
chunk by chunk (as flows on a real NIC do) instead of queueing whole, and a transfer
alone runs back to back with no gaps.

The clocks live in one small file (``/dev/shm`` where present), memory-mapped by every
process of a run and guarded by ``flock`` across processes and a lock across threads,
so trainers, prefetchers, cache builders, RPC responses and the all-reduce of all
workers on the host queue on the same links. Without a path the clocks are private to
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


def clock_file(tag: str) -> Path:
    """Where the NIC clocks of a run tagged ``tag`` live (``/dev/shm`` if present)."""
    root = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path(tempfile.gettempdir())
    return root / f"commgnn-nic-{tag}"


class NicClocks:
    """``free_at`` times of every machine's egress and ingress link (see module doc)."""

    def __init__(self, machines: int, path: str | os.PathLike[str] | None = None) -> None:
        self.machines = int(machines)
        self.path = Path(path) if path is not None else None
        self._thread_lock = threading.Lock()
        size = 2 * self.machines * 8
        if self.path is None:
            self._fd = None
            self._map = None
            self._free = np.zeros(2 * self.machines, dtype=np.float64)
        else:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            with self._file_lock():
                if os.fstat(self._fd).st_size < size:
                    os.ftruncate(self._fd, size)  # new bytes are zeros: every link free
            self._map = mmap.mmap(self._fd, size)
            self._free = np.frombuffer(self._map, dtype=np.float64, count=2 * self.machines)

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
        """Occupy ``src``'s egress and ``dst``'s ingress for ``seconds`` from the first
        moment both are free (and not before ``not_before``); return the finish time."""
        with self._thread_lock, self._file_lock():
            egress, ingress = 2 * src, 2 * dst + 1
            start = max(not_before, float(self._free[egress]), float(self._free[ingress]))
            finish = start + seconds
            self._free[egress] = finish
            self._free[ingress] = finish
        return finish

    def close(self) -> None:
        if self._map is not None:
            self._free = np.zeros(0)
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
