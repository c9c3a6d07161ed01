"""GPU energy from NVML (``pynvml``, package ``nvidia-ml-py``).

Preferred: ``nvmlDeviceGetTotalEnergyConsumption`` (mJ since the driver loaded; Volta and
later) — the meter reports the increase since :meth:`start`. Where that is not supported the
meter samples ``nvmlDeviceGetPowerUsage`` (mW) in a background thread every
``sample_interval_s`` and integrates with the trapezoid rule (``mode == "power-sampling"``).
GreenDyGNN (§VI-A) reads "GPU energy via NVML".

NVML counts the whole GPU, not one process: workers sharing a GPU each see all of it, so
a meter made with ``share=k`` (k workers on its GPU, from the run's device plan) reports
``1/k`` of the device's energy over its own interval — an equal split, under which the k
workers' readings add up to the device's energy once (their epochs are aligned by the
loop's barriers).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Any

from commgnn.energy.base import EnergyMeter

__all__ = ["DEFAULT_SAMPLE_INTERVAL_S", "NvmlMeter", "nvml_available", "nvml_index"]

#: Power-sampling period when the total-energy counter is unsupported.
DEFAULT_SAMPLE_INTERVAL_S = 0.05


def _pynvml() -> Any:
    import pynvml  # deferred: imports pynvml

    return pynvml


def nvml_available() -> bool:
    """True when pynvml imports, NVML initialises and reports at least one device."""
    try:
        nv = _pynvml()
        nv.nvmlInit()
    except Exception:
        return False
    try:
        return nv.nvmlDeviceGetCount() > 0
    except Exception:
        return False
    finally:
        with contextlib.suppress(Exception):
            nv.nvmlShutdown()


def nvml_index(device: str | int | None) -> int | str:
    """NVML handle key for a torch device: an NVML index, or a ``GPU-…`` UUID.

    ``cuda:k`` is the k-th *visible* device; when ``CUDA_VISIBLE_DEVICES`` lists indices or
    UUIDs, the k-th entry is returned (NVML numbers all physical devices).
    """
    if device is None or device == "cuda":
        k = 0
    elif isinstance(device, int):
        k = device
    else:
        s = str(device)
        k = int(s.split(":", 1)[1]) if ":" in s else 0
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible:
        entries = [v.strip() for v in visible.split(",") if v.strip()]
        if k < len(entries):
            e = entries[k]
            return int(e) if e.isdigit() else e
    return k


class NvmlMeter(EnergyMeter):
    """Joules of one GPU from NVML (part ``"gpu"``)."""

    name = "nvml"
    modelled = False

    def __init__(
        self,
        device: str | int | None = "cuda:0",
        *,
        sample_interval_s: float = DEFAULT_SAMPLE_INTERVAL_S,
        use_total_energy: bool | None = None,
        share: int = 1,
    ) -> None:
        super().__init__()
        if share < 1:
            raise ValueError(f"share must be at least 1, not {share}")
        self.share = int(share)
        self._nv = _pynvml()
        self._nv.nvmlInit()
        key = nvml_index(device)
        if isinstance(key, str):
            self._handle = self._nv.nvmlDeviceGetHandleByUUID(key)
        else:
            self._handle = self._nv.nvmlDeviceGetHandleByIndex(key)
        self.device = device
        self.sample_interval_s = float(sample_interval_s)
        if use_total_energy is None:
            try:
                self._nv.nvmlDeviceGetTotalEnergyConsumption(self._handle)
                use_total_energy = True
            except Exception:
                use_total_energy = False
        self.mode = "total-energy" if use_total_energy else "power-sampling"
        self._lock = threading.Lock()
        self._e0_mj = 0
        self._acc_j = 0.0
        self._last_t = 0.0
        self._last_w = 0.0
        self._stop_evt = threading.Event()
        self._thread: threading.Thread | None = None
        self._shut = False

    def _power_w(self) -> float:
        return self._nv.nvmlDeviceGetPowerUsage(self._handle) / 1e3

    def _sample(self) -> None:
        w = self._power_w()
        now = time.perf_counter()
        with self._lock:
            self._acc_j += 0.5 * (w + self._last_w) * (now - self._last_t)
            self._last_t, self._last_w = now, w

    def _loop(self) -> None:
        while not self._stop_evt.wait(self.sample_interval_s):
            try:
                self._sample()
            except Exception:  # pragma: no cover - device lost
                return

    def _start(self) -> None:
        if self.mode == "total-energy":
            self._e0_mj = self._nv.nvmlDeviceGetTotalEnergyConsumption(self._handle)
            return
        with self._lock:
            self._acc_j = 0.0
            self._last_t, self._last_w = time.perf_counter(), self._power_w()
        self._stop_evt.clear()
        self._thread = threading.Thread(target=self._loop, name="nvml-power", daemon=True)
        self._thread.start()

    def _read_parts(self) -> dict[str, float]:
        if self.mode == "total-energy":
            mj = self._nv.nvmlDeviceGetTotalEnergyConsumption(self._handle)
            return {"gpu": max(0.0, (mj - self._e0_mj) / 1e3) / self.share}
        self._sample()
        with self._lock:
            return {"gpu": self._acc_j / self.share}

    def _stop(self) -> None:
        self._stop_evt.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
            self._thread = None
        if not self._shut:
            with contextlib.suppress(Exception):
                self._nv.nvmlShutdown()
            self._shut = True

    def describe(self) -> dict[str, Any]:
        return {"meter": self.name, "modelled": False, "device": str(self.device),
                "mode": self.mode, "share": self.share}
