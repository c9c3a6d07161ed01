"""Modelled meter: busy > idle, monotone non-negative readings, the formula."""

from __future__ import annotations

import time

import pytest

from commgnn.energy import DEFAULT_CPU_IDLE_W, DEFAULT_CPU_MAX_W, ModelledMeter


def _run(meter: ModelledMeter, busy: bool, seconds: float = 0.2) -> float:
    meter.start()
    end = time.perf_counter() + seconds
    if busy:
        x = 0
        while time.perf_counter() < end:
            x += 1
    else:
        time.sleep(seconds)
    return meter.stop()


def test_busy_costs_more_than_sleep():
    e_sleep = _run(ModelledMeter(cores=1), busy=False)
    e_busy = _run(ModelledMeter(cores=1), busy=True)
    assert e_busy > e_sleep > 0
    # at least the idle floor over the wall time
    assert e_sleep >= DEFAULT_CPU_IDLE_W * 0.2


def test_readings_monotone_and_non_negative():
    m = ModelledMeter(include_gpu=True)
    m.start()
    prev = 0.0
    for i in range(20):
        if i % 2:
            sum(range(20_000))
        else:
            time.sleep(0.001)
        now = m.read_joules()
        assert now >= prev >= 0.0
        parts = m.read_parts()
        assert set(parts) == {"cpu", "gpu"} and all(v >= 0 for v in parts.values())
        prev = now
    rec = m.record()
    assert rec.meter == "modelled" and rec.modelled
    assert rec.as_dict()["energy_modelled"] is True
    assert m.stop() >= prev


def test_formula_bounds():
    m = ModelledMeter(cpu_idle_w=10.0, cpu_max_w=30.0, cores=4)
    w0, c0 = time.perf_counter(), time.process_time()
    m.start()
    sum(range(300_000))
    time.sleep(0.02)
    e = m.stop()
    dw, dc = time.perf_counter() - w0, time.process_time() - c0
    # E = idle·wall + (max − idle)·cpu/cores, the meter's window inside ours (a bound that
    # holds however long this process waits for a core between the readings)
    assert 0 < e <= 10.0 * dw + 20.0 * dc / 4 + 1e-9
    assert e >= 10.0 * 0.02


def test_defaults_and_validation():
    assert DEFAULT_CPU_MAX_W > DEFAULT_CPU_IDLE_W > 0
    with pytest.raises(ValueError):
        ModelledMeter(cpu_idle_w=50, cpu_max_w=10)
    with pytest.raises(ValueError):
        ModelledMeter(include_cpu=False, include_gpu=False)
    m = ModelledMeter(include_cpu=False, include_gpu=True, gpu_idle_w=100.0)
    m.start()
    time.sleep(0.01)
    assert set(m.read_parts()) == {"gpu"}
    assert m.stop() >= 100.0 * 0.01
