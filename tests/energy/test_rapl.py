"""RAPL meter on a fake powercap sysfs tree (real files in tmp_path)."""

from __future__ import annotations

import pytest

from commgnn.energy import RaplMeter, rapl_available
from commgnn.energy.rapl import rapl_zones

MAX = 262_143_328_850


def _zone(root, name, label, uj, max_uj=MAX):
    d = root / name
    d.mkdir(parents=True)
    (d / "name").write_text(label + "\n")
    (d / "energy_uj").write_text(f"{uj}\n")
    (d / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return d


def _set(zone_dir, uj):
    (zone_dir / "energy_uj").write_text(f"{uj}\n")


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "powercap"
    z = {
        "pkg0": _zone(root, "intel-rapl:0", "package-0", 1_000_000),
        "core0": _zone(root / "intel-rapl:0", "intel-rapl:0:0", "core", 500_000),
        "dram0": _zone(root / "intel-rapl:0", "intel-rapl:0:1", "dram", 2_000_000),
        "pkg1": _zone(root, "intel-rapl:1", "package-1", MAX - 1_000, MAX),
        "psys": _zone(root, "intel-rapl:2", "psys", 7),
    }
    (root / "intel-rapl-mmio:0").mkdir()  # ignored
    return root, z


def test_zone_discovery(tree):
    root, _ = tree
    assert [z.name for z in rapl_zones(root)] == ["package-0", "package-1"]
    assert [z.name for z in rapl_zones(root, include_dram=True)] == [
        "package-0", "dram", "package-1"]
    assert rapl_available(root)
    assert not rapl_available(root / "missing")


def test_reading_and_wraparound(tree):
    root, z = tree
    m = RaplMeter(root, poll_interval_s=None)
    assert m.name == "rapl" and not m.modelled
    m.start()
    assert m.read_joules() == 0.0
    _set(z["pkg0"], 3_500_000)  # +2.5 J
    _set(z["pkg1"], 4_000)  # wrapped: +1_000 (to max) + 4_000 = 5_000 µJ
    assert m.read_joules() == pytest.approx(2.5 + 0.005)
    assert m.wraps == 1
    assert m.read_zones() == pytest.approx({"package-0": 2.5, "package-1": 0.005})
    _set(z["pkg0"], 4_500_000)  # +1 J
    rec = m.record()
    assert rec.meter == "rapl" and rec.joules == pytest.approx(3.505)
    assert rec.parts == pytest.approx({"cpu": 3.505})
    assert rec.as_dict()["energy_meter"] == "rapl"
    final = m.stop()
    assert final == pytest.approx(3.505)
    _set(z["pkg0"], 9_000_000)
    assert m.read_joules() == pytest.approx(3.505)  # frozen after stop


def test_dram_included_on_request(tree):
    root, z = tree
    m = RaplMeter(root, include_dram=True, poll_interval_s=None)
    m.start()
    _set(z["dram0"], 2_250_000)
    _set(z["core0"], 9_999_999)  # core is a sub-zone of the package: never added
    assert m.read_joules() == pytest.approx(0.25)
    m.stop()


def test_poller_catches_wrap_between_reads(tree):
    import time

    root, z = tree
    m = RaplMeter(root, poll_interval_s=0.01)
    m.start()
    _set(z["pkg1"], 0)  # wrapped (+1_000 µJ)
    deadline = time.monotonic() + 5
    while m.wraps == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    _set(z["pkg1"], 2_000)  # +2_000
    assert m.read_joules() == pytest.approx(0.003)
    m.stop()


def test_no_zones_raises(tmp_path):
    with pytest.raises(RuntimeError):
        RaplMeter(tmp_path)
