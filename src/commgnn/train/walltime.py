"""Where a training run's wall time goes: host seconds (raw, never dilated) from the
launching process's start to the published summary, by phase.

Each worker stamps the wall clock (``time.time()``, so stamps compare across processes on
a host) as it passes each mark; a phase ends when the last worker passes its mark (the
next phase waits for every worker). Phases, in order:

==================  ======================================================================
``interpreter``     the launching process: interpreter start, imports, checking the spec
                    (under torchrun/srun, each task's own)
``workers_start``   starting the workers (fork or spawn, their imports)
``load``            dataset, partition and the system's input checks
``rendezvous``      process group and RPC
``prepare``         model, checkpoint, the system's setup, the time-dilation measurement
``epochs``          the epochs' own time (what ``mean_epoch_time_raw_s`` averages)
``evaluation``      validation and test accuracy
``records``         the rest: gathering records between epochs, checkpoints
==================  ======================================================================

Epochs and evaluation are the slowest worker's sums. Not counted: writing the summary and
tables after the last epoch, and the workers' and the launcher's exit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

#: The marks a worker stamps, in order (each ends the phase of the same position + 1).
MARKS = ("entry", "loaded", "joined", "ready", "done")
PHASES = ("interpreter", "workers_start", "load", "rendezvous", "prepare", "epochs",
          "evaluation", "records")
#: Summary keys: raw seconds per phase, the total, and the share outside the epochs.
KEYS = (*(f"wall_{p}_raw_s" for p in PHASES), "wall_total_raw_s", "wall_outside_epochs")


def process_start() -> float:
    """This process's creation time (wall clock, the kernel's 10 ms ticks)."""
    import psutil  # deferred: imports psutil

    return psutil.Process().create_time()


@dataclass
class WallClock:
    """One worker's stamps; ``started``: its launching process's start and launch time."""

    started: tuple[float, float]
    stamps: dict[str, float] = field(default_factory=dict)
    epochs_s: float = 0.0
    evaluation_s: float = 0.0

    def mark(self, name: str) -> None:
        if name not in MARKS:
            raise ValueError(f"unknown wall-clock mark {name!r}")
        self.stamps[name] = time.time()


def breakdown(clocks: list[WallClock]) -> dict[str, float]:
    """The run's phases from every worker's clock: each mark at its last worker, epochs and
    evaluation the slowest worker's sums."""
    at = {m: max(c.stamps[m] for c in clocks) for m in MARKS}
    process = min(c.started[0] for c in clocks)
    launch = max(c.started[1] for c in clocks)
    epochs_s = max(c.epochs_s for c in clocks)
    evaluation = max(c.evaluation_s for c in clocks)
    total = at["done"] - process
    phases = {
        "interpreter": launch - process,
        "workers_start": at["entry"] - launch,
        "load": at["loaded"] - at["entry"],
        "rendezvous": at["joined"] - at["loaded"],
        "prepare": at["ready"] - at["joined"],
        "epochs": epochs_s,
        "evaluation": evaluation,
        "records": at["done"] - at["ready"] - epochs_s - evaluation,
    }
    return {**{f"wall_{p}_raw_s": phases[p] for p in PHASES}, "wall_total_raw_s": total,
            "wall_outside_epochs": 1.0 - epochs_s / total if total > 0 else float("nan")}
