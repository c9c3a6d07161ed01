"""GreenDyGNN's congestion presets (commgnn.systems.greendygnn.congestion): its §VI-A
pattern and the named scenarios, determinism, specs, the schema."""

from __future__ import annotations

import json

import pytest

from commgnn.core.config import ConfigError, schema, validate
from commgnn.network.congestion import (
    congestion_from_spec,
    default_congested_traffic,
)
from commgnn.network.netem import ALLREDUCE, network_from_spec
from commgnn.systems.greendygnn.congestion import (
    SCENARIOS,
    ScenarioSchedule,
    greendygnn_schedule,
    scenario_names,
    scenario_schedule,
)


@pytest.mark.parametrize("num_workers,num_epochs,seed", [(4, 30, 0), (4, 30, 7), (2, 12, 3),
                                                          (8, 17, 1)])
def test_greendygnn_pattern(num_workers, num_epochs, seed):
    s = greendygnn_schedule(num_workers, num_epochs, seed)
    table = s.epoch_table_ms(num_epochs)
    for e in (0, 1, 2, num_epochs - 1):
        assert table[e] == {}, e
    for e in range(3, num_epochs - 1):
        nodes = table[e]
        assert 1 <= len(nodes) <= 2, (e, nodes)
        assert all(0 <= n < num_workers for n in nodes)
        assert all(15.0 <= d <= 25.0 for d in nodes.values())
        if e + 7 < num_epochs - 1:
            assert table[e + 7] == nodes  # repeats every 7 epochs
    # beyond the run: clean
    assert s.node_delays_s(num_epochs + 3) == {}


def test_greendygnn_single_worker_and_short_run():
    s = greendygnn_schedule(1, 5, 0)
    t = s.epoch_table_ms(5)
    assert t[0] == t[1] == t[2] == t[4] == {}
    assert list(t[3]) == [0]
    assert greendygnn_schedule(4, 3, 0).epoch_table_ms(3) == [{}, {}, {}]


def test_greendygnn_deterministic_and_seed_dependent():
    a = greendygnn_schedule(4, 30, 11).epoch_table_ms(30)
    b = greendygnn_schedule(4, 30, 11).epoch_table_ms(30)
    c = greendygnn_schedule(4, 30, 12).epoch_table_ms(30)
    assert a == b
    assert a != c
    # known-answer: the draw is a SHA-256 of (seed, phase, what), stable across versions
    assert greendygnn_schedule(4, 30, 0).epoch_table_ms(4)[3] == {1: 20.6}


def test_greendygnn_uses_both_one_and_two_nodes_somewhere():
    sizes = set()
    for seed in range(10):
        for row in greendygnn_schedule(4, 30, seed).epoch_table_ms(30):
            sizes.add(len(row))
    assert sizes == {0, 1, 2}


# -- named scenarios (GreenDyGNN §IV-C archetypes, §VI-A pattern) ---------------------------

P, EPOCHS = 4, 12


def _scenario(name, **kw):
    return congestion_from_spec({"kind": "scenario", "name": name, **kw}, P, EPOCHS)


def _table(on, row):
    """Hand-written table: ``row`` in the epochs of ``on``, clean elsewhere."""
    return [dict(row) if e in on else {} for e in range(EPOCHS)]


# Defaults: onset 3 (epochs 0-2 clean warm-up), to the end, final epoch (11) forced clean.
CONGESTED = range(3, 11)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("clean", _table((), {})),
        ("single-link", _table(CONGESTED, {1: 20.0})),
        ("two-link-symmetric", _table(CONGESTED, {1: 20.0, 2: 20.0})),
        ("two-link-asymmetric", _table(CONGESTED, {1: 20.0, 2: 10.0})),
        # on 2 epochs (3, 4), off 2 (5, 6), on (7, 8), off (9, 10), final clean (11)
        ("oscillating", _table((3, 4, 7, 8), {1: 20.0})),
    ],
)
def test_scenario_tables_by_hand(name, expected):
    s = _scenario(name)
    assert isinstance(s, ScenarioSchedule)
    assert s.epoch_table_ms(EPOCHS) == expected
    assert s.node_delays_s(EPOCHS + 5) == {}  # beyond the run: clean


def test_scenario_coordinator_never_congested_and_warmup_final_clean():
    for name in SCENARIOS:
        for seed in range(5):
            table = _scenario(name, seed=seed).epoch_table_ms(EPOCHS)
            assert all(0 not in row for row in table), (name, seed)
            assert table[0] == table[1] == table[2] == table[EPOCHS - 1] == {}, name
            s = _scenario(name, seed=seed)
            assert all(s.extra_delay_s(0, 0, e) == 0.0 for e in range(EPOCHS))


def test_scenario_onset_duration_period_and_final_clean_off():
    assert _scenario("single-link", onset_epoch=5, duration_epochs=3,
                     delay_ms=15).epoch_table_ms(EPOCHS) == _table((5, 6, 7), {1: 15.0})
    # on 3 (3, 4, 5), off 3 (6, 7, 8), on (9, 10, 11): the final epoch stays congested
    assert _scenario("oscillating", period_epochs=3, final_clean=False).epoch_table_ms(
        EPOCHS) == _table((3, 4, 5, 9, 10, 11), {1: 20.0})
    assert _scenario("single-link", onset_epoch=0, final_clean=False).epoch_table_ms(
        EPOCHS) == _table(range(EPOCHS), {1: 20.0})
    # duration past the end of the run: to the end
    assert _scenario("single-link", duration_epochs=100).epoch_table_ms(
        EPOCHS) == _table(CONGESTED, {1: 20.0})


def test_scenario_explicit_nodes_and_asymmetric_order():
    assert _scenario("two-link-asymmetric", nodes=[3, 1], delay_ms=24).epoch_table_ms(
        EPOCHS) == _table(CONGESTED, {3: 24.0, 1: 12.0})
    assert _scenario("single-link", nodes=[3]).epoch_table_ms(EPOCHS) == \
        _table(CONGESTED, {3: 20.0})
    assert _scenario("oscillating", nodes=[2]).epoch_table_ms(EPOCHS) == \
        _table((3, 4, 7, 8), {2: 20.0})


def test_scenario_delay_range_redrawn_per_block_and_deterministic():
    s = _scenario("two-link-asymmetric", delay_ms=[15, 25], period_epochs=4, seed=9)
    table = s.epoch_table_ms(EPOCHS)
    blocks = [table[3:7], table[7:11]]  # blocks of 4 epochs from the onset; 11 is clean
    for block in blocks:
        assert all(row == block[0] for row in block)
        d = block[0][1]
        assert 15.0 <= d <= 25.0 and round(d, 1) == d
        assert block[0][2] == pytest.approx(d / 2)
    assert _scenario("two-link-asymmetric", delay_ms=[15, 25], period_epochs=4,
                     seed=9).epoch_table_ms(EPOCHS) == table
    # one draw per block shared by the scenario's nodes; symmetric and single-link agree
    sym = _scenario("two-link-symmetric", delay_ms=[15, 25], period_epochs=4, seed=9)
    one = _scenario("single-link", delay_ms=[15, 25], period_epochs=4, seed=9)
    for e in range(EPOCHS):
        assert sym.epoch_table_ms(EPOCHS)[e].get(2) == one.epoch_table_ms(EPOCHS)[e].get(1) \
            == table[e].get(1)
    seeds = {tuple(_scenario("single-link", delay_ms=[15, 25], seed=k).epoch_table_ms(
        EPOCHS)[3].values()) for k in range(8)}
    assert len(seeds) > 1  # the seed matters


def test_scenario_greendygnn_is_the_paper_pattern_without_coordinator():
    for seed in range(6):
        s = _scenario("greendygnn", seed=seed)
        ref = greendygnn_schedule(P, EPOCHS, seed, exclude_nodes=(0,))
        assert s.epoch_table_ms(EPOCHS) == ref.epoch_table_ms(EPOCHS)
        table = s.epoch_table_ms(EPOCHS)
        assert table[0] == table[1] == table[2] == table[11] == {}
        for e in range(3, 11):
            assert 1 <= len(table[e]) <= 2 and 0 not in table[e]
            assert all(15.0 <= d <= 25.0 for d in table[e].values())
        assert table[10] == table[3]  # the cycle repeats every 7 epochs
    assert _scenario("greendygnn", seed=0).epoch_table_ms(4)[3] == {1: 20.6}  # known answer
    # restricted to the listed nodes; duration cuts it short
    s = _scenario("greendygnn", nodes=[2, 3], duration_epochs=2, seed=4)
    table = s.epoch_table_ms(EPOCHS)
    assert all(set(row) <= {2, 3} for row in table)
    assert [e for e, row in enumerate(table) if row] == [3, 4]


def test_greendygnn_exclude_nodes_keeps_default_and_round_trips():
    assert greendygnn_schedule(4, 30, 0) == greendygnn_schedule(4, 30, 0, exclude_nodes=())
    assert "exclude_nodes" not in greendygnn_schedule(4, 30, 0).to_dict()
    s = greendygnn_schedule(4, 30, 3, exclude_nodes=(0,))
    assert all(0 not in row for row in s.epoch_table_ms(30))
    assert congestion_from_spec(json.loads(json.dumps(s.to_dict()))) == s
    assert greendygnn_schedule(2, 10, 1, exclude_nodes=[0]).epoch_table_ms(10)[3].keys() == {1}
    with pytest.raises(ValueError):
        greendygnn_schedule(1, 10, 0, exclude_nodes=(0,))
    kept = greendygnn_schedule(4, 12, 0, final_clean=False)
    assert kept.epoch_table_ms(12)[11] == kept.epoch_table_ms(12)[4]


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_round_trips_through_json(name):
    for kw in ({}, {"delay_ms": [15, 25], "seed": 3, "duration_epochs": 5,
                    "final_clean": False}):
        if name == "clean" and "delay_ms" in kw:
            kw = {"seed": 3}
        s = _scenario(name, **kw)
        spec = json.loads(json.dumps(s.to_dict()))
        assert spec["kind"] == "scenario" and spec["name"] == name
        again = congestion_from_spec(spec)
        assert again == s
        assert again.epoch_table_ms(EPOCHS) == s.epoch_table_ms(EPOCHS)
        explicit = congestion_from_spec(json.loads(json.dumps(s.table_spec())))
        assert explicit.epoch_table_ms(EPOCHS) == s.epoch_table_ms(EPOCHS)


def test_scenario_rejects_bad_specs():
    with pytest.raises(ValueError, match="unknown congestion scenario"):
        _scenario("bogus")
    with pytest.raises(ValueError, match="coordinator"):
        _scenario("single-link", nodes=[0])
    with pytest.raises(ValueError, match="congests 2"):
        _scenario("two-link-symmetric", nodes=[1])
    with pytest.raises(ValueError, match="needs 2 non-coordinator"):
        congestion_from_spec({"kind": "scenario", "name": "two-link-asymmetric"}, 2, 10)
    with pytest.raises(ValueError, match="needs 1 non-coordinator"):
        congestion_from_spec({"kind": "scenario", "name": "single-link"}, 1, 10)
    with pytest.raises(ValueError, match="unknown scenario congestion keys"):
        _scenario("single-link", onset_epochs=2)
    with pytest.raises(ValueError, match="needs a name"):
        congestion_from_spec({"kind": "scenario"}, P, EPOCHS)
    with pytest.raises(ValueError, match="num_workers and num_epochs"):
        congestion_from_spec({"kind": "scenario", "name": "clean"})
    with pytest.raises(ValueError):
        _scenario("single-link", delay_ms=[25, 15])
    with pytest.raises(ValueError):
        _scenario("oscillating", period_epochs=0)
    assert congestion_from_spec({"kind": "scenario", "name": "clean"}, 1, 5).epoch_table_ms(
        5) == [{}] * 5


def test_scenario_default_traffic_is_the_papers_reach():
    assert default_congested_traffic({"kind": "scenario", "name": "single-link"}) == \
        ["fetch", "sampling"]
    assert default_congested_traffic({"kind": "scenario", "name": "oscillating",
                                      "applies_to": "all"}) is None
    assert default_congested_traffic({"kind": "scenario", "name": "oscillating",
                                      "applies_to": ["fetch", "allreduce"]}) == \
        ["fetch", "allreduce"]


@pytest.mark.parametrize("dilation", [None, 4.0])
def test_network_from_spec_single_link_adds_exactly_the_delay(dilation):
    # no TCP window: a congested RTT would also slow the response's bytes (bytes · RTT / W,
    # tests/network/test_tcp_window.py); here the delay alone
    spec = {"preset": "10gbe", "congestion": {"kind": "scenario", "name": "single-link"},
            "tcp_window_bytes": None}
    if dilation is not None:
        spec["time_dilation"] = dilation
    f = 1.0 if dilation is None else dilation
    emu = network_from_spec(spec, P, num_epochs=EPOCHS)
    assert emu.congestion == _scenario("single-link")
    assert emu.congested_traffic == frozenset({"fetch", "sampling"})
    clean = emu.request_cost_s(0, 1, 256, 1 << 20, epoch=1)
    congested = emu.request_cost_s(0, 1, 256, 1 << 20, epoch=3)
    assert congested - clean == pytest.approx(f * 0.020, rel=1e-9, abs=1e-12)
    assert emu.request_cost_s(2, 1, 256, 1 << 20, epoch=3) - \
        emu.request_cost_s(2, 1, 256, 1 << 20, epoch=1) == pytest.approx(f * 0.020)
    # node 1 uncongested epochs (warm-up, final) and other links cost the clean price
    assert emu.request_cost_s(0, 1, 256, 1 << 20, epoch=EPOCHS - 1) == pytest.approx(clean)
    assert emu.request_cost_s(0, 2, 256, 1 << 20, epoch=3) == pytest.approx(
        emu.request_cost_s(0, 2, 256, 1 << 20, epoch=1))
    # gradient synchronisation is not delayed
    assert emu.cost_s(1, 2, 0, epoch=3, traffic=ALLREDUCE) == pytest.approx(
        emu.cost_s(1, 2, 0, epoch=1, traffic=ALLREDUCE))
    assert emu.describe()["congestion"]["name"] == "single-link"


def _config_with(congestion):
    return {
        "datasets": {"tiny": {"source": "synthetic", "preset": "tiny", "seed": 1}},
        "partitionings": {"m4": {"method": "metis", "parts": 4}},
        "networks": {"congested": {"preset": "10gbe", "congestion": congestion}},
    }


def test_schema_accepts_scenarios_and_names_bad_keys():
    for name in SCENARIOS:
        validate(_config_with({"kind": "scenario", "name": name}))
    validate(_config_with({"kind": "scenario", "name": "two-link-asymmetric",
                           "delay_ms": [15, 25], "onset_epoch": 2, "duration_epochs": 6,
                           "period_epochs": 3, "final_clean": False, "seed": 4,
                           "nodes": [2, 3], "applies_to": "all"}))
    validate(_config_with({"kind": "greendygnn", "seed": 0}))
    bad = [
        ({"kind": "scenario", "name": "bogus"},
         "config.networks.congested.congestion.name: 'bogus' is not one of"),
        ({"kind": "scenario"}, "config.networks.congested.congestion: 'name' is a required"),
        ({"kind": "scenario", "name": "single-link", "onset_epochs": 2},
         "'onset_epochs' was unexpected"),
        ({"kind": "scenario", "name": "single-link", "nodes": [0]},
         "config.networks.congested.congestion.nodes.0"),
        ({"kind": "scenario", "name": "single-link", "delay_ms": -1},
         "config.networks.congested.congestion.delay_ms"),
    ]
    for congestion, expected in bad:
        with pytest.raises(ConfigError) as info:
            validate(_config_with(congestion))
        message = str(info.value)
        assert expected in message, message
        assert len(message.splitlines()) == 1  # one line naming the key


def test_schema_scenario_enum_matches_module():
    defs = schema()["$defs"]
    assert tuple(defs["congestion_scenario"]["properties"]["name"]["enum"]) == SCENARIOS \
        == scenario_names()
    assert "scenario" in defs["congestion"]["properties"]["kind"]["enum"]
    assert scenario_schedule("clean", 1, 3).name == "clean"
