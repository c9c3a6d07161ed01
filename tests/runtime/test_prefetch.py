"""The bounded background producer shared by the systems."""

from __future__ import annotations

import threading
import time

import pytest

from commgnn.runtime.prefetch import Prefetcher, PrefetchError


def test_items_arrive_in_order_and_staging_is_bounded():
    live = []
    lock = threading.Lock()

    def produce(i: int) -> int:
        with lock:
            live.append(i)
        return i * i

    with Prefetcher(produce, 20, depth=3, size_of=lambda _: 10) as pre:
        time.sleep(0.05)  # let it run ahead: it must stop at depth
        assert len(live) == 3
        got = []
        for _ in range(20):
            item, waited = pre.get()
            got.append(item)
            assert waited >= 0
    assert got == [i * i for i in range(20)]
    assert pre.max_staged_items == 3
    assert pre.max_staged_bytes == 30
    with pytest.raises(IndexError):
        pre.get()


def test_a_slow_producer_makes_the_consumer_wait_never_skip():
    def produce(i: int) -> int:
        time.sleep(0.02)
        return i

    with Prefetcher(produce, 5, depth=1) as pre:
        results = [pre.get() for _ in range(5)]
    assert [item for item, _ in results] == list(range(5))
    assert sum(waited for _, waited in results) >= 0.05


def test_errors_reach_the_consumer_with_their_cause():
    def produce(i: int) -> int:
        if i == 2:
            raise KeyError("block 2 is corrupt")
        return i

    with Prefetcher(produce, 5, depth=2, name="demo") as pre:
        assert pre.get()[0] == 0 and pre.get()[0] == 1
        with pytest.raises(PrefetchError, match="demo: producing item 2 failed") as info:
            pre.get()
    assert isinstance(info.value.__cause__, KeyError)


def test_close_stops_a_blocked_producer():
    pre = Prefetcher(lambda i: i, 1000, depth=2)
    pre.get()
    pre.close()
    assert not pre._thread.is_alive()
    with pytest.raises(ValueError):
        Prefetcher(lambda i: i, 3, depth=0)
