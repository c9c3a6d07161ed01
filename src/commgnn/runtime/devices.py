"""The device plan: which device every worker trains on and how workers talk.

Decided in two steps, so that every worker reaches the same plan without a process group:

1. :func:`host_view` — each worker, before any group forms, looks at what it can use: the
   GPUs visible to it (``CUDA_VISIBLE_DEVICES``, or the ones SLURM bound to its task) by
   UUID (no CUDA context is made; nothing is looked at for ``device: cpu``), its host and
   its local rank.
2. :func:`plan_devices` — every worker publishes its view through the rendezvous store
   (:func:`agree`) and computes the plan from all of them, a pure function:

   - the workers of a host that see the same GPUs take them round-robin in local-rank
     order (so 4 workers and 1 GPU all use it; 4 workers and 2 GPUs use 0, 1, 0, 1; a
     task SLURM bound to its own GPU uses that one);
   - ``device: cpu``, or ``auto`` where any worker has no working GPU: every worker on the
     CPU — ``auto`` never fails where ``cpu`` would succeed, and a run never mixes devices;
   - ``device: cuda`` where a worker has no working GPU: a :class:`HostError` naming it;
   - every worker on a GPU of its own (no two on one physical GPU): ``exclusive`` — NCCL
     carries collectives and point-to-point, gloo the small CPU collectives;
   - some GPU shared by several workers (NCCL refuses two ranks on one device):
     ``shared`` — gloo carries every collective (it reduces CUDA tensors), and
     point-to-point tensors are staged through host memory (gloo's send/recv cannot read
     device memory: :func:`commgnn.runtime.p2p.exchange`).
3. :func:`confirm` — each worker tries its planned GPU (a tiny computation: an
   unsupported architecture or a full device fails here, not in the first step) and the
   outcomes are shared: a failure anywhere moves an ``auto`` run to the CPU, and is a
   HostError naming the worker under ``cuda``.

The plan is recorded in every run summary (:meth:`DevicePlan.describe`) and logged once at
the start (:meth:`DevicePlan.line`). Energy: NVML meters a whole GPU, so a worker sharing
its GPU with ``k - 1`` others is attributed ``1/k`` of the device's energy
(:meth:`DevicePlan.sharers`).
"""

from __future__ import annotations

import json
import os
import socket
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, TypeVar

from commgnn.core.errors import HostError

if TYPE_CHECKING:
    import torch
    import torch.distributed as dist

T = TypeVar("T")

DEVICE_SETTINGS = ("auto", "cpu", "cuda")
#: Backends for :func:`torch.distributed.init_process_group`, by mode.
BACKENDS = {"cpu": "gloo", "shared": "gloo", "exclusive": "cpu:gloo,cuda:nccl"}
#: How point-to-point tensors travel, by mode: handed to the backend as they are, or
#: copied to host memory before sending and back to the device after receiving.
P2P = {"cpu": "direct", "shared": "host", "exclusive": "direct"}


@dataclass(frozen=True)
class Gpu:
    """One GPU visible to a worker: its index there (``cuda:<index>``), its physical
    identity (UUID; two workers share a GPU exactly when their UUIDs match) and name."""

    index: int
    uuid: str
    name: str = ""


@dataclass(frozen=True)
class HostView:
    """What one worker sees before any group forms."""

    rank: int
    host: str
    local_rank: int
    setting: str  # training.device: auto | cpu | cuda
    gpus: tuple[Gpu, ...] = ()  # visible and working
    unusable: str = ""  # why visible GPUs do not work here (a failed probe), else ""

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> HostView:
        data = json.loads(text)
        return cls(**{**data, "gpus": tuple(Gpu(**g) for g in data["gpus"])})


@dataclass(frozen=True)
class DevicePlan:
    """Every worker's device and the run's communication paths."""

    setting: str
    mode: str  # cpu | exclusive | shared
    devices: tuple[str, ...]  # per rank: "cpu" or "cuda:<index>" (index on that worker)
    gpu_uuids: tuple[str, ...]  # per rank: the physical GPU, "" on the CPU
    gpu_names: tuple[str, ...]
    hosts: tuple[str, ...]
    reason: str = ""  # why auto chose the CPU, where it did
    backend: str = field(init=False)
    p2p: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "backend", BACKENDS[self.mode])
        object.__setattr__(self, "p2p", P2P[self.mode])

    @property
    def world_size(self) -> int:
        return len(self.devices)

    def device(self, rank: int) -> torch.device:
        import torch  # deferred: imports torch

        return torch.device(self.devices[rank])

    def sharers(self, rank: int) -> int:
        """How many workers train on ``rank``'s device (1 on the CPU: each has its own)."""
        if not self.gpu_uuids[rank]:
            return 1
        return sum(1 for h, u in zip(self.hosts, self.gpu_uuids, strict=True)
                   if (h, u) == (self.hosts[rank], self.gpu_uuids[rank]))

    @property
    def gpus_used(self) -> int:
        return len({(h, u) for h, u in zip(self.hosts, self.gpu_uuids, strict=True) if u})

    def describe(self) -> dict:
        """The plan as the run summary records it."""
        return {"setting": self.setting, "mode": self.mode, "backend": self.backend,
                "p2p": self.p2p, "devices": list(self.devices),
                "gpus": list(self.gpu_uuids), "gpu_names": list(self.gpu_names),
                "hosts": list(self.hosts),
                "sharers": [self.sharers(r) for r in range(self.world_size)],
                "gpus_used": self.gpus_used, "reason": self.reason}

    def line(self) -> str:
        """One line for the log: where the workers train and how they talk."""
        if self.mode == "cpu":
            why = f" ({self.reason})" if self.reason else ""
            return (f"device plan: {self.world_size} workers on the CPU{why}; "
                    f"backend {self.backend}")
        names = sorted({n for n in self.gpu_names if n})
        share = {"shared": "shared by several workers", "exclusive": "one per worker"}
        return (f"device plan: {self.world_size} workers on {self.gpus_used} GPU(s) "
                f"({', '.join(names) or 'unnamed'}), {share[self.mode]}; devices "
                f"{', '.join(self.devices)}; backend {self.backend}; point-to-point "
                f"{'staged through host memory' if self.p2p == 'host' else 'direct'}")


def plan_devices(views: Sequence[HostView]) -> DevicePlan:
    """The plan every worker computes from every worker's view (ranks 0 … P−1)."""
    views = sorted(views, key=lambda v: v.rank)
    if [v.rank for v in views] != list(range(len(views))):
        raise ValueError(f"views of ranks {[v.rank for v in views]}, not 0..{len(views) - 1}")
    settings = {v.setting for v in views}
    if len(settings) != 1 or (setting := settings.pop()) not in DEVICE_SETTINGS:
        raise ValueError(f"workers disagree on training.device: {sorted(settings)}")
    cpu = DevicePlan(setting, "cpu", ("cpu",) * len(views), ("",) * len(views),
                     ("",) * len(views), tuple(v.host for v in views))
    if setting == "cpu":
        return cpu
    without = [v for v in views if not v.gpus]
    if without:
        first = without[0]
        why = first.unusable or "no CUDA device visible"
        if setting == "cuda":
            raise HostError(f"training.device: 'cuda': worker {first.rank} on "
                            f"{first.host} has no usable GPU ({why})")
        return replace(cpu, reason=f"auto: worker {first.rank} on {first.host}: {why}")
    chosen = _round_robin(views)
    keys = [(v.host, g.uuid) for v, g in zip(views, chosen, strict=True)]
    mode = "exclusive" if len(set(keys)) == len(keys) else "shared"
    return DevicePlan(setting, mode, tuple(f"cuda:{g.index}" for g in chosen),
                      tuple(g.uuid for g in chosen), tuple(g.name for g in chosen),
                      tuple(v.host for v in views))


def _round_robin(views: Sequence[HostView]) -> list[Gpu]:
    """Each worker's GPU: the workers of a host that see the same GPUs take them in turn,
    in local-rank order."""
    groups: dict[tuple, list[HostView]] = defaultdict(list)
    for v in views:
        groups[(v.host, tuple(g.uuid for g in v.gpus))].append(v)
    chosen: dict[int, Gpu] = {}
    for members in groups.values():
        for i, v in enumerate(sorted(members, key=lambda m: (m.local_rank, m.rank))):
            chosen[v.rank] = v.gpus[i % len(v.gpus)]
    return [chosen[v.rank] for v in views]


def confirm(plan: DevicePlan, failures: Mapping[int, str]) -> DevicePlan:
    """The plan once every worker has tried its device: ``failures`` maps a rank to why
    its GPU did not compute. ``auto`` then trains every worker on the CPU; ``cuda`` is a
    HostError naming the worker."""
    if not failures or plan.mode == "cpu":
        return plan
    rank = min(failures)
    why = f"{plan.devices[rank]} ({plan.gpu_names[rank] or 'GPU'}) failed: {failures[rank]}"
    if plan.setting == "cuda":
        raise HostError(f"training.device: 'cuda': worker {rank} on {plan.hosts[rank]}: {why}")
    n = plan.world_size
    return DevicePlan(plan.setting, "cpu", ("cpu",) * n, ("",) * n, ("",) * n, plan.hosts,
                      reason=f"auto: worker {rank} on {plan.hosts[rank]}: {why}")


# -- what this worker sees -------------------------------------------------------------------
def visible_gpus() -> tuple[tuple[Gpu, ...], str]:
    """The GPUs torch sees here (already narrowed by ``CUDA_VISIBLE_DEVICES`` or SLURM's
    binding), and why there are none, where there are none. Creates no CUDA context."""
    import torch  # deferred: imports torch

    if not torch.cuda.is_available():
        return (), "no CUDA device visible" if torch.version.cuda else "torch has no CUDA"
    gpus, failures = [], []
    for index in range(torch.cuda.device_count()):
        try:
            props = torch.cuda.get_device_properties(index)
            gpus.append(Gpu(index, _uuid(props, index), props.name))
        except Exception as exc:  # a lost or unsupported device
            failures.append(f"cuda:{index}: {_first_line(exc)}")
    return tuple(gpus), "; ".join(failures)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _uuid(props, index: int) -> str:
    uuid = getattr(props, "uuid", None)
    if uuid:
        text = str(uuid)
        return text if text.startswith("GPU-") else f"GPU-{text}"
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
               if v.strip()]
    return f"visible-{visible[index]}" if index < len(visible) else f"index-{index}"


def try_device(device: str) -> str:
    """Why ``device`` cannot compute (a tiny computation on it), or "" where it can. Makes
    ``device`` this process's current CUDA device."""
    if not device.startswith("cuda"):
        return ""
    import torch  # deferred: imports torch

    try:
        torch.cuda.set_device(torch.device(device))
        one = torch.ones(1, device=device)
        if float((one + one).item()) != 2.0:
            return "1 + 1 != 2"
    except Exception as exc:  # no kernel image for this architecture, out of memory …
        return _first_line(exc)
    return ""


def host_view(rank: int, local_rank: int, setting: str) -> HostView:
    """This worker's view (no GPU is looked at for ``device: cpu``)."""
    if setting not in DEVICE_SETTINGS:
        raise HostError(f"training.device: {setting!r}: not one of {DEVICE_SETTINGS}")
    gpus, unusable = ((), "") if setting == "cpu" else visible_gpus()
    return HostView(rank, socket.gethostname(), local_rank, setting, gpus, unusable)


def agree(store: dist.Store, view: HostView, world_size: int,
          prefix: str = "device-plan") -> DevicePlan:
    """Publish ``view`` through ``store``, plan from every worker's, try this worker's
    device and agree on the outcome: the same plan on every worker. Raises HostError where
    ``device: cuda`` cannot be honoured."""
    store.set(f"{prefix}/view/{view.rank}", view.to_json())
    plan = plan_devices([HostView.from_json(_get(store, f"{prefix}/view/{rank}"))
                         for rank in range(world_size)])
    store.set(f"{prefix}/tried/{view.rank}", try_device(plan.devices[view.rank]))
    failures = {rank: why for rank in range(world_size)
                if (why := _get(store, f"{prefix}/tried/{rank}"))}
    return confirm(plan, failures)


def _get(store: dist.Store, key: str) -> str:
    return bytes(store.get(key)).decode()


def carry_device(fn: Callable[..., T]) -> Callable[..., T]:
    """``fn``, to run on a new thread with the calling thread's current CUDA device. A new
    thread starts on device 0, so a worker on ``cuda:1`` would otherwise make a context
    (and allocate) on GPU 0 from its prefetch and cache-building threads. ``fn`` itself
    where CUDA is not in use."""
    import torch  # deferred: imports torch

    if not torch.cuda.is_initialized():
        return fn
    device = torch.cuda.current_device()

    def on_device(*args, **kwargs) -> T:
        torch.cuda.set_device(device)
        return fn(*args, **kwargs)

    return on_device
