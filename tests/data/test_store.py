"""The common on-disk format: round trip, atomic writes, and clear errors on bad files."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from commgnn.data.store import (
    DatasetError,
    GraphDataset,
    load_dataset,
    symmetrize_csr,
    write_dataset,
)
from commgnn.data.synthetic import generate_synthetic


@pytest.fixture()
def written(tmp_path):
    ds = generate_synthetic({"preset": "tiny", "nodes": 300, "seed": 1}, name="t")
    return ds, write_dataset(ds, tmp_path / "ds", source={"preset": "tiny"})


def test_round_trip_is_exact_and_memory_mapped(written):
    ds, path = written
    back = load_dataset(path, verify_checksums=True)
    assert isinstance(back.features, np.memmap)
    for key in ("indptr", "indices", "features", "labels", "train_idx", "val_idx", "test_idx"):
        assert np.array_equal(getattr(ds, key), getattr(back, key)), key
    meta = json.loads((path / "meta.json").read_text())
    assert meta["stats"]["num_nodes"] == 300 and meta["source"] == {"preset": "tiny"}


def test_symmetrize_dedups_and_drops_self_loops():
    indptr, indices = symmetrize_csr(4, np.array([0, 0, 1, 2, 3]), np.array([1, 1, 1, 0, 3]))
    assert indptr.tolist() == [0, 2, 3, 4, 4]
    assert indices.tolist() == [1, 2, 0, 0]


def test_truncated_file_is_named(written):
    _, path = written
    data = (path / "features.npy").read_bytes()
    (path / "features.npy").write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError, match=r"features\.npy"):
        load_dataset(path)


def test_checksum_mismatch_is_named(written):
    _, path = written
    labels = np.load(path / "labels.npy")
    labels[0] = (labels[0] + 1) % 8
    np.save(path / "labels.npy", labels)
    load_dataset(path)  # same shape: only the checksum can tell
    with pytest.raises(DatasetError, match=r"labels\.npy: checksum mismatch"):
        load_dataset(path, verify_checksums=True)


@pytest.mark.parametrize("damage", ["missing_meta", "corrupt_meta", "missing_array"])
def test_missing_or_corrupt_files(written, damage):
    _, path = written
    if damage == "missing_meta":
        (path / "meta.json").unlink()
    elif damage == "corrupt_meta":
        (path / "meta.json").write_text("{not json")
    else:
        (path / "indices.npy").unlink()
    with pytest.raises(DatasetError, match=str(path)):
        load_dataset(path)


def test_invalid_arrays_leave_nothing_behind(tmp_path):
    bad = GraphDataset(name="bad", indptr=np.array([0, 1, 2]), indices=np.array([1, 5]),
                       features=np.zeros((2, 3), np.float32), labels=np.zeros(2, np.int64),
                       train_idx=np.array([0]), val_idx=np.array([1]), test_idx=np.array([1]),
                       num_classes=2)
    with pytest.raises(DatasetError, match="indices out of range"):
        write_dataset(bad, tmp_path / "out")
    assert list(tmp_path.iterdir()) == []


def test_cli_reports_a_corrupt_dataset_in_one_line(written, tmp_path):
    _, path = written
    (path / "indptr.npy").write_bytes(b"garbage")
    proc = subprocess.run(
        [sys.executable, "-m", "commgnn", "partition", "--name", "r", "--dataset", str(path),
         "--spec", '{"method": "random", "parts": 2}', "--out", str(tmp_path / "p")],
        capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "indptr.npy" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "p").exists()
