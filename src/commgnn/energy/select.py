"""Pick the best energy meter for a worker.

``select_meter(device)`` ("auto") measures each part with the best source available:

- GPU part (only when ``device`` is ``cuda[:k]``): NVML if pynvml initialises and sees a
  device, else the modelled GPU idle floor;
- CPU part: RAPL if ``<rapl_root>/intel-rapl:*`` is readable, else the modelled CPU.

One source → that meter (``"nvml"`` is never alone on a GPU run: the CPU part is always
added); two → a :class:`~commgnn.energy.base.CompositeMeter` named e.g. ``"nvml+rapl"``,
``"nvml+modelled"``, ``"modelled+rapl"``. On a CPU-only machine with no RAPL (this
workstation): ``"modelled"``. GreenDyGNN (§VI-A) sums NVML GPU and RAPL CPU energy per node.

``prefer`` forces one family — ``"nvml"`` (GPU only), ``"rapl"`` (CPU only) or
``"modelled"`` (CPU, plus the GPU floor on CUDA) — and falls back to "auto" with a warning
when it is unavailable. Every record carries the chosen meter's name.
"""

from __future__ import annotations

import logging
import os

from commgnn.energy.base import CompositeMeter, EnergyMeter
from commgnn.energy.modelled import ModelledMeter
from commgnn.energy.nvml import NvmlMeter, nvml_available
from commgnn.energy.rapl import DEFAULT_RAPL_ROOT, RaplMeter, rapl_available

__all__ = ["METER_CHOICES", "select_meter"]

log = logging.getLogger(__name__)

METER_CHOICES = ("auto", "nvml", "rapl", "modelled")


def _is_cuda(device: str | None) -> bool:
    return device is not None and str(device).startswith("cuda")


def select_meter(
    device: str = "cpu",
    prefer: str | None = None,
    *,
    rapl_root: str | os.PathLike[str] = DEFAULT_RAPL_ROOT,
    gpu_share: int = 1,
) -> EnergyMeter:
    """The meter for a worker on ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:1"``), unstarted;
    ``gpu_share``: how many workers train on that GPU (NVML's reading is split evenly)."""
    prefer = (prefer or "auto").lower()
    if prefer not in METER_CHOICES:
        raise ValueError(f"unknown meter {prefer!r}; choose from {METER_CHOICES}")
    gpu = _is_cuda(device)
    has_nvml = gpu and prefer in ("auto", "nvml") and nvml_available()
    has_rapl = prefer in ("auto", "rapl") and rapl_available(rapl_root)

    if prefer == "modelled":
        return ModelledMeter(include_gpu=gpu)
    if prefer == "nvml":
        if has_nvml:
            return NvmlMeter(device, share=gpu_share)
        log.warning("NVML unavailable for device %s; selecting automatically", device)
    if prefer == "rapl":
        if has_rapl:
            return RaplMeter(rapl_root)
        log.warning("RAPL unreadable under %s; selecting automatically", rapl_root)
    if prefer != "auto":
        return select_meter(device, "auto", rapl_root=rapl_root, gpu_share=gpu_share)

    meters: list[EnergyMeter] = []
    if gpu:
        meters.append(NvmlMeter(device, share=gpu_share) if has_nvml else
                      ModelledMeter(include_cpu=False, include_gpu=True))
    meters.append(RaplMeter(rapl_root) if has_rapl else ModelledMeter())
    if len(meters) == 2 and all(isinstance(m, ModelledMeter) for m in meters):
        return ModelledMeter(include_gpu=True)
    return meters[0] if len(meters) == 1 else CompositeMeter(meters)
