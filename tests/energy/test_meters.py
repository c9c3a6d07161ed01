"""Meter interface, composite meter, selection, and NVML logic against a stand-in NVML."""

from __future__ import annotations

import time
import types

import pytest

from commgnn.energy import (
    CompositeMeter,
    ModelledMeter,
    RaplMeter,
    nvml_available,
    rapl_available,
    select_meter,
)
from commgnn.energy import nvml as nvml_mod


def _fake_rapl(root, uj=0):
    d = root / "intel-rapl:0"
    d.mkdir(parents=True)
    (d / "name").write_text("package-0\n")
    (d / "energy_uj").write_text(f"{uj}\n")
    (d / "max_energy_range_uj").write_text("1000000000\n")
    return d


def test_selection_on_this_machine():
    m = select_meter("cpu")
    if rapl_available():
        assert m.name == "rapl"
    else:  # this workstation: no RAPL, no GPU
        assert isinstance(m, ModelledMeter) and m.name == "modelled" and m.modelled
    g = select_meter("cuda:0")
    if not nvml_available() and not rapl_available():
        assert g.name == "modelled" and set(g.describe()) >= {"gpu_idle_w", "cpu_idle_w"}


def test_selection_with_rapl_tree(tmp_path):
    _fake_rapl(tmp_path)
    m = select_meter("cpu", rapl_root=tmp_path)
    assert isinstance(m, RaplMeter)
    if not nvml_available():
        c = select_meter("cuda", rapl_root=tmp_path)
        assert isinstance(c, CompositeMeter) and c.name == "modelled+rapl" and c.modelled
        c.start()
        assert set(c.read_parts()) == {"gpu", "cpu"}
        c.stop()
    assert select_meter("cpu", "modelled", rapl_root=tmp_path).name == "modelled"


def test_prefer_falls_back_and_validates(tmp_path):
    assert select_meter("cpu", "rapl", rapl_root=tmp_path / "none").name == "modelled"
    if not nvml_available():
        assert select_meter("cuda:0", "nvml", rapl_root=tmp_path / "none").name == "modelled"
    with pytest.raises(ValueError):
        select_meter("cpu", "joulemeter")


def test_lifecycle_and_composite(tmp_path):
    d = _fake_rapl(tmp_path, 0)
    m = ModelledMeter(cores=1)
    with pytest.raises(RuntimeError):
        m.read_joules()
    comp = CompositeMeter([RaplMeter(tmp_path, poll_interval_s=None), ModelledMeter()])
    assert comp.name == "rapl+modelled"
    with comp:
        (d / "energy_uj").write_text("2000000\n")
        parts = comp.read_parts()
        assert parts["cpu"] >= 2.0  # 2 J from RAPL + the modelled CPU
        rec = comp.record().as_dict()
        assert rec["energy_meter"] == "rapl+modelled" and rec["energy_cpu_j"] >= 2.0
    final = comp.read_joules()
    assert final == comp.stop()  # idempotent and frozen


class _FakeNvml(types.SimpleNamespace):
    """A stand-in for pynvml (no GPU here): constant power, a mJ energy counter."""

    def __init__(self, total_energy: bool, watts: float = 100.0):
        super().__init__()
        self.total_energy, self.watts, self.t0 = total_energy, watts, time.perf_counter()

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        assert i == 0
        return "h0"

    def nvmlDeviceGetPowerUsage(self, h):
        return int(self.watts * 1000)

    def nvmlDeviceGetTotalEnergyConsumption(self, h):
        if not self.total_energy:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        return int(5_000_000 + (time.perf_counter() - self.t0) * self.watts * 1000)


@pytest.mark.parametrize("total_energy", [True, False])
def test_nvml_meter_logic_with_stand_in(monkeypatch, total_energy):
    fake = _FakeNvml(total_energy)
    monkeypatch.setattr(nvml_mod, "_pynvml", lambda: fake)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    m = nvml_mod.NvmlMeter("cuda:0", sample_interval_s=0.01)
    assert m.mode == ("total-energy" if total_energy else "power-sampling")
    m.start()
    time.sleep(0.1)
    j = m.read_joules()
    assert j >= 100.0 * 0.1 * 0.9  # ≈ P·t (mJ counter truncation / trapezoid start)
    assert m.record().meter == "nvml" and set(m.read_parts()) == {"gpu"}
    assert m.stop() >= j


def test_nvml_index_mapping(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1")
    assert nvml_mod.nvml_index("cuda:1") == 1
    assert nvml_mod.nvml_index("cuda") == 3
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-abc")
    assert nvml_mod.nvml_index("cuda:0") == "GPU-abc"
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    assert nvml_mod.nvml_index("cuda:2") == 2


@pytest.mark.skipif(not nvml_available(), reason="no NVML GPU")
def test_nvml_real_gpu():
    m = nvml_mod.NvmlMeter("cuda:0")
    m.start()
    time.sleep(0.2)
    assert m.stop() > 0


def test_worker_meter_reads_its_own_gpu(monkeypatch):
    """The training loop meters the GPU a worker trains on, not always GPU 0."""
    import torch

    from commgnn.energy import select as select_mod
    from commgnn.train.loop import worker_meter

    opened = []

    class TwoGpus(_FakeNvml):
        def nvmlDeviceGetCount(self):
            return 2

        def nvmlDeviceGetHandleByIndex(self, i):
            opened.append(i)
            return f"h{i}"

    fake = TwoGpus(total_energy=True)
    monkeypatch.setattr(nvml_mod, "_pynvml", lambda: fake)
    monkeypatch.setattr(select_mod, "nvml_available", lambda: True)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    meter = worker_meter(torch.device("cuda", 1))
    assert opened == [1]
    assert "nvml" in meter.name


@pytest.mark.parametrize("total_energy", [True, False])
def test_a_shared_gpus_energy_is_split_among_its_workers(monkeypatch, total_energy):
    """Four workers on one GPU each read all of it from NVML; each is attributed a
    quarter, so the four readings add up to the device's energy once."""
    from commgnn.energy import select as select_mod

    class Frozen(_FakeNvml):  # 400 J since the driver loaded, then 400 J more
        readings = iter([5_000_000] * 4 + [5_400_000] * 4)  # four starts, four stops

        def nvmlDeviceGetTotalEnergyConsumption(self, h):
            if not self.total_energy:
                raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
            return next(self.readings, 5_400_000)

    fake = Frozen(total_energy, watts=400.0)
    monkeypatch.setattr(nvml_mod, "_pynvml", lambda: fake)
    monkeypatch.setattr(select_mod, "nvml_available", lambda: True)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    meters = [nvml_mod.NvmlMeter("cuda:0", share=4, sample_interval_s=0.01,
                                 use_total_energy=total_energy) for _ in range(4)]
    for m in meters:
        m.start()
    time.sleep(0.05)
    gpu = [m.stop() for m in meters]
    if total_energy:
        assert gpu == [100.0] * 4  # 400 J / 4 each: the device's 400 J once in all
    else:  # 400 W for ~0.05 s each, a quarter attributed
        assert all(400 * 0.05 / 4 * 0.8 <= j <= 400 * 0.5 / 4 for j in gpu)
    assert meters[0].describe()["share"] == 4
    assert select_meter("cuda:0", "nvml", gpu_share=4).share == 4
    with pytest.raises(ValueError, match="share must be at least 1"):
        nvml_mod.NvmlMeter("cuda:0", share=0)
