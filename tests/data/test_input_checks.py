"""Bad inputs are refused where they are loaded, with one line naming the file and the
value (issue 14, item 3): node ids out of range, dtypes, shapes, NaN/Inf features. A bad
id used to reach the numba sampler and kill a worker with SIGSEGV and no message."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from commgnn.core.errors import CommgnnError
from commgnn.data.store import DatasetError, load_dataset, write_dataset
from commgnn.data.synthetic import generate_synthetic

pytestmark = pytest.mark.timeout(120)


@pytest.fixture()
def dataset_copy(tiny_inputs, tmp_path) -> Path:
    """A private copy of the tiny dataset (the session fixture is never modified)."""
    return Path(shutil.copytree(tiny_inputs[0], tmp_path / "dataset"))


def _tamper(directory: Path, key: str, change) -> None:
    """Rewrite ``<key>.npy`` with ``change`` applied (same shape and dtype, so only its
    checksum, not checked by default, could tell)."""
    array = np.load(directory / f"{key}.npy")
    change(array)
    np.save(directory / f"{key}.npy", array)


def _set(index, value):
    def change(array):
        array[index] = value
    return change


@pytest.mark.parametrize(("key", "change", "message"), [
    ("indices", _set(5, 10**9), r"indices\.npy: indices out of range \[0, 600\): .*max 1000000000"),
    ("indices", _set(5, -3), r"indices\.npy: indices out of range \[0, 600\): min -3"),
    ("train_idx", _set(-1, 600), r"train_idx\.npy: train_idx node ids out of range"),
    ("test_idx", _set(0, -1), r"test_idx\.npy: test_idx node ids out of range"),
    ("labels", _set(0, 99), r"labels\.npy: labels out of range"),
    ("indptr", _set(3, 10**6), r"indptr\.npy"),
    ("features", _set((3, 1), np.nan), r"features\.npy: non-finite feature .* row 3"),
    ("features", _set((7, 0), -np.inf), r"features\.npy: non-finite feature .* row 7"),
])
def test_a_bad_array_is_named_at_load(dataset_copy, key, change, message):
    _tamper(dataset_copy, key, change)
    with pytest.raises(DatasetError, match=message) as info:
        load_dataset(dataset_copy)
    assert "\n" not in str(info.value)
    assert "rule dataset" in str(info.value)  # how to rebuild it


def test_a_wrong_dtype_is_named_even_when_meta_json_agrees(dataset_copy):
    indices = np.load(dataset_copy / "indices.npy").astype(np.float64)
    np.save(dataset_copy / "indices.npy", indices)
    meta = json.loads((dataset_copy / "meta.json").read_text())
    meta["files"]["indices"]["dtype"] = "float64"
    (dataset_copy / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(DatasetError, match=r"indices\.npy: dtype float64, expected int64"):
        load_dataset(dataset_copy)


@pytest.mark.parametrize("bad", [np.nan, np.inf, 1e39])  # 1e39 overflows float32 to Inf
def test_non_finite_features_are_never_written(tmp_path, bad):
    ds = generate_synthetic({"preset": "tiny", "nodes": 200, "seed": 1}, name="t")
    features = np.array(ds.features, dtype=np.float64)
    features[11, 2] = bad
    ds = dataclasses.replace(ds, features=features)
    with pytest.raises(DatasetError, match=r"features\.npy: non-finite feature .* row 11"):
        write_dataset(ds, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_written_meta_json_records_the_fingerprint(dataset_copy):
    meta = json.loads((dataset_copy / "meta.json").read_text())
    assert len(meta["fingerprint"]) == 64
    assert load_dataset(dataset_copy).fingerprint == meta["fingerprint"]


def test_out_of_range_ids_fail_a_real_run_with_a_named_error(dataset_copy, tiny_inputs,
                                                              tmp_path, run_on_tiny,
                                                              make_spec):
    """This used to kill a worker with SIGSEGV inside the numba sampler, no message."""
    _tamper(dataset_copy, "indices", _set(100, 10**9))
    with pytest.raises(CommgnnError, match=r"indices\.npy: indices out of range") as info:
        run_on_tiny(tmp_path, (dataset_copy, tiny_inputs[1]), make_spec(epochs=1))
    assert "SIGSEGV" not in str(info.value)
    assert not (tmp_path / "run").exists()
