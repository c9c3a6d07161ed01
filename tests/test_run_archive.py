"""benchmarks/run_archive.py: a run's records and a control directory go into the archive
(``.jsonl`` gzipped) and come back byte for byte; an unfinished run is refused, naming it,
with nothing written."""

from __future__ import annotations

import gzip
import importlib
import itertools
import json
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
archive = importlib.import_module("run_archive")


def _run_dir(root: Path) -> Path:
    run = root / "runs" / "dgl" / "toy" / "metis2" / "sage_b8_10gbe_s0"
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps({"system": "default", "workers": 2}))
    (run / "epochs.jsonl").write_text('{"epoch": 0, "time_s": 1.5}\n')
    for rank in range(2):
        (run / f"steps_w{rank}.jsonl").write_text(
            "".join(json.dumps({"step": s, "rank": rank}) + "\n" for s in range(50)))
    (run / "train.log").write_text("not archived\n")
    return run


def test_save_then_restore_gives_the_same_bytes(tmp_path):
    results = tmp_path / "bench-toy"
    run = _run_dir(results)
    policy = results / "control" / "toy" / "metis2" / "sage_b8_congested" / "policy"
    policy.mkdir(parents=True)
    (policy / "training.json").write_text('{"episodes": 3}')
    (policy / "nested").mkdir()
    (policy / "nested" / "trace.jsonl").write_text('{"e": 0}\n')
    root = tmp_path / "archive"

    written = archive.save(results, [run, policy], root)

    stored = root / "bench-toy"
    names = sorted(str(p.relative_to(stored)) for p in written)
    assert names == sorted([
        "runs/dgl/toy/metis2/sage_b8_10gbe_s0/summary.json",
        "runs/dgl/toy/metis2/sage_b8_10gbe_s0/epochs.jsonl.gz",
        "runs/dgl/toy/metis2/sage_b8_10gbe_s0/steps_w0.jsonl.gz",
        "runs/dgl/toy/metis2/sage_b8_10gbe_s0/steps_w1.jsonl.gz",
        "control/toy/metis2/sage_b8_congested/policy/training.json",
        "control/toy/metis2/sage_b8_congested/policy/nested/trace.jsonl.gz",
    ])
    packed = stored / "runs/dgl/toy/metis2/sage_b8_10gbe_s0/steps_w1.jsonl.gz"
    assert gzip.decompress(packed.read_bytes()) == (run / "steps_w1.jsonl").read_bytes()
    # same records => same archive bytes (gzip's header carries no time)
    again = archive.save(results, [run], tmp_path / "archive2")
    assert (again[2].read_bytes()
            == (stored / "runs/dgl/toy/metis2/sage_b8_10gbe_s0/steps_w0.jsonl.gz").read_bytes())

    fresh = tmp_path / "fresh" / "bench-toy"
    restored = archive.restore(stored, fresh)
    assert len(restored) == 6
    for original in [*run.glob("*.json*"), *policy.rglob("*.json*")]:
        twin = fresh / original.relative_to(results)
        assert twin.read_bytes() == original.read_bytes()
    assert not (fresh / run.relative_to(results) / "train.log").exists()
    assert not list(fresh.rglob("*.partial"))


def test_an_unfinished_run_is_refused_and_nothing_is_written(tmp_path):
    results = tmp_path / "bench-toy"
    done = _run_dir(results)
    unfinished = results / "runs" / "dgl" / "toy" / "metis2" / "sage_b8_10gbe_s1"
    unfinished.mkdir(parents=True)
    (unfinished / "steps_w0.jsonl").write_text("{}\n")
    root = tmp_path / "archive"
    with pytest.raises(SystemExit, match=re.escape("sage_b8_10gbe_s1: no summary.json")):
        archive.save(results, [done, unfinished], root)
    assert not root.exists()
    with pytest.raises(SystemExit, match="not under the results directory"):
        archive.save(results, [tmp_path], root)


def _probe(results: Path, probe_s: float, key: str = "abc-w2") -> Path:
    path = results / "dilation" / "toy" / f"{key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"workload_key": key, "probe_s": probe_s,
                                "host": {"cpu": "x"}, "reference": {"step_s": 0.002}}))
    return path


def test_the_clock_goes_with_the_runs_and_comes_back_first(tmp_path):
    results = tmp_path / "bench-toy"
    run = _run_dir(results)
    probe = _probe(results, 0.2)
    root = tmp_path / "archive"
    written = archive.save(results, [run], root)
    assert root / "bench-toy" / "dilation" / "toy" / "abc-w2.json" in written

    # a fresh machine measures another probe; restoring puts the campaign's back, first
    fresh = tmp_path / "fresh" / "bench-toy"
    _probe(fresh, 0.3)
    restored = archive.restore(root / "bench-toy", fresh)
    assert restored[0] == fresh / "dilation" / "toy" / "abc-w2.json"
    assert json.loads(restored[0].read_text())["probe_s"] == 0.2
    assert all(restored[0].stat().st_mtime_ns <= p.stat().st_mtime_ns for p in restored)

    # saving runs made on another clock is refused, naming the probe, nothing written
    probe.write_text(probe.read_text().replace("0.2", "0.3"))
    other = results / "runs" / "dgl" / "toy" / "metis2" / "sage_b8_10gbe_s9"
    other.mkdir()
    (other / "summary.json").write_text("{}")
    with pytest.raises(SystemExit, match=r"abc-w2\.json: probe_s 0\.3, the archive's clock"):
        archive.save(results, [other], root)
    assert not (root / "bench-toy" / other.relative_to(results)).exists()


def _archived_run(stored: Path, name: str, key: str, probe_s: float) -> None:
    run = stored / "runs" / "dgl" / "toy" / "metis2" / name
    run.mkdir(parents=True)
    (run / "summary.json").write_text(json.dumps({
        "workload_key": key, "compute_step_probe_s": probe_s,
        "time_dilation_source": "workload probe"}))


def test_clock_rebuilds_the_probe_the_archived_runs_divided_by(tmp_path):
    stored = tmp_path / "archive" / "bench-toy"
    for seed in range(2):
        _archived_run(stored, f"sage_b8_10gbe_s{seed}", "abc-w2", 0.2)
    results = tmp_path / "bench-toy"
    _probe(results, 0.3)                       # this machine's measurement
    _probe(results, 0.5, key="new-w2")         # a workload no archived run used

    written = archive.clock(stored, results)

    assert sorted(p.name for p in written) == ["abc-w2.json", "new-w2.json"]
    rebuilt = json.loads((results / "dilation/toy/abc-w2.json").read_text())
    assert rebuilt["probe_s"] == 0.2 and rebuilt["probe_s_measured_here"] == 0.3
    assert rebuilt["host"] == {"cpu": "x"}
    assert (stored / "dilation/toy/abc-w2.json").read_bytes() == \
        (results / "dilation/toy/abc-w2.json").read_bytes()
    assert json.loads((stored / "dilation/toy/new-w2.json").read_text())["probe_s"] == 0.5
    assert archive.clock(stored, results) == []   # archived already: left as it is


def test_clock_refuses_runs_on_two_clocks(tmp_path):
    stored = tmp_path / "archive" / "bench-toy"
    _archived_run(stored, "sage_b8_10gbe_s0", "abc-w2", 0.2)
    _archived_run(stored, "sage_b8_10gbe_s1", "abc-w2", 0.15)
    results = tmp_path / "bench-toy"
    _probe(results, 0.3)
    with pytest.raises(SystemExit, match=r"abc-w2 divided by different probes 0\.15 \(1 runs\), "
                                         r"0\.2 \(1 runs\): no one clock; pick one with "
                                         r"--probe-s abc-w2=SECONDS"):
        archive.clock(stored, results)
    assert not (stored / "dilation").exists()


def test_clock_keeps_the_probe_chosen_among_two_and_refuses_one_no_run_used(tmp_path):
    stored = tmp_path / "archive" / "bench-toy"
    for seed in range(3):
        _archived_run(stored, f"sage_b8_10gbe_s{seed}", "abc-w2", 0.2)
    _archived_run(stored, "sage_b8_10gbe_s3", "abc-w2", 0.15)   # a fresh machine's clock
    results = tmp_path / "bench-toy"
    _probe(results, 0.3)

    for bad, message in ((["--probe-s", "abc-w2=0.25"], r"abc-w2=0\.25 is no probe the runs "
                                                        r"of that workload divided by: 0\.15 "
                                                        r"\(1 runs\), 0\.2 \(3 runs\)"),
                         (["--probe-s", "xyz-w2=0.2"], r"names workload xyz-w2, which no "
                                                       r"archived run used")):
        with pytest.raises(SystemExit, match=message):
            archive.main(["clock", str(stored), str(results), *bad])
        assert not (stored / "dilation").exists()
    with pytest.raises(SystemExit):                     # argparse: not KEY=SECONDS
        archive.main(["clock", str(stored), str(results), "--probe-s", "0.2"])

    assert archive.main(["clock", str(stored), str(results),
                         "--probe-s", "abc-w2=0.2000000000001"]) == 0
    rebuilt = json.loads((stored / "dilation/toy/abc-w2.json").read_text())
    assert rebuilt["probe_s"] == 0.2 and rebuilt["probe_s_measured_here"] == 0.3
    assert rebuilt["probe_s_source"] == ("compute_step_probe_s of 3 of the 4 archived runs "
                                         "(chosen with --probe-s)")
    # runs saved from now on divide by the chosen clock: saving is not refused
    run = _run_dir(results)
    assert any(p.name == "summary.json" for p in archive.save(results, [run], tmp_path / "archive"))


def test_save_refuses_a_fresh_probe_other_than_the_archived_runs_one(tmp_path):
    root = tmp_path / "archive"
    _archived_run(root / "bench-toy", "sage_b8_10gbe_s5", "abc-w2", 0.2)
    results = tmp_path / "bench-toy"
    run = _run_dir(results)
    _probe(results, 0.3)                      # a fresh machine's, `clock` not run
    with pytest.raises(SystemExit, match=r"abc-w2\.json: probe_s 0\.3, the archived runs "
                                         r"of its workload divided by \[0\.2\]; run `clock`"):
        archive.save(results, [run], root)
    assert not (root / "bench-toy" / "dilation").exists()
    assert not (root / "bench-toy" / run.relative_to(results)).exists()


def test_restore_gives_files_strictly_increasing_times_in_dependency_order(tmp_path):
    stored = tmp_path / "archive" / "bench-toy"
    control = stored / "control" / "toy" / "metis2" / "sage_b8_10gbe"
    for name in ("calibration", "policy"):
        (control / name).mkdir(parents=True)
        for i in range(20):                    # one burst: the kernel's clock would tie them
            (control / name / f"f{i:02d}.json").write_text("{}")
    (stored / "dilation" / "toy").mkdir(parents=True)
    (stored / "dilation" / "toy" / "abc-w2.json").write_text("{}")
    results = tmp_path / "bench-toy"
    record = results / "benchmarks" / "control" / "toy" / "metis2" / "sage_b8_10gbe" / "p.tsv"
    record.parent.mkdir(parents=True)
    record.write_text("s\n1.0\n")            # the policy job's, from before the restore
    marker = results / control.relative_to(stored) / "policy" / ".snakemake_timestamp"
    marker.parent.mkdir(parents=True)
    marker.write_text("")                       # the policy job's, not archived: it was older
    written = archive.restore(stored, results)
    times = [p.stat().st_mtime_ns for p in written]
    assert record.stat().st_mtime_ns > max(times)
    assert marker.stat().st_mtime_ns == max(p.stat().st_mtime_ns for p in written
                                            if p.parent.name == "policy")
    assert written[0].name == "abc-w2.json"
    # the restore's own clock, not the kernel's coarse one: 1 µs apart, in the order written
    assert all(b - a == 1000 for a, b in itertools.pairwise(times))
    # a directory output is as new as its newest entry: the calibration's, the directory
    # itself included, is older than anything of the policy's
    calibration = control / "calibration"
    calibration_times = [p.stat().st_mtime_ns for p in (results / calibration.relative_to(
        stored)).rglob("*")] + [(results / calibration.relative_to(stored)).stat().st_mtime_ns]
    policy = [p.stat().st_mtime_ns for p in written if p.parent.name == "policy"]
    assert max(calibration_times) < min(policy)


def _cpu_probe(results: Path, probe_s: float, cpu: dict, workers: int | None = None) -> Path:
    path = results / "dilation" / "toy" / "abc-w2.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"workload_key": "abc-w2", "probe_s": probe_s, "host": cpu}
    path.write_text(json.dumps(record if workers is None else {**record, "workers": workers}))
    return path


def test_each_cpu_keeps_its_own_clock(tmp_path, capsys):
    intel, amd = {"cpu": "Intel Xeon", "threads_per_worker": 1}, {"cpu": "AMD EPYC",
                                                                   "threads_per_worker": 1}
    root = tmp_path / "archive"
    stored = root / "bench-toy"
    first = tmp_path / "first" / "bench-toy"
    _cpu_probe(first, 0.9, intel)
    archive.save(first, [_run_dir(first)], root)

    # a machine of another CPU keeps its own probe (the campaign's would not be its clock)
    other = tmp_path / "other" / "bench-toy"
    mine = _cpu_probe(other, 0.7, amd).read_bytes()
    archive.restore(stored, other)
    assert (other / "dilation/toy/abc-w2.json").read_bytes() == mine
    assert "measured on {'cpu': 'Intel Xeon'" in capsys.readouterr().err
    run = other / "runs" / "dgl" / "toy" / "metis2" / "sage_b8_10gbe_s1"
    run.mkdir(parents=True)
    (run / "summary.json").write_text("{}")
    written = archive.save(other, [run], root)
    amd_clock = stored / "clock-hosts" / "amd-epyc-t1" / "dilation" / "toy" / "abc-w2.json"
    assert amd_clock in written and amd_clock.read_bytes() == mine
    assert json.loads((stored / "dilation/toy/abc-w2.json").read_text())["probe_s"] == 0.9

    # each later machine gets its CPU's clock back; the CPU directory is not restored as is
    for cpu, expected in ((amd, 0.7), (intel, 0.9)):
        later = tmp_path / f"later-{expected}" / "bench-toy"
        _cpu_probe(later, 0.5, cpu)
        archive.restore(stored, later)
        assert json.loads((later / "dilation/toy/abc-w2.json").read_text())["probe_s"] == expected
        assert not (later / "clock-hosts").exists()
    # a probe of that CPU other than its archived clock is refused, naming the CPU's clock
    _cpu_probe(other, 0.6, amd)
    with pytest.raises(SystemExit, match=r"probe_s 0\.6, the archive's clock .*amd-epyc-t1"):
        archive.save(other, [run], root)


def test_restore_without_a_fresh_probe_picks_this_machines_cpu(tmp_path, capsys):
    stored = tmp_path / "archive" / "bench-toy"
    here = archive.host_identity(2)
    _cpu_probe(stored, 0.9, {"cpu": "another CPU", "threads_per_worker": 1}, workers=2)
    alternate = stored / "clock-hosts" / archive.host_slug(here)
    _cpu_probe(alternate, 0.4, here, workers=2)
    results = tmp_path / "bench-toy"
    written = archive.restore(stored, results)
    assert written == [results / "dilation/toy/abc-w2.json"]
    assert json.loads(written[0].read_text())["probe_s"] == 0.4

    (alternate / "dilation/toy/abc-w2.json").unlink()       # no clock of this CPU archived
    fresh = tmp_path / "fresh" / "bench-toy"
    assert archive.restore(stored, fresh) == []
    assert not (fresh / "dilation").exists()                  # the setup measures its own
    assert "not on this machine's CPU" in capsys.readouterr().err
