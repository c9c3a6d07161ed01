"""Congestion's reach through a real emulator (``network_from_spec``): the paper's default
for the ``scenario`` and ``greendygnn`` kinds — the DGL RPC port, i.e. feature fetches and
sampling requests, never gradient synchronisation or any other class — and the whole link
(every traffic class) where a spec says ``applies_to: all``, as configs/compare.yaml's
congested network does. Each class's cost in a congested epoch is compared with its cost in
a clean epoch on the same link, one-way (``cost_s``) and as a round trip
(``request_cost_s``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from commgnn.network import netem
from commgnn.network.congestion import default_congested_traffic, reach_label
from commgnn.network.netem import network_from_spec
from commgnn.systems.greendygnn.congestion import PAPER_REACH

ROOT = Path(__file__).parents[2]
#: Every traffic class the emulator knows.
CLASSES = (netem.FETCH, netem.SAMPLING, netem.ALLREDUCE, netem.MIGRATION, netem.SHUFFLE,
           netem.GRAPH, netem.ACTIVATION, netem.ACTIVATION_GRAD, netem.OTHER)
WORKERS, EPOCHS = 4, 8


def _delays(emu, src: int, dst: int, clean: int, congested: int) -> dict[str, float]:
    """Per class: the extra seconds a one-way transfer and a round trip pay between
    ``src`` and ``dst`` in the ``congested`` epoch over the ``clean`` one (the smaller)."""
    out = {}
    for traffic in CLASSES:
        one_way = (emu.cost_s(src, dst, 4096, epoch=congested, traffic=traffic)
                   - emu.cost_s(src, dst, 4096, epoch=clean, traffic=traffic))
        rtt = (emu.request_cost_s(src, dst, 256, 4096, epoch=congested, traffic=traffic)
               - emu.request_cost_s(src, dst, 256, 4096, epoch=clean, traffic=traffic))
        out[traffic] = min(one_way, rtt)
    return out


def _congested_pair(emu, epoch: int) -> tuple[int, int]:
    """A congested node and another machine (node 0, the coordinator, is never congested)."""
    node = sorted(emu.congestion.node_delays_s(epoch))[0]
    return 0, node


def test_the_compare_configs_congestion_delays_every_traffic_class():
    config = yaml.safe_load((ROOT / "configs" / "compare.yaml").read_text())
    spec = config["networks"]["single-link"]
    assert spec["congestion"].get("applies_to") == "all"
    epochs = config["training"]["epochs"]
    emu = network_from_spec(spec, WORKERS, num_epochs=epochs)
    assert emu.congested_traffic is None  # the whole link
    src, dst = _congested_pair(emu, 1)
    extra = _delays(emu, src, dst, clean=0, congested=1)
    assert all(extra[c] >= 0.019 for c in CLASSES), extra  # the 20 ms on every class
    # the clean links stay clean for every class
    assert _delays(emu, 0, 2, clean=0, congested=1) == pytest.approx(dict.fromkeys(CLASSES,
                                                                                   0.0))


@pytest.mark.parametrize("congestion", [
    {"kind": "scenario", "name": "single-link", "applies_to": "all"},
    {"kind": "scenario", "name": "two-link-symmetric", "applies_to": ["all"]},
    {"kind": "greendygnn", "seed": 3, "exclude_nodes": [0], "applies_to": None},
], ids=["scenario-all", "scenario-list-all", "greendygnn-null"])
def test_applies_to_all_delays_every_traffic_class(congestion):
    emu = network_from_spec({"preset": "10gbe", "congestion": congestion}, WORKERS,
                            num_epochs=EPOCHS)
    src, dst = _congested_pair(emu, 3)
    extra = _delays(emu, src, dst, clean=0, congested=3)
    assert all(extra[c] >= 0.010 for c in CLASSES), extra
    assert reach_label(congestion) == "all"


@pytest.mark.parametrize("congestion", [
    {"kind": "scenario", "name": "single-link"},
    {"kind": "scenario", "name": "greendygnn"},
    {"kind": "greendygnn", "seed": 3, "exclude_nodes": [0]},
], ids=["scenario-single-link", "scenario-greendygnn", "greendygnn"])
def test_the_default_reach_is_the_dgl_rpc_port_fetch_and_sampling(congestion):
    """GreenDyGNN §V/§VI-A: the tc filter on the DGL RPC port delays DistDGL's feature
    pulls and its sampling requests; gradient sync (port 29500) and every other class are
    spared."""
    emu = network_from_spec({"preset": "10gbe", "congestion": congestion}, WORKERS,
                            num_epochs=EPOCHS)
    assert emu.congested_traffic == frozenset({"fetch", "sampling"})
    assert emu.describe()["congested_traffic"] == ["fetch", "sampling"]
    src, dst = _congested_pair(emu, 3)
    extra = _delays(emu, src, dst, clean=0, congested=3)
    for traffic in (netem.FETCH, netem.SAMPLING):
        assert extra[traffic] >= 0.010, traffic  # 15-25 ms (greendygnn) or 20 ms
    for traffic in set(CLASSES) - {netem.FETCH, netem.SAMPLING}:
        assert extra[traffic] == pytest.approx(0.0, abs=1e-12), traffic
    assert default_congested_traffic(congestion) == list(PAPER_REACH)
    assert reach_label(congestion) == "fetch+sampling"


def test_the_default_configs_congestion_keeps_the_papers_reach():
    config = yaml.safe_load((ROOT / "config.yaml").read_text())
    spec = config["networks"]["10gbe-dilated-single-link"]
    assert "applies_to" not in spec["congestion"]
    emu = network_from_spec(spec, WORKERS, num_epochs=config["training"]["epochs"])
    src, dst = _congested_pair(emu, 1)
    extra = _delays(emu, src, dst, clean=0, congested=1)
    assert extra[netem.SAMPLING] >= 0.019 and extra[netem.FETCH] >= 0.019
    assert extra[netem.ALLREDUCE] == pytest.approx(0.0, abs=1e-12)


def test_reach_label_names_explicit_classes_sorted():
    assert reach_label({"kind": "time", "segments": []}) == "all"  # other kinds: all
    assert reach_label({"kind": "scenario", "name": "clean",
                        "applies_to": ["sampling", "fetch", "fetch"]}) == "fetch+sampling"
    assert reach_label({"kind": "epochs", "table": {}, "applies_to": "allreduce"}) == \
        "allreduce"
