"""Congestion schedules (commgnn.network.congestion): semantics, specs, registered kinds
(GreenDyGNN's presets are tested in tests/systems/greendygnn/)."""

from __future__ import annotations

import json

import pytest

from commgnn.network.congestion import (
    EpochSchedule,
    NoCongestion,
    TimeSchedule,
    congestion_from_spec,
    default_congested_traffic,
)
from commgnn.systems.greendygnn.congestion import (
    greendygnn_schedule,
)


def test_no_congestion_is_zero():
    s = NoCongestion()
    assert s.extra_delay_s(0, 1, 5, 3.0) == 0.0
    assert s.node_delays_s(0) == {}


def test_epoch_schedule_max_of_two_nodes_and_units():
    s = EpochSchedule({2: {0: 10.0, 3: 20.0}})
    assert s.extra_delay_s(0, 1, 2) == pytest.approx(0.010)
    assert s.extra_delay_s(1, 0, 2) == pytest.approx(0.010)  # as sender or owner
    assert s.extra_delay_s(0, 3, 2) == pytest.approx(0.020)  # max, not sum
    assert s.extra_delay_s(1, 2, 2) == 0.0  # neither congested
    assert s.extra_delay_s(3, 3, 2) == 0.0  # same node never pays
    assert s.extra_delay_s(0, 1, 1) == 0.0  # epoch not in table is clean


def test_epoch_schedule_period_and_clean_epochs():
    s = EpochSchedule({1: {0: 5}, 2: {1: 6}}, period=2, start=1, clean_epochs=[5])
    assert s.node_delays_s(0) == {}
    assert s.node_delays_s(3) == pytest.approx({0: 0.005})
    assert s.node_delays_s(4) == pytest.approx({1: 0.006})
    assert s.node_delays_s(5) == {}


def test_time_schedule_piecewise_and_periodic():
    s = TimeSchedule([(1.0, {0: 4}), (2.0, {}), (3.0, {1: 8})], period_s=4.0)
    assert s.extra_delay_s(0, 1, 0, 0.5) == 0.0
    assert s.extra_delay_s(0, 1, 0, 1.5) == pytest.approx(0.004)
    assert s.extra_delay_s(0, 1, 0, 2.5) == 0.0
    assert s.extra_delay_s(2, 1, 0, 3.5) == pytest.approx(0.008)
    assert s.extra_delay_s(0, 1, 0, 5.5) == pytest.approx(0.004)  # wraps
    with pytest.raises(ValueError):
        s.node_delays_s(0, None)


def test_spec_round_trip_through_json():
    for sched in [
        NoCongestion(),
        EpochSchedule({3: {1: 15.5}}, period=7, start=3),
        TimeSchedule([(0.0, {0: 1.0}), (2.5, {})], period_s=5.0),
        greendygnn_schedule(4, 30, 5),
    ]:
        spec = json.loads(json.dumps(sched.to_dict()))
        again = congestion_from_spec(spec)
        assert again == sched
        assert again.epoch_table_ms(20, t=1.0) == sched.epoch_table_ms(20, t=1.0)


def test_spec_greendygnn_fills_defaults_and_table_equivalent():
    s = congestion_from_spec({"kind": "greendygnn", "seed": 2}, num_workers=4, num_epochs=30)
    assert s == greendygnn_schedule(4, 30, 2)
    explicit = congestion_from_spec(json.loads(json.dumps(s.table_spec())))
    assert explicit.epoch_table_ms(30) == s.epoch_table_ms(30)
    with pytest.raises(ValueError):
        congestion_from_spec({"kind": "greendygnn"})
    with pytest.raises(ValueError):
        congestion_from_spec({"kind": "bogus"})
    assert congestion_from_spec(None) == NoCongestion()


def test_default_congested_traffic():
    assert default_congested_traffic(None) is None
    assert default_congested_traffic({"kind": "greendygnn"}) == ["fetch", "sampling"]
    assert default_congested_traffic({"kind": "epochs", "table": {}}) is None
    assert default_congested_traffic({"kind": "greendygnn", "applies_to": "all"}) is None
    assert default_congested_traffic({"kind": "time", "applies_to": "allreduce"}) == ["allreduce"]


def test_rejects_negative_delay():
    with pytest.raises(ValueError):
        EpochSchedule({0: {0: -1.0}})
