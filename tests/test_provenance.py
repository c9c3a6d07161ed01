"""Derived artefacts record the fingerprints of what they were made from (dataset →
partition → presample) and loading a stale or pre-provenance one is a StaleInputError
naming it and how to rebuild it (issue 14, item 4). Calibration and policy:
``tests/systems/greendygnn/test_control_provenance.py``."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from commgnn.core.errors import CommgnnError, StaleInputError
from commgnn.data.store import load_dataset, write_dataset
from commgnn.data.synthetic import generate_synthetic
from commgnn.partition import load_partition, partition_graph, write_partition
from commgnn.sampling.presample import check_presample

pytestmark = pytest.mark.timeout(120)


def _meta(directory: Path) -> dict:
    return json.loads((directory / "meta.json").read_text())


def _edit_meta(directory: Path, edit) -> None:
    meta = _meta(directory)
    edit(meta)
    (directory / "meta.json").write_text(json.dumps(meta))


@pytest.fixture(scope="module")
def other_partition(tmp_path_factory) -> Path:
    """A partition of another 600-node dataset: same size as the tiny one, so nothing but
    provenance tells them apart."""
    root = tmp_path_factory.mktemp("other")
    ds = generate_synthetic({"preset": "tiny", "nodes": 600, "seed": 6}, name="tiny")
    write_dataset(ds, root / "dataset")
    write_partition(partition_graph(ds, {"method": "metis", "parts": 2, "seed": 0}),
                    root / "partition")
    return root / "partition"


def test_every_artefact_records_what_it_was_made_from(tiny_inputs, tiny_presampled):
    dataset_dir, partition_dir = tiny_inputs
    dataset = _meta(dataset_dir)["fingerprint"]
    partition = _meta(partition_dir)
    assert partition["dataset"]["fingerprint"] == dataset
    assert load_partition(partition_dir).fingerprint == partition["fingerprint"]
    presample = _meta(tiny_presampled)
    assert presample["dataset"]["fingerprint"] == dataset
    assert presample["partition"]["fingerprint"] == partition["fingerprint"]
    assert len({dataset, partition["fingerprint"], presample["fingerprint"]}) == 3


def test_a_partition_of_another_dataset_is_stale(tiny_inputs, other_partition):
    dataset = load_dataset(tiny_inputs[0])
    load_partition(tiny_inputs[1], dataset=dataset)  # its own dataset: fine
    where = re.escape(str(other_partition))
    with pytest.raises(StaleInputError, match=rf"{where}: stale: made from dataset \w+, but "
                                              rf"dataset 'tiny' is \w+; delete {where} and "
                                              r"rerun snakemake \(rule partition\)"):
        load_partition(other_partition, dataset=dataset)


def test_a_partition_without_a_dataset_fingerprint_names_how_to_rebuild(tiny_inputs,
                                                                        tmp_path):
    old = Path(shutil.copytree(tiny_inputs[1], tmp_path / "partition"))
    _edit_meta(old, lambda meta: meta["dataset"].pop("fingerprint"))
    load_partition(old)  # without a dataset to check against it still loads
    with pytest.raises(StaleInputError, match=r"records no dataset fingerprint .*rule "
                                              r"partition"):
        load_partition(old, dataset=load_dataset(tiny_inputs[0]))


def test_a_run_refuses_a_partition_of_another_dataset(tiny_inputs, other_partition,
                                                      tmp_path, run_on_tiny, make_spec):
    """Same node count: this run used to train silently on a mismatched partition."""
    with pytest.raises(CommgnnError, match="stale: made from dataset"):
        run_on_tiny(tmp_path, (tiny_inputs[0], other_partition), make_spec(epochs=1))
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("edit", "message"), [
    (lambda meta: meta["partition"].update(fingerprint="0" * 64),
     r"stale: made from partition 000000000000, but the run's partition is \w+"),
    (lambda meta: meta["dataset"].pop("fingerprint"), "records no dataset fingerprint"),
], ids=["another-partition", "no-fingerprint"])
def test_a_stale_presample_is_refused(tiny_inputs, tiny_presampled, tmp_path, make_spec,
                                      edit, message):
    stale = Path(shutil.copytree(tiny_presampled, tmp_path / "presample"))
    _edit_meta(stale, edit)
    dataset = load_dataset(tiny_inputs[0])
    partition = load_partition(tiny_inputs[1], dataset=dataset)
    spec = make_spec(epochs=1)
    where = re.escape(str(stale))
    with pytest.raises(StaleInputError, match=rf"{where}: {message}.*rule presample"):
        check_presample(stale, fanouts=spec.get("fanouts"), batch_size=spec.batch_size,
                        base_seed=spec.seed, epochs=1, steps=None, dataset=dataset,
                        partition=partition)


def test_a_run_refuses_a_stale_presample(tiny_inputs, tiny_presampled, tmp_path,
                                         run_on_tiny, make_spec):
    stale = Path(shutil.copytree(tiny_presampled, tmp_path / "presample"))
    _edit_meta(stale, lambda meta: meta["partition"].update(fingerprint="0" * 64))
    spec = make_spec(system="rapidgnn", epochs=1)
    with pytest.raises(CommgnnError, match=rf"{re.escape(str(stale))}: stale: made from partition"):
        run_on_tiny(tmp_path, tiny_inputs, spec, presample=stale)
