"""The device plan (commgnn.runtime.devices) for every combination of workers per host,
GPUs, ``training.device`` and SLURM GPU binding, with torch's CUDA calls faked."""

from __future__ import annotations

import itertools
import math
import threading
from types import SimpleNamespace

import pytest
import torch
import torch.distributed as dist

from commgnn.core.errors import HostError
from commgnn.runtime import devices as placement
from commgnn.runtime.devices import (
    DevicePlan,
    Gpu,
    HostView,
    agree,
    confirm,
    host_view,
    plan_devices,
    visible_gpus,
)


def gpu(host: str, k: int, index: int | None = None) -> Gpu:
    return Gpu(k if index is None else index, f"GPU-{host}-{k}", "H100")


def views(hosts: int, per_host: int, gpus: int, setting: str, binding: str) -> list[HostView]:
    """What each worker sees: ``binding`` is how SLURM (or the user) hands GPUs to tasks —
    ``none``: every task sees all of its host's GPUs; ``per-task``: each task sees only
    the GPU bound to it (``--gpus-per-task=1``, tasks ≤ GPUs), as ``cuda:0``; ``same``:
    every task is bound to the host's first GPU (``--gpus=1`` for the step)."""
    out = []
    for h, local in itertools.product(range(hosts), range(per_host)):
        host = f"node{h}"
        if gpus == 0:
            seen: tuple[Gpu, ...] = ()
        elif binding == "none":
            seen = tuple(gpu(host, k) for k in range(gpus))
        elif binding == "per-task":
            seen = (gpu(host, local, index=0),)
        else:
            seen = (gpu(host, 0),)
        out.append(HostView(h * per_host + local, host, local, setting, seen,
                            "" if gpus else "no CUDA device visible"))
    return out


def expected(hosts: int, per_host: int, gpus: int, setting: str, binding: str):
    """What the plan must be, worked out independently: (devices, mode, sharers) or the
    exception type."""
    if setting == "cpu" or (gpus == 0 and setting == "auto"):
        return ["cpu"] * (hosts * per_host), "cpu", [1] * (hosts * per_host)
    if gpus == 0:
        return HostError
    if binding == "none":
        index = [local % gpus for _ in range(hosts) for local in range(per_host)]
        on_one = [sum(1 for j in range(per_host) if j % gpus == i % gpus)
                  for _ in range(hosts) for i in range(per_host)]
    elif binding == "per-task":
        index, on_one = [0] * (hosts * per_host), [1] * (hosts * per_host)
    else:
        index, on_one = [0] * (hosts * per_host), [per_host] * (hosts * per_host)
    mode = "shared" if max(on_one) > 1 else "exclusive"
    return [f"cuda:{i}" for i in index], mode, on_one


CASES = [(h, w, g, s, b) for h in (1, 2) for w in (1, 2, 4) for g in (0, 1, 2, 4)
         for s in ("auto", "cpu", "cuda") for b in ("none", "per-task", "same")
         if not (b == "per-task" and w > g) and not (b != "none" and g == 0)]


@pytest.mark.parametrize(("hosts", "per_host", "gpus", "setting", "binding"), CASES)
def test_every_combination_gets_the_plan_worked_out_by_hand(hosts, per_host, gpus, setting,
                                                            binding):
    want = expected(hosts, per_host, gpus, setting, binding)
    seen = views(hosts, per_host, gpus, setting, binding)
    if want is HostError:
        with pytest.raises(HostError, match=r"training.device: 'cuda': worker 0 on node0"):
            plan_devices(seen)
        return
    devices, mode, sharers = want
    plan = plan_devices(seen)
    assert list(plan.devices) == devices
    assert plan.mode == mode
    assert [plan.sharers(r) for r in range(plan.world_size)] == sharers
    assert plan.backend == {"cpu": "gloo", "shared": "gloo",
                            "exclusive": "cpu:gloo,cuda:nccl"}[mode]
    assert plan.p2p == ("host" if mode == "shared" else "direct")
    # no two ranks on one physical GPU under NCCL
    if mode == "exclusive":
        assert len(set(zip(plan.hosts, plan.gpu_uuids, strict=True))) == plan.world_size
    if mode != "cpu":
        assert plan.gpus_used == hosts * (min(gpus, per_host) if binding == "none"
                                          else per_host if binding == "per-task" else 1)


def test_one_workstation_gpu_is_shared_by_every_worker_round_robin():
    plan = plan_devices(views(1, 4, 1, "auto", "none"))
    assert plan.devices == ("cuda:0",) * 4
    assert plan.mode == "shared" and plan.backend == "gloo" and plan.p2p == "host"
    assert "4 workers on 1 GPU(s) (H100), shared by several workers" in plan.line()
    assert "staged through host memory" in plan.line()
    two = plan_devices(views(1, 4, 2, "auto", "none"))
    assert two.devices == ("cuda:0", "cuda:1", "cuda:0", "cuda:1")
    assert [two.sharers(r) for r in range(4)] == [2, 2, 2, 2]


def test_auto_falls_back_to_the_cpu_for_every_worker_naming_why():
    seen = views(2, 2, 1, "auto", "none")
    seen[3] = HostView(3, "node1", 1, "auto", (), "torch has no CUDA")  # one bare worker
    plan = plan_devices(seen)
    assert plan.devices == ("cpu",) * 4 and plan.mode == "cpu"
    assert plan.reason == "auto: worker 3 on node1: torch has no CUDA"
    assert "(auto: worker 3 on node1: torch has no CUDA)" in plan.line()
    with pytest.raises(HostError, match="worker 3 on node1 has no usable GPU"):
        plan_devices([HostView(v.rank, v.host, v.local_rank, "cuda", v.gpus, v.unusable)
                      for v in seen])


def test_a_gpu_that_fails_its_first_computation_moves_auto_to_the_cpu():
    plan = plan_devices(views(1, 2, 1, "auto", "none"))
    assert confirm(plan, {}) is plan
    moved = confirm(plan, {1: "no kernel image is available for execution on the device"})
    assert moved.mode == "cpu" and moved.devices == ("cpu", "cpu")
    assert moved.reason.startswith("auto: worker 1 on node0: cuda:0 (H100) failed: no kernel")
    strict = plan_devices(views(1, 2, 1, "cuda", "none"))
    with pytest.raises(HostError, match=r"'cuda': worker 0 on node0: cuda:0 \(H100\) failed"):
        confirm(strict, {0: "out of memory", 1: "out of memory"})


def test_the_plan_is_described_for_the_summary():
    plan = plan_devices(views(1, 3, 2, "cuda", "none"))
    described = plan.describe()
    assert described == {
        "setting": "cuda", "mode": "shared", "backend": "gloo", "p2p": "host",
        "devices": ["cuda:0", "cuda:1", "cuda:0"],
        "gpus": ["GPU-node0-0", "GPU-node0-1", "GPU-node0-0"],
        "gpu_names": ["H100"] * 3, "hosts": ["node0"] * 3, "sharers": [2, 1, 2],
        "gpus_used": 2, "reason": ""}


def test_views_must_cover_every_rank_once_and_agree_on_the_setting():
    seen = views(1, 2, 1, "auto", "none")
    with pytest.raises(ValueError, match=r"not 0\.\.1"):
        plan_devices([seen[0], seen[0]])
    mixed = [seen[0], HostView(1, "node0", 1, "cpu")]
    with pytest.raises(ValueError, match=r"disagree on training\.device"):
        plan_devices(mixed)


def test_a_view_travels_as_json():
    view = views(1, 2, 2, "auto", "per-task")[1]
    assert HostView.from_json(view.to_json()) == view


def test_workers_agree_through_the_store_on_one_plan(monkeypatch):
    """Four workers (threads) publish their views to one store and each gets the same
    plan; worker 2's GPU fails its computation, so auto moves all to the CPU."""
    tried = {}

    def fake_try(device: str) -> str:
        rank = int(threading.current_thread().name)
        tried[rank] = device
        return "no kernel image" if rank == 2 else ""

    monkeypatch.setattr(placement, "try_device", fake_try)
    store = dist.HashStore()
    seen = views(1, 4, 2, "auto", "none")
    plans: dict[int, DevicePlan] = {}

    def worker(view: HostView) -> None:
        plans[view.rank] = agree(store, view, 4)

    threads = [threading.Thread(target=worker, args=(v,), name=str(v.rank)) for v in seen]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert tried == {0: "cuda:0", 1: "cuda:1", 2: "cuda:0", 3: "cuda:1"}
    assert len({plans[r] for r in range(4)}) == 1
    assert plans[0].mode == "cpu"
    assert plans[0].reason == "auto: worker 2 on node0: cuda:0 (H100) failed: no kernel image"


class FakeCuda:
    """torch.cuda's calls that the view makes, for a host with ``names`` GPUs."""

    def __init__(self, names: list[str], uuids: bool = True, broken: int | None = None):
        self.names, self.uuids, self.broken = names, uuids, broken

    def is_available(self) -> bool:
        return bool(self.names)

    def device_count(self) -> int:
        return len(self.names)

    def get_device_properties(self, index: int):
        if index == self.broken:
            raise RuntimeError("CUDA error: unknown error\nmore lines")
        return SimpleNamespace(name=self.names[index],
                               uuid=f"uuid-{index}" if self.uuids else None)


def test_the_view_reads_the_visible_gpus(monkeypatch):
    monkeypatch.setattr(torch, "cuda", FakeCuda(["H100", "H100"]))
    gpus, why = visible_gpus()
    assert gpus == (Gpu(0, "GPU-uuid-0", "H100"), Gpu(1, "GPU-uuid-1", "H100")) and why == ""
    view = host_view(3, 1, "auto")
    assert view.rank == 3 and view.local_rank == 1 and view.gpus == gpus
    assert host_view(3, 1, "cpu").gpus == ()  # device: cpu looks at no GPU
    with pytest.raises(HostError, match=r"training\.device: 'tpu'"):
        host_view(0, 0, "tpu")


def test_without_uuids_the_visible_device_list_names_the_gpu(monkeypatch):
    monkeypatch.setattr(torch, "cuda", FakeCuda(["A100", "A100"], uuids=False, broken=1))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "5,7")
    gpus, why = visible_gpus()
    assert gpus == (Gpu(0, "visible-5", "A100"),)
    assert why == "cuda:1: CUDA error: unknown error"


def test_no_cuda_at_all_is_said(monkeypatch):
    monkeypatch.setattr(torch, "cuda", FakeCuda([]))
    gpus, why = visible_gpus()
    assert gpus == () and why in ("no CUDA device visible", "torch has no CUDA")


def test_the_shared_gpus_energy_attribution_adds_up_to_the_device():
    plan = plan_devices(views(1, 4, 1, "auto", "none"))
    assert math.isclose(sum(1 / plan.sharers(r) for r in range(4)), plan.gpus_used)


def test_threads_that_touch_the_device_start_on_the_workers_gpu(monkeypatch):
    """A new thread's current CUDA device is 0: carry_device hands it the caller's."""
    from commgnn.runtime.devices import carry_device

    current = {"main": 3}
    calls = []

    class Cuda:
        def is_initialized(self):
            return True

        def current_device(self):
            return current[threading.current_thread().name]

        def set_device(self, index):
            current[threading.current_thread().name] = index
            calls.append(index)

    monkeypatch.setattr(threading.current_thread(), "name", "main")
    monkeypatch.setattr(torch, "cuda", Cuda())
    seen = []
    work = carry_device(lambda x: seen.append((x, current["worker"])))
    thread = threading.Thread(target=work, args=("batch",), name="worker")
    current["worker"] = 0  # where a new thread starts
    thread.start()
    thread.join()
    assert seen == [("batch", 3)] and calls == [3]

    class NoCuda:
        def is_initialized(self):
            return False

    monkeypatch.setattr(torch, "cuda", NoCuda())
    plain = print
    assert carry_device(plain) is plain  # a CPU run's threads are left as they are
