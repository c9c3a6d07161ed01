"""commgnn.energy: energy meters behind one interface (NVML, RAPL, modelled fallback).

Use :func:`select_meter` to get the best meter for a worker; every reading
(:meth:`EnergyMeter.record`) carries the meter's name and whether it is modelled.

Besides the meters (this host, raw time): :class:`TargetPowerModel`, the target-machine
energy model evaluated in target (dilated) time (``energy_target_*`` in run records).
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
from commgnn.energy.target import TARGET_MODEL_NAME, TargetEnergy, TargetPowerModel

__all__ = [
    "DEFAULT_CPU_IDLE_W",
    "DEFAULT_CPU_MAX_W",
    "DEFAULT_GPU_IDLE_W",
    "DEFAULT_RAPL_ROOT",
    "METER_CHOICES",
    "TARGET_MODEL_NAME",
    "CompositeMeter",
    "EnergyMeter",
    "EnergyRecord",
    "ModelledMeter",
    "NvmlMeter",
    "RaplMeter",
    "TargetEnergy",
    "TargetPowerModel",
    "nvml_available",
    "rapl_available",
    "select_meter",
]
