"""Time dilation in a run: the factor, raw and dilated times in the records."""

from __future__ import annotations

import json

import pytest

from commgnn.core.config import ConfigError, validate

pytestmark = pytest.mark.timeout(300)


def _epochs(out):
    return [json.loads(line) for line in (out / "epochs.jsonl").read_text().splitlines()]


def test_fixed_dilation_divides_every_reported_time(tiny_inputs, tmp_path, run_on_tiny,
                                                    make_spec):
    out = run_on_tiny(tmp_path, tiny_inputs,
                      make_spec(network={"preset": "10gbe", "time_dilation": 4}))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["time_dilation"] == 4.0
    assert summary["mean_epoch_time_s"] == pytest.approx(summary["mean_epoch_time_raw_s"] / 4)
    assert summary["epoch_times_s"] == pytest.approx([t / 4 for t in
                                                      summary["epoch_times_raw_s"]])
    assert summary["total_time_s"] >= sum(summary["epoch_times_s"])
    assert all(e["time_dilation"] == 4.0 for e in _epochs(out))
    assert summary["network_s_per_step"] > 0 and summary["fetch_mb_per_step"] > 0


def test_auto_dilation_is_the_probe_over_the_reference(tiny_inputs, tmp_path, run_on_tiny,
                                                       make_spec):
    network = {"preset": "none", "time_dilation": "auto", "reference_step_ms": 0.5}
    out = run_on_tiny(tmp_path, tiny_inputs, make_spec(network=network, epochs=1))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["reference_step_s"] == 0.0005
    assert summary["reference_step_source"] == "config"
    # no workload probe given (commgnn train alone): the run's own probe sets f
    assert summary["time_dilation_source"] == "run probe"
    assert summary["compute_step_probe_s"] == summary["run_compute_step_probe_s"] > 0
    assert summary["time_dilation"] == max(1.0, summary["compute_step_probe_s"] / 0.0005)
    assert summary["time_dilation_distance"] == 0.0
    assert summary["workload"] == ("sage-2 h16 fan-outs 5x5 batch 64 on tiny (600 nodes), "
                                   "2 workers")


def test_a_reference_is_derived_from_the_family_or_none(tiny_inputs, tmp_path, run_on_tiny,
                                                         make_spec):
    """No reference in the config: SAGE-2 of hidden 16 has measured relatives in the table,
    so its reference is derived by the named rule; GAT-2 with 4 heads of 16 has none, so
    the run is undilated (f = 1) and its summary says so."""
    from dataclasses import replace

    from commgnn.train.references import DERIVATION_RULE

    network = {"preset": "10gbe", "time_dilation": "auto"}
    out = run_on_tiny(tmp_path, tiny_inputs, make_spec(network=network, epochs=1))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["reference_step_source"] == "derived"
    assert summary["reference_step_rule"] == DERIVATION_RULE
    assert summary["reference_step_device"] == "NVIDIA H100 80GB HBM3"
    assert summary["time_dilation"] == max(1.0, summary["compute_step_probe_s"]
                                           / summary["reference_step_s"])
    # derived from the probe batches' rows averaged over the workers: one f on every worker
    assert {w["time_dilation"] for e in _epochs(out) for w in e["workers"]} == \
        {summary["time_dilation"]}
    gat = replace(make_spec(network=network, epochs=1), model="gat")
    out = run_on_tiny(tmp_path, tiny_inputs, gat, name="gat")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["reference_step_source"] == "none"
    assert summary["reference_step_s"] is None
    assert summary["time_dilation"] == 1.0
    assert summary["mean_epoch_time_s"] == summary["mean_epoch_time_raw_s"]


def test_every_run_of_a_workload_divides_by_its_probe(tiny_inputs, tmp_path, run_on_tiny,
                                                      make_spec):
    """One clock per workload: the probe (``commgnn dilation``) measured once, then two
    systems on it get the same f — each still records its own probe and the distance."""
    from commgnn.systems.registry import get_system
    from commgnn.train.dilation import probe_workload
    from commgnn.train.loop import RunPaths, run
    from commgnn.train.workload import host_identity

    network = {"preset": "10gbe", "time_dilation": "auto", "reference_step_ms": 0.25}
    probe_file = tmp_path / "probe.json"
    probe = probe_workload(make_spec(network=network), str(tiny_inputs[0]), str(probe_file),
                           steps=6)
    assert probe["host"] == host_identity(2)
    assert probe["steps"] == 6 and len(probe["worker_median_s"]) == 2
    assert probe["probe_s"] == max(probe["worker_median_s"]) > 0
    assert probe["workload"] == ("sage-2 h16 fan-outs 5x5 batch 64 on tiny (600 nodes), "
                                 "2 workers")
    assert probe["reference"]["source"] == "derived"  # from the measured SAGE-2 h16s
    factors = set()
    for system in ("default", "oracle"):
        spec = make_spec(system=system, network=network, epochs=1)
        out = tmp_path / system
        run(spec, RunPaths(dataset=str(tiny_inputs[0]), partition=str(tiny_inputs[1]),
                           out=str(out), checkpoints=str(tmp_path / f"{system}-ckpt"),
                           dilation=str(probe_file)), get_system(system))
        summary = json.loads((out / "summary.json").read_text())
        assert summary["time_dilation_source"] == "workload probe"
        assert summary["compute_step_probe_s"] == probe["probe_s"]
        assert summary["time_dilation"] == max(1.0, probe["probe_s"] / 0.00025)
        run_f = max(1.0, summary["run_compute_step_probe_s"] / 0.00025)
        assert summary["time_dilation_run"] == run_f
        assert summary["time_dilation_distance"] == pytest.approx(
            run_f / summary["time_dilation"] - 1)
        factors.add(summary["time_dilation"])
    assert len(factors) == 1


def test_a_probe_from_another_host_is_not_used(tiny_inputs, tmp_path, run_on_tiny,
                                               make_spec):
    from commgnn.systems.registry import get_system
    from commgnn.train.loop import RunPaths, run

    network = {"preset": "none", "time_dilation": "auto", "reference_step_ms": 0.25}
    probe_file = tmp_path / "probe.json"
    key = _key(tiny_inputs, make_spec(network=network))
    probe_file.write_text(json.dumps({"probe_s": 123.0, "host": {"cpu": "other"},
                                      "workload_key": key}))
    out = tmp_path / "run"
    spec = make_spec(network=network, epochs=1)
    run(spec, RunPaths(dataset=str(tiny_inputs[0]), partition=str(tiny_inputs[1]), out=str(out),
                       checkpoints=str(tmp_path / "ckpt"), dilation=str(probe_file)),
        get_system(spec.base_system))
    summary = json.loads((out / "summary.json").read_text())
    assert summary["time_dilation_source"] == "run probe"
    assert summary["compute_step_probe_s"] == summary["run_compute_step_probe_s"] != 123.0


def _key(tiny_inputs, spec):
    from commgnn.train.workload import Workload, dataset_shape_of, step_workload

    return Workload(step_workload(spec, dataset_shape_of(tiny_inputs[0])), spec.workers).key


def test_a_bad_or_foreign_probe_file_is_refused_naming_it(tiny_inputs, tmp_path, make_spec):
    from dataclasses import replace

    from commgnn.core.errors import InputError
    from commgnn.train.loop import RunPaths, _workload_probe

    bad = tmp_path / "probe.json"
    paths = RunPaths(dataset=str(tiny_inputs[0]), partition="p", out="o", checkpoints="c",
                     dilation=str(bad))
    for text in ("{}", '{"probe_s": null, "host": {}}', '{"probe_s": 0, "host": {}}', "[1]"):
        bad.write_text(text)
        with pytest.raises(InputError, match=r"probe\.json: not a workload probe"):
            _workload_probe(paths)
    spec = make_spec()
    bad.write_text(json.dumps({"probe_s": 0.1, "host": {}, "workload_key": _key(tiny_inputs,
                                                                                  spec)}))
    assert _workload_probe(paths, spec)["probe_s"] == 0.1
    other = replace(spec, batch_size=32)  # another workload: its own probe, not this one
    with pytest.raises(InputError, match=r"probe\.json: the probe of workload .*, this "
                                         r"run's is"):
        _workload_probe(paths, other)


def test_time_dilation_values_are_checked():
    config = {"datasets": {"t": {"source": "synthetic"}},
              "partitionings": {"m": {"method": "metis", "parts": 2}},
              "networks": {"slow": {"preset": "10gbe", "time_dilation": "auto"}}}
    validate(config)  # auto needs no reference_step_ms: the workload's own is used
    config["networks"]["slow"]["time_dilation"] = 0.5
    with pytest.raises(ConfigError, match=r"config\.networks\.slow\.time_dilation"):
        validate(config)


def test_every_run_of_a_workload_names_one_probe_spec(make_spec):
    """The probe's settings are the workload's alone: system, partitioning, network, seed
    and the settings the probe never reads do not change them; the model does."""
    from commgnn.train.workload import Workload, probe_spec, step_workload

    one = make_spec(network={"preset": "10gbe", "time_dilation": "auto"})
    other = make_spec(system="hopgnn", epochs=9, network="1gbe",
                      system_options={"mode": "naive"}, eval_max_nodes=7)
    other = type(other)(**{**other.__dict__, "seed": 3, "partitioning": "random2"})
    assert probe_spec(one).to_json() == probe_spec(other).to_json()
    probe = probe_spec(one)
    assert (probe.seed, probe.system, probe.system_options) == (0, "probe", {})
    assert probe.get("fanouts") == [5, 5] and probe.get("lr") == 0.01
    assert probe.get("collective_timeout_s") == 20 and probe.get("device") == "cpu"
    shape = {"source": "synthetic", "preset": "tiny"}
    assert Workload(step_workload(probe, shape), 2).key == \
        Workload(step_workload(one, shape), 2).key
    assert probe_spec(make_spec(hidden=32)).to_json() != probe.to_json()
