"""Traffic patterns on the emulated per-machine NICs: four machines each pull the same bytes
as an all-to-all (a request to each of the three others, concurrently or one after another,
in ascending order, as the feature store charged them before 2026-12-07, or from the
next machine on, as it does now) or as a ring (one transfer to the next machine, as a model
migration hop does), as a makespan against the ideal fair share (each machine's bytes over
its link's rate). A NIC model that shares links as max-min fair flows gives 1 for every
pattern.

    .venv/bin/python benchmarks/nic_patterns.py > benchmarks/results/nic_patterns.json
"""

from __future__ import annotations

import json
import statistics
import threading
from collections.abc import Callable

from link_sharing import concurrent_makespan

from commgnn.network.netem import NETWORK_PRESETS, NetworkEmulator

MACHINES = 4
BYTES_PER_MACHINE = 300_000_000  # a DGL SAGE(16) step's fetch on uk-like at 1/4 (302 MB)
REQUEST_BYTES = 8 * 100_000  # the requested rows' ids
REPEATS = 5


def _makespan(work: Callable[[NetworkEmulator, int], None]) -> float:
    emu = NetworkEmulator(MACHINES, NETWORK_PRESETS["10gbe"])
    return concurrent_makespan(lambda machine: work(emu, machine), list(range(MACHINES)))


def _owners(machine: int) -> list[int]:
    return [o for o in range(MACHINES) if o != machine]


def all_to_all_concurrent(emu: NetworkEmulator, machine: int) -> None:
    share = BYTES_PER_MACHINE / (MACHINES - 1)
    pulls = [threading.Thread(target=emu.charge_request, args=(machine, o, REQUEST_BYTES, share))
             for o in _owners(machine)]
    for th in pulls:
        th.start()
    for th in pulls:
        th.join()


def all_to_all_sequential(emu: NetworkEmulator, machine: int) -> None:
    share = BYTES_PER_MACHINE / (MACHINES - 1)
    for o in _owners(machine):
        emu.charge_request(machine, o, REQUEST_BYTES, share)


def all_to_all_rotated(emu: NetworkEmulator, machine: int) -> None:
    share = BYTES_PER_MACHINE / (MACHINES - 1)
    for k in range(1, MACHINES):
        emu.charge_request(machine, (machine + k) % MACHINES, REQUEST_BYTES, share)


def ring(emu: NetworkEmulator, machine: int) -> None:
    emu.charge(machine, (machine + 1) % MACHINES, BYTES_PER_MACHINE)


def main() -> None:
    link = NETWORK_PRESETS["10gbe"]
    ideal = BYTES_PER_MACHINE / link.bandwidth_bytes_per_s
    results = {"machines": MACHINES, "bytes_per_machine": BYTES_PER_MACHINE, "link": "10gbe",
               "ideal_s": ideal, "repeats": REPEATS, "rows": []}
    for name, work in (("all-to-all, concurrent requests", all_to_all_concurrent),
                       ("all-to-all, one owner after another", all_to_all_sequential),
                       ("all-to-all, one owner after another from the next machine",
                        all_to_all_rotated),
                       ("ring", ring)):
        runs = [_makespan(work) for _ in range(REPEATS)]
        results["rows"].append({"pattern": name, "makespan_s": statistics.median(runs),
                                "ratio_to_ideal": statistics.median(runs) / ideal,
                                "min_ratio": min(runs) / ideal, "max_ratio": max(runs) / ideal})
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
