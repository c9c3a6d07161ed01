"""GreenDyGNN's calibration and policy record what they were derived from (dataset →
partition → presample → calibration → policy); a stale or pre-provenance one is refused
with a StaleInputError naming it and how to rebuild it (issue 14, item 4)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from control_toys import toy_calibration

from commgnn.core.errors import CommgnnError, InputError, StaleInputError
from commgnn.data.store import load_dataset
from commgnn.partition import load_partition
from commgnn.systems.greendygnn.calibrate import input_fingerprints, validate
from commgnn.systems.greendygnn.costmodel import calibration_fingerprint, read_calibration
from commgnn.systems.greendygnn.dqn import load_policy
from commgnn.systems.greendygnn.policy import check_pipeline_policy, train_policy
from commgnn.systems.greendygnn.system import GreenDyGNNSystem
from commgnn.train.loop import RunPaths, run

pytestmark = pytest.mark.timeout(120)

#: A few seconds of DQN training: only the metadata matters here.
TINY_DQN = {"episodes": 2, "episode_epochs": 2, "hidden": [4], "warmup": 1, "batch_size": 2,
            "eval_profiles": 1}


@pytest.fixture(scope="module")
def paths(tiny_inputs, tiny_presampled) -> dict[str, str]:
    return {"dataset": str(tiny_inputs[0]), "partition": str(tiny_inputs[1]),
            "presample": str(tiny_presampled)}


def _meta(directory: str | Path) -> dict:
    return json.loads((Path(directory) / "meta.json").read_text())


def _calibration(inputs: dict | None) -> dict:
    cal = toy_calibration(steps=4)
    if inputs is not None:
        cal["inputs"] = dict(inputs)
    return cal


def _policy(directory: Path, inputs: dict | None) -> Path:
    train_policy(_calibration(inputs), directory, dict(TINY_DQN))
    return directory / "policy.pt"


def test_input_fingerprints_are_those_the_artefacts_record(paths):
    assert input_fingerprints(paths) == {
        "dataset": _meta(paths["dataset"])["fingerprint"],
        "partition": _meta(paths["partition"])["fingerprint"],
        "presample": _meta(paths["presample"])["fingerprint"]}


def test_calibrating_on_a_presample_of_another_partition_is_refused(paths, tmp_path):
    stale = Path(shutil.copytree(paths["presample"], tmp_path / "presample"))
    meta = _meta(stale)
    meta["partition"]["fingerprint"] = "f" * 64
    (stale / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(StaleInputError, match=r"stale: made from partition fffffffffff.*"
                                              r"rule presample"):
        input_fingerprints({**paths, "presample": str(stale)})


def test_a_calibration_file_without_input_fingerprints_names_how_to_rebuild(paths, tmp_path):
    directory = tmp_path / "calibration"
    directory.mkdir()
    (directory / "calibration.json").write_text(json.dumps(_calibration(None)))
    with pytest.raises(StaleInputError, match=rf"calibration\.json: records no input "
                                              rf"fingerprints .*delete {re.escape(str(directory))}"
                                              r" and rerun snakemake \(rule calibrate\)"):
        read_calibration(directory / "calibration.json")
    (directory / "calibration.json").write_text(json.dumps(_calibration(input_fingerprints(
        paths))))
    assert read_calibration(directory / "calibration.json").path == directory / \
        "calibration.json"


def test_a_stale_calibration_is_refused_before_any_validation_run(paths, tmp_path,
                                                                  make_spec):
    directory = tmp_path / "calibration"
    directory.mkdir()
    other = {**input_fingerprints(paths), "presample": "e" * 64}
    (directory / "calibration.json").write_text(json.dumps(_calibration(other)))
    calibration = read_calibration(directory / "calibration.json")
    out = tmp_path / "validation"
    with pytest.raises(StaleInputError, match=r"calibration\.json: stale: made from presample "
                                              r"eeeeeeeeeeee, but .* is \w+; .*rule calibrate"):
        validate(make_spec(system="greendygnn"), paths, calibration, out)
    assert not out.exists()


def test_a_policy_records_its_calibration_and_inputs(paths, tmp_path):
    inputs = input_fingerprints(paths)
    policy = _policy(tmp_path, inputs)
    _, metadata = load_policy(policy)
    assert metadata["inputs"] == {**inputs,
                                  "calibration": calibration_fingerprint(_calibration(inputs))}
    dataset = load_dataset(paths["dataset"])
    check_pipeline_policy(tmp_path, dataset, load_partition(paths["partition"]))


@pytest.mark.parametrize(("inputs", "message"), [
    ({"dataset": "d" * 64, "partition": "p"}, r"stale: made from dataset dddddddddddd"),
    (None, "records no dataset fingerprint"),
], ids=["another-dataset", "no-fingerprint"])
def test_a_stale_pipeline_policy_is_refused(paths, tmp_path, inputs, message):
    policy = _policy(tmp_path / "control" / "policy", inputs)
    dataset = load_dataset(paths["dataset"])
    with pytest.raises(StaleInputError, match=rf"policy\.pt: {message}.*and rerun snakemake "
                                              r"\(rules calibrate, train_policy\)"):
        check_pipeline_policy(policy, dataset, load_partition(paths["partition"]))


def test_a_corrupt_pipeline_policy_names_how_to_rebuild(paths, tmp_path):
    (tmp_path / "policy.pt").write_bytes(b"not a policy")
    with pytest.raises(InputError, match=r"policy\.pt: not a readable policy file.*rule"):
        check_pipeline_policy(tmp_path, load_dataset(paths["dataset"]),
                              load_partition(paths["partition"]))


def test_a_dqn_run_refuses_a_stale_pipeline_policy(tiny_inputs, tiny_presampled, tmp_path,
                                                   make_spec):
    policy_dir = tmp_path / "control" / "policy"
    _policy(policy_dir, {"dataset": "d" * 64, "partition": "p" * 64})
    spec = make_spec(system="greendygnn", epochs=1,
                     system_options={"controller": "dqn", "cache_rows": 40, "window": 2})
    with pytest.raises(CommgnnError, match=r"policy\.pt: stale: made from dataset"):
        run(spec, RunPaths(dataset=str(tiny_inputs[0]), partition=str(tiny_inputs[1]),
                           out=str(tmp_path / "run"), checkpoints=str(tmp_path / "ckpt"),
                           inputs={"presample": str(tiny_presampled),
                                   "policy": str(policy_dir)}), GreenDyGNNSystem)
    assert not (tmp_path / "run").exists()


def test_a_policy_trained_on_another_calibration_is_refused(paths, tmp_path):
    """The pipeline's layout: ``control/calibration`` beside ``control/policy``; a policy
    must have been trained on that calibration as it is now."""
    inputs = input_fingerprints(paths)
    policy = _policy(tmp_path / "control" / "policy", inputs)
    calibration = tmp_path / "control" / "calibration" / "calibration.json"
    calibration.parent.mkdir()
    calibration.write_text(json.dumps(_calibration(inputs)))
    dataset, partition = load_dataset(paths["dataset"]), load_partition(paths["partition"])
    check_pipeline_policy(policy, dataset, partition)  # the one it was trained on
    rebuilt = _calibration(inputs)
    rebuilt["workload"] = {**rebuilt["workload"], "note": "recalibrated"}
    calibration.write_text(json.dumps(rebuilt))
    with pytest.raises(StaleInputError, match=rf"policy\.pt: stale: made from calibration "
                                              rf".*but {re.escape(str(calibration))} is "):
        check_pipeline_policy(policy, dataset, partition)
