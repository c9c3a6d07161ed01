"""A *target-machine* energy model: the energy a run would take on the papers' GPU cluster.

This is a model, not a measurement. The meters (NVML, RAPL, :mod:`~commgnn.energy.modelled`)
measure this host over *raw* wall time; runs here are time-dilated by f (the emulated
network is slowed by f so that raw times / f are the target cluster's times, DESIGN.md
"Network emulation"). GreenDyGNN's metric is the energy of the target cluster, where "idle
GPU power during stalls counts" (§II-B: datacenter GPUs "draw 40–80 W even when idle").
This model evaluates it in target time. Records name it ``"target-model"``
(:data:`TARGET_MODEL_NAME`) beside the measured ``energy_j`` and its meter.

One emulated machine (= one worker) is one GPU and one CPU package. Over an interval of
target length ``T`` in which the GPU computes for ``T_busy``, the worker initiates ``R``
RPCs carrying ``B`` payload bytes::

    E_gpu = gpu_idle_w · T + (gpu_busy_w − gpu_idle_w) · T_busy
    E_cpu = cpu_idle_w · T
            + (cpu_max_w − cpu_idle_w) / cpu_cores · (R · rpc_cpu_s + B / copy_bytes_per_s)
    E     = E_gpu + E_cpu

- ``gpu_idle_w · T``: the GPU's idle floor, drawn the whole interval — stalls (waiting for
  remote features, the all-reduce, cache fills, everything outside compute) cost this.
- ``(gpu_busy_w − gpu_idle_w) · T_busy``: the extra draw while it computes. The training
  loop takes ``T_busy = busy_s / f``: the step's forward/backward/optimiser time less the
  emulated transfers it blocked on inside the step (``step_comm_s``: the all-reduce,
  activations, migrations) and less the time
  it sat in the real collective waiting for a slower peer (``collective_wait_s``,
  :class:`commgnn.network.netem.CollectiveWait`), e.g. for the one fetching from a congested
  machine: the GPU idles through both.
- ``cpu_idle_w · T``: the CPU package's idle floor.
- The last term: the linear utilisation–power model's active part (as in
  :mod:`~commgnn.energy.modelled`), ``(P_max − P_idle)`` spread over ``cpu_cores`` cores,
  times the core-seconds the communication costs: a fixed ``rpc_cpu_s`` per RPC (GreenDyGNN
  §II-A's initiation cost: interrupts, kernel crossings, socket buffers, TCP/IP; both ends
  of the request together, charged to the initiator, so sums over workers count each RPC
  once) plus its payload copied and (de)serialised at ``copy_bytes_per_s`` per core.
  The traffic is every class the worker moves: feature and sampling RPCs (``R``, ``B`` from
  the batches and the systems' fills) and every other class its emulator carries —
  gradients, activations, computation graphs, migrations, shuffles — a message priced as
  an RPC's initiation and its bytes at the copy rate. Not modelled: the CPU work of the
  training itself (sampling, the Python loop), the same per step for every system that
  trains the same batches with the same model.

All constants are per emulated machine, overridable by the training config key
``energy_model`` (:meth:`TargetPowerModel.from_config`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

from commgnn.energy.modelled import DEFAULT_CPU_IDLE_W, DEFAULT_CPU_MAX_W, DEFAULT_GPU_IDLE_W

__all__ = ["TARGET_MODEL_NAME", "TargetEnergy", "TargetPowerModel"]

#: How records name this model (``energy_target_model.meter`` in ``summary.json``).
TARGET_MODEL_NAME = "target-model"


@dataclass(frozen=True)
class TargetEnergy:
    """Modelled joules of one interval on the target machine, by part."""

    gpu: float
    cpu: float

    @property
    def total(self) -> float:
        return self.gpu + self.cpu

    def __add__(self, other: TargetEnergy) -> TargetEnergy:
        return TargetEnergy(self.gpu + other.gpu, self.cpu + other.cpu)

    def as_dict(self, prefix: str = "energy_target") -> dict[str, float]:
        """``energy_target_j``, ``energy_target_gpu_j``, ``energy_target_cpu_j``."""
        return {f"{prefix}_j": self.total, f"{prefix}_gpu_j": self.gpu,
                f"{prefix}_cpu_j": self.cpu}


@dataclass(frozen=True)
class TargetPowerModel:
    """Power constants of one target machine (one worker: one GPU, one CPU package).

    Defaults:

    - ``gpu_idle_w`` = 60 W: mid-range of GreenDyGNN §II-B's 40–80 W idle draw
      (:data:`~commgnn.energy.modelled.DEFAULT_GPU_IDLE_W`).
    - ``gpu_busy_w`` = 250 W: the TDP of the NVIDIA P100 (PCIe) of GreenDyGNN's Chameleon
      cluster (§VI-A; the SXM2 part is 300 W). Drawn while computing: an upper bound, a
      small GNN keeps a GPU below its TDP.
    - ``cpu_idle_w`` = 40 W, ``cpu_max_w`` = 125 W: one server CPU package, idle and at TDP
      (:mod:`~commgnn.energy.modelled`'s constants; 125 W is e.g. a Xeon Gold 6126).
    - ``cpu_cores`` = 12: that package's cores (the Xeon Gold 6126 has 12); one busy core
      draws ``(cpu_max_w − cpu_idle_w) / cpu_cores`` ≈ 7.1 W.
    - ``rpc_cpu_s`` = 100 µs: CPU time of one RPC's initiation, both ends (a user-space
      RPC stack such as DGL's over kernel TCP: serialising the request, send/recv system
      calls, interrupts, protocol processing). Chosen so that, with ``copy_bytes_per_s``,
      initiation and payload cost the same at ≈1,000 rows of 128 float32 features
      (1000 · 512 B / 5 GB/s = 100 µs), GreenDyGNN Fig. 1's crossover; at tens to hundreds
      of rows initiation is then 90–99 % of an RPC's energy, as §II-A reports.
    - ``copy_bytes_per_s`` = 5 GB/s: payload bytes one core copies and (de)serialises per
      second (a memcpy-class rate; socket copies at both ends included).
    """

    gpu_idle_w: float = DEFAULT_GPU_IDLE_W
    gpu_busy_w: float = 250.0
    cpu_idle_w: float = DEFAULT_CPU_IDLE_W
    cpu_max_w: float = DEFAULT_CPU_MAX_W
    cpu_cores: int = 12
    rpc_cpu_s: float = 100e-6
    copy_bytes_per_s: float = 5e9

    def __post_init__(self) -> None:
        if not 0 <= self.gpu_idle_w <= self.gpu_busy_w:
            raise ValueError("energy_model: need 0 <= gpu_idle_w <= gpu_busy_w")
        if not 0 <= self.cpu_idle_w <= self.cpu_max_w:
            raise ValueError("energy_model: need 0 <= cpu_idle_w <= cpu_max_w")
        if self.cpu_cores < 1:
            raise ValueError("energy_model: cpu_cores must be >= 1")
        if self.rpc_cpu_s < 0:
            raise ValueError("energy_model: rpc_cpu_s must be >= 0")
        if self.copy_bytes_per_s <= 0:
            raise ValueError("energy_model: copy_bytes_per_s must be > 0")

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | None) -> TargetPowerModel:
        """The defaults, overridden by the keys of ``config`` (training ``energy_model``)."""
        config = dict(config or {})
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(config) - names)
        if unknown:
            raise ValueError(f"energy_model: unknown keys {unknown}; known: {sorted(names)}")
        return cls(**{k: int(v) if k == "cpu_cores" else float(v) for k, v in config.items()})

    @property
    def core_w(self) -> float:
        """Active power of one busy CPU core (W)."""
        return (self.cpu_max_w - self.cpu_idle_w) / self.cpu_cores

    def communication_cpu_s(self, rpcs: float, nbytes: float) -> float:
        """Core-seconds of CPU that ``rpcs`` RPCs carrying ``nbytes`` payload cost."""
        return rpcs * self.rpc_cpu_s + nbytes / self.copy_bytes_per_s

    def energy(self, interval_s: float, busy_s: float = 0.0, rpcs: float = 0,
               nbytes: float = 0) -> TargetEnergy:
        """Joules of an interval of ``interval_s`` *target* seconds in which the GPU computes
        for ``busy_s`` of them (clamped to [0, interval_s]) and ``rpcs`` RPCs carry
        ``nbytes`` payload bytes."""
        interval_s = max(0.0, float(interval_s))
        busy_s = min(max(0.0, float(busy_s)), interval_s)
        gpu = self.gpu_idle_w * interval_s + (self.gpu_busy_w - self.gpu_idle_w) * busy_s
        cpu = self.cpu_idle_w * interval_s + self.core_w * self.communication_cpu_s(rpcs,
                                                                                      nbytes)
        return TargetEnergy(gpu=gpu, cpu=cpu)

    def describe(self) -> dict[str, Any]:
        """The model's name and constants, for run records."""
        return {"meter": TARGET_MODEL_NAME, "modelled": True, **asdict(self)}
