"""The target-machine energy model: hand-computed joules, overrides, the schema's defaults."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from commgnn.core.config import ConfigError, subschema, validate
from commgnn.energy import (
    DEFAULT_CPU_IDLE_W,
    DEFAULT_CPU_MAX_W,
    DEFAULT_GPU_IDLE_W,
    TARGET_MODEL_NAME,
    TargetEnergy,
    TargetPowerModel,
)


def test_defaults_are_the_documented_constants():
    m = TargetPowerModel()
    assert (m.gpu_idle_w, m.cpu_idle_w, m.cpu_max_w) == \
        (DEFAULT_GPU_IDLE_W, DEFAULT_CPU_IDLE_W, DEFAULT_CPU_MAX_W) == (60.0, 40.0, 125.0)
    assert m.gpu_busy_w == 250.0  # P100 TDP
    assert (m.cpu_cores, m.rpc_cpu_s, m.copy_bytes_per_s) == (12, 100e-6, 5e9)


def test_default_model_two_seconds_half_busy_ten_rpcs_one_megabyte():
    e = TargetPowerModel().energy(2.0, 0.5, rpcs=10, nbytes=1_000_000)
    # GPU: 60 W · 2 s + (250 − 60) W · 0.5 s = 120 + 95
    assert e.gpu == pytest.approx(215.0, rel=1e-12)
    # CPU: 40 W · 2 s + (125 − 40)/12 W · (10 · 100 µs + 1e6 B / 5e9 B/s) = 80 + 85/12 · 1.2e-3
    assert e.cpu == pytest.approx(80.0 + 85.0 / 12.0 * 1.2e-3, rel=1e-12)
    assert e.cpu == pytest.approx(80.0085, rel=1e-12)
    assert e.total == pytest.approx(295.0085, rel=1e-12)
    assert e.as_dict() == {"energy_target_j": e.total, "energy_target_gpu_j": e.gpu,
                           "energy_target_cpu_j": e.cpu}


def test_custom_model_round_numbers():
    m = TargetPowerModel(gpu_idle_w=50, gpu_busy_w=300, cpu_idle_w=40, cpu_max_w=140,
                         cpu_cores=10, rpc_cpu_s=1e-3, copy_bytes_per_s=1e6)
    assert m.core_w == 10.0
    e = m.energy(2.0, 0.5, rpcs=10, nbytes=1_000_000)
    assert e.gpu == pytest.approx(50 * 2 + 250 * 0.5)  # 225 J
    assert e.cpu == pytest.approx(40 * 2 + 10 * (10 * 1e-3 + 1.0))  # 90.1 J
    assert e.total == pytest.approx(315.1)


def test_stalls_draw_idle_power_only():
    m = TargetPowerModel()
    idle = m.energy(3.0)  # all stall: no compute, no traffic
    assert idle == TargetEnergy(gpu=60.0 * 3, cpu=40.0 * 3)
    assert m.energy(0.0) == TargetEnergy(0.0, 0.0)
    # busy time is clamped to the interval, a negative one to 0
    assert m.energy(1.0, 5.0) == m.energy(1.0, 1.0)
    assert m.energy(1.0, -1.0) == m.energy(1.0, 0.0)
    # traffic costs CPU energy even in a zero-length interval (it is CPU time, not wall)
    assert m.energy(0.0, rpcs=1).cpu == pytest.approx(85.0 / 12 * 100e-6)


def test_linear_in_every_argument():
    m = TargetPowerModel()
    a, b = m.energy(1.0, 0.2, 3, 1e5), m.energy(0.5, 0.1, 7, 4e5)
    both = m.energy(1.5, 0.3, 10, 5e5)
    assert (a + b).gpu == pytest.approx(both.gpu) and (a + b).cpu == pytest.approx(both.cpu)


def test_from_config_overrides_and_rejects():
    m = TargetPowerModel.from_config({"gpu_busy_w": 300, "cpu_cores": 16})
    assert m == TargetPowerModel(gpu_busy_w=300.0, cpu_cores=16)
    assert isinstance(m.cpu_cores, int) and isinstance(m.gpu_busy_w, float)
    assert TargetPowerModel.from_config(None) == TargetPowerModel()
    with pytest.raises(ValueError, match="unknown keys"):
        TargetPowerModel.from_config({"gpu_tdp_w": 300})
    for bad in ({"gpu_busy_w": 10}, {"cpu_max_w": 1}, {"cpu_cores": 0},
                {"rpc_cpu_s": -1}, {"copy_bytes_per_s": 0}):
        with pytest.raises(ValueError):
            TargetPowerModel.from_config(bad)


def test_describe_names_the_model():
    d = TargetPowerModel().describe()
    assert d["meter"] == TARGET_MODEL_NAME == "target-model"
    assert d["modelled"] is True
    assert {k: d[k] for k in asdict(TargetPowerModel())} == asdict(TargetPowerModel())


def test_schema_documents_the_same_defaults():
    props = subschema("training")["properties"]["energy_model"]["properties"]
    assert {k: v["default"] for k, v in props.items()} == asdict(TargetPowerModel())
    validate({"energy_model": {"gpu_busy_w": 300, "cpu_cores": 16}}, subschema("training"))
    with pytest.raises(ConfigError, match="energy_model"):
        validate({"energy_model": {"gpu_tdp_w": 300}}, subschema("training"))
