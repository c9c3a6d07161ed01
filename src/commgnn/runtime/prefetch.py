"""A bounded background producer: items ``0..count-1`` made in order on one thread.

:class:`Prefetcher` runs ``produce(i)`` for ``i = 0, 1, …`` on a background thread and
hands the results to the consumer in the same order. At most ``depth`` items are staged
(being produced, or produced and not yet taken), so memory is bounded by ``depth`` items.
What is produced never depends on timing: a consumer that outruns the producer waits
for the next item and the wait is reported (``get`` returns it), never skipped.

An exception in ``produce`` is re-raised in the consumer by :meth:`Prefetcher.get` as a
:class:`PrefetchError` whose ``__cause__`` is the original exception and whose message
names it (type and message): the failure reports show the cause, not the wrapper.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

from commgnn.runtime.devices import carry_device

T = TypeVar("T")


class PrefetchError(RuntimeError):
    """Producing a prefetched item failed (the original exception is the cause)."""


def describe_error(exc: BaseException) -> str:
    """``BlockFileError: /path: record 3: checksum mismatch`` (the first line)."""
    line = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
    return f"{type(exc).__name__}: {line}" if line else repr(exc)


class Prefetcher(Generic[T]):
    """Produce ``count`` items in order on a background thread, ``depth`` at most ahead.

    ``size_of(item)`` (optional) gives an item's bytes; :attr:`max_staged_bytes` is the
    most bytes staged at once. Use as a context manager or call :meth:`close`.
    """

    def __init__(self, produce: Callable[[int], T], count: int, depth: int, *,
                 name: str = "prefetch", size_of: Callable[[T], int] | None = None) -> None:
        if depth < 1:
            raise ValueError(f"prefetch depth must be >= 1, got {depth}")
        self.count = int(count)
        self.depth = int(depth)
        self._produce = produce
        self._size_of = size_of
        self._lock = threading.Condition()
        self._ready: deque[tuple[int, T, int]] = deque()
        self._in_flight = 0  # items being produced or waiting to be taken
        self._next_get = 0
        self._error: tuple[int, BaseException] | None = None
        self._stop = False
        self._staged_bytes = 0
        self.max_staged_bytes = 0
        self.max_staged_items = 0
        self._thread = threading.Thread(target=carry_device(self._run), name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        for index in range(self.count):
            with self._lock:
                while self._in_flight >= self.depth and not self._stop:
                    self._lock.wait()
                if self._stop:
                    return
                self._in_flight += 1
                self.max_staged_items = max(self.max_staged_items, self._in_flight)
            try:
                item = self._produce(index)
            except BaseException as exc:
                with self._lock:
                    self._error = (index, exc)
                    self._lock.notify_all()
                return
            nbytes = self._size_of(item) if self._size_of else 0
            with self._lock:
                self._ready.append((index, item, nbytes))
                self._staged_bytes += nbytes
                self.max_staged_bytes = max(self.max_staged_bytes, self._staged_bytes)
                self._lock.notify_all()

    def get(self) -> tuple[T, float]:
        """The next item in order, and the seconds spent waiting for it."""
        if self._next_get >= self.count:
            raise IndexError(f"all {self.count} items were taken")
        start = time.perf_counter()
        with self._lock:
            while not self._ready:
                if self._error is not None:
                    index, exc = self._error
                    raise PrefetchError(f"{self._thread.name}: producing item {index} "
                                        f"failed: {describe_error(exc)}") from exc
                if self._stop:
                    raise PrefetchError(f"{self._thread.name}: closed")
                self._lock.wait()
            index, item, nbytes = self._ready.popleft()
            assert index == self._next_get, (index, self._next_get)
            self._next_get += 1
            self._in_flight -= 1
            self._staged_bytes -= nbytes
            self._lock.notify_all()
        return item, time.perf_counter() - start

    def close(self) -> None:
        """Stop producing and wait for the thread (an item in production completes)."""
        with self._lock:
            self._stop = True
            self._lock.notify_all()
        self._thread.join()
        self._ready.clear()

    def __enter__(self) -> Prefetcher[T]:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
