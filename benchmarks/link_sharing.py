"""Link sharing on the emulated per-machine NICs: 1, 2 and 4 concurrent pulls of the same
size through one machine's ingress (threads of one process, and separate processes), as a
ratio to one pull alone. A NIC shared fairly gives 1, 2, 4.

    .venv/bin/python benchmarks/link_sharing.py > benchmarks/results/link_sharing.json
"""

from __future__ import annotations

import json
import multiprocessing as mp
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from commgnn.network.netem import NETWORK_PRESETS, NetworkEmulator
from commgnn.network.nic import NicClocks

PULL_BYTES = 125_000_000  # 100 ms at 10 Gb/s
REPEATS = 5


def _pull(emu: NetworkEmulator, owner: int) -> None:
    emu.charge_request(0, owner, 8 * 1000, PULL_BYTES)


def concurrent_makespan(work: Callable[[Any], None], args: list) -> float:
    """Seconds from starting ``work(a)`` for every ``a`` of ``args`` on threads released
    together until the last one ends."""
    barrier = threading.Barrier(len(args))

    def run(a: Any) -> None:
        barrier.wait()
        work(a)

    threads = [threading.Thread(target=run, args=(a,)) for a in args]
    t0 = time.monotonic()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return time.monotonic() - t0


def threads_makespan(k: int) -> float:
    emu = NetworkEmulator(k + 1, NETWORK_PRESETS["10gbe"])
    return concurrent_makespan(lambda owner: _pull(emu, owner), [o + 1 for o in range(k)])


def _process_pull(path: str, machines: int, owner: int, start_at: float, out) -> None:
    emu = NetworkEmulator(machines, NETWORK_PRESETS["10gbe"], nic=NicClocks(machines, path))
    while time.monotonic() < start_at:
        time.sleep(0.0005)
    _pull(emu, owner)
    out.put(time.monotonic() - start_at)


def processes_makespan(k: int) -> float:
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "nic")
        start_at = time.monotonic() + 3.0
        procs = [ctx.Process(target=_process_pull, args=(path, k + 1, o + 1, start_at, out))
                 for o in range(k)]
        for p in procs:
            p.start()
        finish = max(out.get(timeout=60) for _ in procs)
        for p in procs:
            p.join(timeout=60)
    return finish


def main() -> None:
    results = {"pull_bytes": PULL_BYTES, "link": "10gbe", "repeats": REPEATS, "rows": []}
    for mode, fn in (("threads", threads_makespan), ("processes", processes_makespan)):
        one = statistics.median(fn(1) for _ in range(REPEATS))
        for k in (1, 2, 4):
            runs = [fn(k) for _ in range(REPEATS)]
            results["rows"].append({"mode": mode, "concurrent_pulls": k,
                                    "makespan_s": statistics.median(runs),
                                    "ratio_to_one": statistics.median(runs) / one,
                                    "min_ratio": min(runs) / one, "max_ratio": max(runs) / one})
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
