"""CPU package energy from Linux powercap RAPL counters (``/sys/class/powercap``).

Each top-level zone ``intel-rapl:N`` (one per CPU package; AMD CPUs expose the same tree)
has ``energy_uj`` (a counter in µJ that wraps to 0 after ``max_energy_range_uj``) and
``name`` (``package-N``). A reading adds, per zone, the counter's increase since the previous
reading, correcting one wrap-around::

    delta = now - prev              if now >= prev
    delta = now + (max_range - prev)  otherwise

A wrap is only detected if readings are closer together than one full counter range
(~262 kJ, i.e. ~20 min at 200 W), so a background poller (``poll_interval_s``, default 5 s)
reads the counters regularly. Zones named ``psys`` (whole-platform, overlaps the packages)
are skipped; ``dram`` sub-zones (``intel-rapl:N:M`` named ``dram``) are added only with
``include_dram=True``. GreenDyGNN (§VI-A) reads "CPU energy via Intel RAPL".
"""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from commgnn.energy.base import EnergyMeter

__all__ = ["DEFAULT_RAPL_ROOT", "RaplMeter", "RaplZone", "rapl_available", "rapl_zones"]

DEFAULT_RAPL_ROOT = "/sys/class/powercap"
_TOP = re.compile(r"^intel-rapl:\d+$")
_SUB = re.compile(r"^intel-rapl:\d+:\d+$")


@dataclass(frozen=True)
class RaplZone:
    path: Path
    name: str
    max_energy_range_uj: int

    def read_uj(self) -> int:
        return int((self.path / "energy_uj").read_text().strip())


def _zone(path: Path) -> RaplZone | None:
    try:
        name = (path / "name").read_text().strip() if (path / "name").exists() else path.name
        max_range = int((path / "max_energy_range_uj").read_text().strip())
        int((path / "energy_uj").read_text().strip())  # readable?
    except (OSError, ValueError):
        return None
    return RaplZone(path, name, max_range)


def rapl_zones(root: str | os.PathLike[str] = DEFAULT_RAPL_ROOT, *,
               include_dram: bool = False) -> list[RaplZone]:
    """Readable RAPL zones under ``root``: packages (not ``psys``), optionally DRAM."""
    root = Path(root)
    try:
        entries = sorted(root.iterdir(), key=lambda p: p.name)
    except OSError:
        return []
    zones: list[RaplZone] = []
    for top in entries:
        if not _TOP.match(top.name):
            continue
        z = _zone(top)
        if z is None or z.name == "psys":
            continue
        zones.append(z)
        if include_dram:
            for sub in sorted(top.iterdir(), key=lambda p: p.name):
                if _SUB.match(sub.name):
                    zs = _zone(sub)
                    if zs is not None and zs.name == "dram":
                        zones.append(zs)
    return zones


def rapl_available(root: str | os.PathLike[str] = DEFAULT_RAPL_ROOT) -> bool:
    return bool(rapl_zones(root))


class RaplMeter(EnergyMeter):
    """Joules from RAPL counters (part ``"cpu"``), with wrap-around correction."""

    name = "rapl"
    modelled = False

    def __init__(
        self,
        root: str | os.PathLike[str] = DEFAULT_RAPL_ROOT,
        *,
        include_dram: bool = False,
        poll_interval_s: float | None = 5.0,
    ) -> None:
        super().__init__()
        self.root = Path(root)
        self.include_dram = include_dram
        self.poll_interval_s = poll_interval_s
        self.zones = rapl_zones(self.root, include_dram=include_dram)
        if not self.zones:
            raise RuntimeError(f"no readable RAPL zones under {self.root}")
        self._lock = threading.Lock()
        self._prev: list[int] = []
        self._acc_uj: list[int] = []
        self._wraps = 0
        self._stop_evt = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        with self._lock:
            for i, z in enumerate(self.zones):
                try:
                    now = z.read_uj()
                except (OSError, ValueError):  # transiently unreadable: catch up next time
                    continue
                prev = self._prev[i]
                if now >= prev:
                    delta = now - prev
                else:  # the counter wrapped past max_energy_range_uj
                    delta = now + (z.max_energy_range_uj - prev)
                    self._wraps += 1
                self._acc_uj[i] += delta
                self._prev[i] = now

    def _poll(self) -> None:
        assert self.poll_interval_s is not None
        while not self._stop_evt.wait(self.poll_interval_s):
            self._sample()

    def _start(self) -> None:
        with self._lock:
            self._prev = [z.read_uj() for z in self.zones]
            self._acc_uj = [0] * len(self.zones)
            self._wraps = 0
        self._stop_evt.clear()
        if self.poll_interval_s:
            self._thread = threading.Thread(target=self._poll, name="rapl-poll", daemon=True)
            self._thread.start()

    def _read_parts(self) -> dict[str, float]:
        self._sample()
        with self._lock:
            return {"cpu": sum(self._acc_uj) / 1e6}

    def read_zones(self) -> dict[str, float]:
        """Joules since start per zone (``package-0``, ``dram``, ...)."""
        self._sample()
        with self._lock:
            out: dict[str, float] = {}
            for z, uj in zip(self.zones, self._acc_uj, strict=True):
                key = z.name if z.name not in out else f"{z.name}@{z.path.name}"
                out[key] = uj / 1e6
            return out

    @property
    def wraps(self) -> int:
        """Number of wrap-arounds corrected since start."""
        return self._wraps

    def _stop(self) -> None:
        self._stop_evt.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
            self._thread = None

    def describe(self) -> dict[str, Any]:
        return {"meter": self.name, "modelled": False, "root": str(self.root),
                "zones": [z.path.name for z in self.zones]}
