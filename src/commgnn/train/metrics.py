"""Metric records: per-step JSONL per worker, per-epoch rows, the run summary.

One schema for every system (DESIGN.md "Metrics"). Counts are exact; times are wall-clock.
``remote_bytes`` counts feature payload bytes (rows x feature_dim x 4); request ids are
charged by the network emulator but not counted here. ``energy_j`` is measured on this
host (raw time, the named meter); ``energy_target_*`` is the target-machine model
(``"target-model"``, :mod:`commgnn.energy.target`) in target time.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from commgnn.core.files import json_text


@dataclass
class StepRecord:
    epoch: int
    step: int
    worker: int
    sample_s: float
    fetch_wait_s: float
    compute_s: float
    sync_s: float
    step_s: float
    remote_rpcs: int
    remote_rows: int
    remote_bytes: int
    cache_hits: int
    cache_misses: int
    local_rows: int
    sampling_rpcs: int
    sampling_rows: int
    sampling_bytes: int
    allreduce_bytes: int
    allreduce_messages: int
    #: ``compute_s`` split: ``step_comm_s``, the emulated transfers the trainer blocked on
    #: inside the step (the all-reduce — ``sync_s`` —, activations, migrations …);
    #: ``collective_wait_s``, raw seconds idle in real collectives for its peers (the
    #: straggler wait; :class:`commgnn.network.netem.CollectiveWait`); ``busy_s``, the rest:
    #: the device computing.
    step_comm_s: float
    collective_wait_s: float
    busy_s: float
    #: Sends (an RPC's request and response once) and bytes this worker moved in the step
    #: beyond feature and sampling RPCs: gradients, activations, migrations, shuffles …
    #: (every class but fetch and sampling).
    moved_messages: int
    moved_bytes: int
    loss: float
    acc: float
    batch_size: int
    energy_j: float
    energy_meter: str
    #: The target-machine energy model (:mod:`commgnn.energy.target`) over this step's
    #: target time: ``step_s / f``, the GPU busy for ``busy_s / f``, ``remote_rpcs +
    #: sampling_rpcs + moved_messages`` initiations carrying ``remote_bytes +
    #: sampling_bytes + moved_bytes``.
    energy_target_j: float
    energy_target_gpu_j: float
    energy_target_cpu_j: float
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        data = asdict(self)
        data.update(data.pop("extra"))
        return json_text(data)  # strict: a NaN loss is written as null


class JsonlWriter:
    """Append-only JSON-lines file, flushed per record so a crash loses at most one."""

    def __init__(self, path: Path, keep_epochs_below: int | None = None) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        if keep_epochs_below is not None and path.exists():
            kept = [line for line in path.read_text().splitlines()
                    if line and json.loads(line)["epoch"] < keep_epochs_below]
            path.write_text("".join(line + "\n" for line in kept))
        elif path.exists():
            path.unlink()
        self._handle = open(path, "a")  # noqa: SIM115  (closed in close())

    def write(self, line: str) -> None:
        self._handle.write(line + "\n")
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()
