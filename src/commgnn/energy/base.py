"""The energy-meter interface and a composite of meters.

Every meter has a ``name`` (``"nvml"``, ``"rapl"``, ``"modelled"``, or ``"a+b"`` for a
composite), a ``modelled`` flag (True when any part is a model, not a measurement), and
reports cumulative joules since :meth:`EnergyMeter.start`, split into parts (``"gpu"``,
``"cpu"``). :meth:`EnergyMeter.record` returns an :class:`EnergyRecord` that carries the
meter's name, so every result says which meter produced it.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CompositeMeter", "EnergyMeter", "EnergyRecord"]


@dataclass(frozen=True)
class EnergyRecord:
    """Energy since a meter's start: total joules, its parts, and which meter measured it."""

    joules: float
    meter: str
    modelled: bool
    wall_s: float
    parts: dict[str, float] = field(default_factory=dict)

    def as_dict(self, prefix: str = "energy") -> dict[str, Any]:
        """Flat record: ``energy_j``, ``energy_meter``, ``energy_modelled``, ``energy_wall_s``,
        ``energy_<part>_j``."""
        d: dict[str, Any] = {
            f"{prefix}_j": self.joules,
            f"{prefix}_meter": self.meter,
            f"{prefix}_modelled": self.modelled,
            f"{prefix}_wall_s": self.wall_s,
        }
        for k, v in sorted(self.parts.items()):
            d[f"{prefix}_{k}_j"] = v
        return d


class EnergyMeter(ABC):
    """Cumulative energy since :meth:`start`.

    Lifecycle: ``start()`` → any number of ``read_joules()`` (non-decreasing) → ``stop()``
    (returns the final joules; later reads return the same value). Usable as a context
    manager. Implementations are thread-safe for concurrent reads.
    """

    name: str = "abstract"
    modelled: bool = False

    def __init__(self) -> None:
        self._started = False
        self._stopped = False
        self._t_start = 0.0
        self._t_stop = 0.0
        self._final: dict[str, float] | None = None

    # -- subclass hooks ------------------------------------------------------------------
    @abstractmethod
    def _start(self) -> None:
        """Begin measuring (take the baseline, start any sampler)."""

    @abstractmethod
    def _read_parts(self) -> dict[str, float]:
        """Joules since start, per part (non-negative, non-decreasing)."""

    def _stop(self) -> None:
        """Release resources (threads, handles)."""

    # -- public API ----------------------------------------------------------------------
    def start(self) -> None:
        if self._started and not self._stopped:
            raise RuntimeError(f"{self.name} meter already started")
        self._stopped = False
        self._final = None
        self._t_start = time.perf_counter()
        self._start()
        self._started = True

    def read_parts(self) -> dict[str, float]:
        """Joules since start, split by part (``"cpu"``, ``"gpu"``)."""
        if not self._started:
            raise RuntimeError(f"{self.name} meter not started")
        if self._final is not None:
            return dict(self._final)
        return self._read_parts()

    def read_joules(self) -> float:
        """Total joules since start."""
        return float(sum(self.read_parts().values()))

    def stop(self) -> float:
        """Stop measuring; returns the final total joules."""
        if not self._started:
            raise RuntimeError(f"{self.name} meter not started")
        if self._final is None:
            self._final = self._read_parts()
            self._t_stop = time.perf_counter()
            self._stopped = True
            self._stop()
        return float(sum(self._final.values()))

    def wall_s(self) -> float:
        end = self._t_stop if self._stopped else time.perf_counter()
        return end - self._t_start if self._started else 0.0

    def record(self) -> EnergyRecord:
        parts = self.read_parts()
        return EnergyRecord(
            joules=float(sum(parts.values())),
            meter=self.name,
            modelled=self.modelled,
            wall_s=self.wall_s(),
            parts=parts,
        )

    def describe(self) -> dict[str, Any]:
        """The meter's settings, for run records."""
        return {"meter": self.name, "modelled": self.modelled}

    def __enter__(self) -> EnergyMeter:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._started and not self._stopped:
            self.stop()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class CompositeMeter(EnergyMeter):
    """Sum of several meters (e.g. NVML for the GPU + RAPL for the CPU); parts add up by key.

    Its name joins the parts' names with ``+`` (``"nvml+rapl"``, ``"nvml+modelled"``).
    """

    def __init__(self, meters: Sequence[EnergyMeter]) -> None:
        super().__init__()
        if not meters:
            raise ValueError("CompositeMeter needs at least one meter")
        self.meters = list(meters)
        self.name = "+".join(m.name for m in self.meters)
        self.modelled = any(m.modelled for m in self.meters)

    def _start(self) -> None:
        for m in self.meters:
            m.start()

    def _read_parts(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for m in self.meters:
            for k, v in m.read_parts().items():
                out[k] = out.get(k, 0.0) + v
        return out

    def _stop(self) -> None:
        for m in self.meters:
            m.stop()

    def describe(self) -> dict[str, Any]:
        return {"meter": self.name, "modelled": self.modelled,
                "parts": [m.describe() for m in self.meters]}
