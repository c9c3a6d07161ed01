"""commgnn.energy: energy meters behind one interface (NVML, RAPL, modelled fallback).

Use :func:`select_meter` to get the best meter for a worker; every reading
(:meth:`EnergyMeter.record`) carries the meter's name and whether it is modelled.
"""

from commgnn.energy.base import CompositeMeter, EnergyMeter, EnergyRecord
from commgnn.energy.modelled import (
    DEFAULT_CPU_IDLE_W,
    DEFAULT_CPU_MAX_W,
    DEFAULT_GPU_IDLE_W,
    ModelledMeter,
)
from commgnn.energy.nvml import NvmlMeter, nvml_available
from commgnn.energy.rapl import DEFAULT_RAPL_ROOT, RaplMeter, rapl_available
from commgnn.energy.select import METER_CHOICES, select_meter

__all__ = [
    "DEFAULT_CPU_IDLE_W",
    "DEFAULT_CPU_MAX_W",
    "DEFAULT_GPU_IDLE_W",
    "DEFAULT_RAPL_ROOT",
    "METER_CHOICES",
    "CompositeMeter",
    "EnergyMeter",
    "EnergyRecord",
    "ModelledMeter",
    "NvmlMeter",
    "RaplMeter",
    "nvml_available",
    "rapl_available",
    "select_meter",
]
