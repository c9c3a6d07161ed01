"""A *modelled* energy meter, for machines with neither NVML nor readable RAPL.

This is a model, not a measurement: its readings are labelled ``"modelled"`` everywhere.

CPU model (linear utilisation–power model, the usual first-order server power model; e.g.
Fan, Weber & Barroso, "Power provisioning for a warehouse-sized computer", ISCA 2007)::

    E_cpu = ∫ (P_idle + (P_max − P_idle) · u(t)) dt
          = P_idle · Δwall + (P_max − P_idle) · Σ min(Δcpu / cores, Δwall)

with ``u(t)`` this process's CPU utilisation over the cores it may run on,
``u = Δprocess_time / (Δwall · cores)`` clamped to [0, 1] on every interval between
readings (``time.process_time`` counts every thread of the process). Since
``∫ u dt = Δprocess_time / cores`` over any interval, each reading integrates exactly from
two clock readings: no sampler thread is needed.

Each worker process is treated as one emulated machine (the network emulator's premise):
every meter charges its own ``P_idle``, so P workers on one host model P machines.

``include_cpu=False`` drops the CPU term (used beside RAPL). Optional GPU term
(``include_gpu``): a constant ``gpu_idle_w`` per second of wall time. Without NVML the GPU's
utilisation is unknown, so this is its idle floor, a lower bound (GreenDyGNN §II-B:
datacenter GPUs "draw 40–80 W even when idle").
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

from commgnn.energy.base import EnergyMeter

__all__ = [
    "DEFAULT_CPU_IDLE_W",
    "DEFAULT_CPU_MAX_W",
    "DEFAULT_GPU_IDLE_W",
    "ModelledMeter",
    "available_cores",
]

#: Idle power of one CPU package of a two-socket server (W), model constant.
DEFAULT_CPU_IDLE_W = 40.0
#: Fully-loaded power of that package (W): the TDP of a typical server CPU (125 W, e.g.
#: Xeon Gold 6126; Grappa's Xeon Gold 6134M is 130 W). The papers do not name their CPUs.
DEFAULT_CPU_MAX_W = 125.0
#: Idle power of a datacenter GPU (W), mid-range of GreenDyGNN §II-B's 40–80 W.
DEFAULT_GPU_IDLE_W = 60.0


def available_cores() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - non-Linux
        return max(1, os.cpu_count() or 1)


class ModelledMeter(EnergyMeter):
    """Modelled joules (parts ``"cpu"`` and, with ``include_gpu``, ``"gpu"``)."""

    name = "modelled"
    modelled = True

    def __init__(
        self,
        *,
        cpu_idle_w: float = DEFAULT_CPU_IDLE_W,
        cpu_max_w: float = DEFAULT_CPU_MAX_W,
        cores: int | None = None,
        include_cpu: bool = True,
        include_gpu: bool = False,
        gpu_idle_w: float = DEFAULT_GPU_IDLE_W,
    ) -> None:
        super().__init__()
        if not (include_cpu or include_gpu):
            raise ValueError("model at least one of the CPU and the GPU")
        if not 0 <= cpu_idle_w <= cpu_max_w:
            raise ValueError("need 0 <= cpu_idle_w <= cpu_max_w")
        self.cpu_idle_w = float(cpu_idle_w)
        self.cpu_max_w = float(cpu_max_w)
        self.cores = int(cores) if cores else available_cores()
        self.include_cpu = bool(include_cpu)
        self.include_gpu = bool(include_gpu)
        self.gpu_idle_w = float(gpu_idle_w)
        self._lock = threading.Lock()
        self._wall = 0.0
        self._cpu = 0.0
        self._cpu_j = 0.0
        self._gpu_j = 0.0

    def _start(self) -> None:
        with self._lock:
            self._wall = time.perf_counter()
            self._cpu = time.process_time()
            self._cpu_j = 0.0
            self._gpu_j = 0.0

    def _advance(self) -> None:
        with self._lock:
            wall, cpu = time.perf_counter(), time.process_time()
            dw = max(0.0, wall - self._wall)
            dc = max(0.0, cpu - self._cpu)
            busy = min(dc / self.cores, dw)  # ∫u dt over this interval, u clamped to [0, 1]
            self._cpu_j += self.cpu_idle_w * dw + (self.cpu_max_w - self.cpu_idle_w) * busy
            if self.include_gpu:
                self._gpu_j += self.gpu_idle_w * dw
            self._wall, self._cpu = wall, cpu

    def _read_parts(self) -> dict[str, float]:
        self._advance()
        with self._lock:
            parts: dict[str, float] = {}
            if self.include_cpu:
                parts["cpu"] = self._cpu_j
            if self.include_gpu:
                parts["gpu"] = self._gpu_j
            return parts

    def describe(self) -> dict[str, Any]:
        d: dict[str, Any] = {"meter": self.name, "modelled": True}
        if self.include_cpu:
            d.update(cpu_idle_w=self.cpu_idle_w, cpu_max_w=self.cpu_max_w, cores=self.cores)
        if self.include_gpu:
            d["gpu_idle_w"] = self.gpu_idle_w
        return d
