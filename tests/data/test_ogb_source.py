"""OGB raw-layout conversion on tiny offline fixtures (CSV and binary layouts)."""

from __future__ import annotations

import gzip
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest

from commgnn.data.ogb_source import (
    canonical_name,
    convert_ogb_raw,
    download_ogb,
    load_ogb,
    ogb_meta,
)
from commgnn.data.store import DatasetError

# Directed edges with a duplicate (0,1), a reciprocal pair (3,4)/(4,3) and a self-loop (5,5).
EDGES = np.array([[0, 1], [1, 2], [2, 0], [3, 4], [4, 3], [0, 1], [5, 5], [6, 7], [8, 9],
                  [9, 2]], dtype=np.int64)
NUM_NODES = 10
FEATURES = (np.arange(NUM_NODES * 4, dtype=np.float32).reshape(NUM_NODES, 4) / 4.0)
LABELS = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0], dtype=np.int64)
SPLITS = {"train": [5, 3, 0, 1, 4, 2], "valid": [7, 6], "test": [9, 8]}
EXPECTED_INDPTR = [0, 2, 4, 7, 8, 9, 9, 10, 11, 12, 14]
EXPECTED_INDICES = [1, 2, 0, 2, 0, 1, 9, 4, 3, 7, 6, 9, 2, 8]


def _write_csv_gz(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as handle:
        for row in np.atleast_1d(np.asarray(rows, dtype=object)):
            values = row if np.ndim(row) else [row]
            handle.write(",".join(str(v) for v in values) + "\n")


def make_arxiv_fixture(dataset_dir: Path) -> Path:
    raw = dataset_dir / "raw"
    _write_csv_gz(raw / "edge.csv.gz", EDGES.tolist())
    _write_csv_gz(raw / "num-node-list.csv.gz", [NUM_NODES])
    _write_csv_gz(raw / "num-edge-list.csv.gz", [len(EDGES)])
    _write_csv_gz(raw / "node-feat.csv.gz", FEATURES.tolist())
    _write_csv_gz(raw / "node-label.csv.gz", LABELS.reshape(-1, 1).tolist())
    _write_csv_gz(raw / "node_year.csv.gz", [[2000 + i] for i in range(NUM_NODES)])
    for key, ids in SPLITS.items():
        _write_csv_gz(dataset_dir / "split" / "time" / f"{key}.csv.gz", ids)
    (dataset_dir / "RELEASE_v1.txt").write_text("fixture\n")
    return dataset_dir


def _assert_fixture(ds, name="ogbn-arxiv", num_classes=40):
    assert ds.name == name
    assert ds.num_classes == num_classes  # from ogb's master.csv, not the observed labels
    np.testing.assert_array_equal(ds.indptr, EXPECTED_INDPTR)
    np.testing.assert_array_equal(ds.indices, EXPECTED_INDICES)
    assert ds.indptr.dtype == np.int64 and ds.indices.dtype == np.int64
    np.testing.assert_array_equal(ds.features, FEATURES)
    assert ds.features.dtype == np.float32
    np.testing.assert_array_equal(ds.labels, LABELS)
    assert ds.labels.dtype == np.int64
    np.testing.assert_array_equal(ds.train_idx, [0, 1, 2, 3, 4, 5])
    np.testing.assert_array_equal(ds.val_idx, [6, 7])
    np.testing.assert_array_equal(ds.test_idx, [8, 9])


def test_meta_comes_from_ogb_master_csv():
    assert canonical_name("arxiv") == "ogbn-arxiv"
    assert canonical_name("ogbn_papers100M") == "ogbn-papers100M"
    assert ogb_meta("arxiv")["num classes"] == "40"
    assert ogb_meta("ogbn-products")["split"] == "sales_ranking"
    with pytest.raises(ValueError, match="heterogeneous"):
        ogb_meta("mag")
    with pytest.raises(ValueError, match="112-task"):
        ogb_meta("proteins")
    with pytest.raises(ValueError, match="unknown"):
        ogb_meta("nope")


def test_convert_csv_layout_exact(tmp_path):
    dataset_dir = make_arxiv_fixture(tmp_path / "ogbn_arxiv")
    _assert_fixture(convert_ogb_raw(dataset_dir, "ogbn-arxiv"))


@pytest.mark.parametrize("victim", ["raw/edge.csv.gz", "raw/node-feat.csv.gz",
                                    "raw/node-label.csv.gz", "raw/num-node-list.csv.gz",
                                    "split/time/valid.csv.gz"])
def test_missing_raw_file_names_it(tmp_path, victim):
    dataset_dir = make_arxiv_fixture(tmp_path / "ogbn_arxiv")
    (dataset_dir / victim).unlink()
    with pytest.raises(DatasetError, match=re.escape(f"{dataset_dir / victim}: missing")):
        convert_ogb_raw(dataset_dir, "arxiv")


def test_truncated_gzip_names_it(tmp_path):
    dataset_dir = make_arxiv_fixture(tmp_path / "ogbn_arxiv")
    victim = dataset_dir / "raw" / "node-feat.csv.gz"
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError, match=re.escape(str(victim))):
        convert_ogb_raw(dataset_dir, "arxiv")


def test_inconsistent_edge_count_and_bad_ids(tmp_path):
    dataset_dir = make_arxiv_fixture(tmp_path / "ogbn_arxiv")
    _write_csv_gz(dataset_dir / "raw" / "num-edge-list.csv.gz", [len(EDGES) + 1])
    with pytest.raises(DatasetError, match=r"edge\.csv\.gz"):
        convert_ogb_raw(dataset_dir, "arxiv")
    _write_csv_gz(dataset_dir / "raw" / "num-edge-list.csv.gz", [len(EDGES)])
    _write_csv_gz(dataset_dir / "split" / "time" / "test.csv.gz", [8, 10])
    with pytest.raises(DatasetError, match=r"test.csv.gz: node ids outside \[0, 10\)"):
        convert_ogb_raw(dataset_dir, "arxiv")
    _write_csv_gz(dataset_dir / "split" / "time" / "test.csv.gz", [8, 9])
    _write_csv_gz(dataset_dir / "raw" / "node-label.csv.gz", [[40]] * NUM_NODES)
    with pytest.raises(DatasetError, match=r"node-label.csv.gz: labels .* \[0, 40\)"):
        convert_ogb_raw(dataset_dir, "arxiv")


def make_papers_fixture(dataset_dir: Path, nan_in_split: bool = False) -> Path:
    raw = dataset_dir / "raw"
    raw.mkdir(parents=True)
    np.savez(raw / "data.npz", edge_index=EDGES.T.copy(), node_feat=FEATURES.astype(np.float16),
             num_nodes_list=np.array([NUM_NODES]), num_edges_list=np.array([len(EDGES)]),
             node_year=np.arange(NUM_NODES).reshape(-1, 1))
    labels = LABELS.astype(np.float32).reshape(-1, 1)
    labels[[0, 5, 9]] = np.nan  # unlabelled papers
    np.savez(raw / "node-label.npz", node_label=labels)
    splits = {"train": [1, 2, 3, 4], "valid": [6, 7], "test": [8] + ([9] if nan_in_split else [])}
    for key, ids in splits.items():
        _write_csv_gz(dataset_dir / "split" / "time" / f"{key}.csv.gz", ids)
    return dataset_dir


def test_convert_binary_layout_with_nan_labels(tmp_path):
    ds = convert_ogb_raw(make_papers_fixture(tmp_path / "p"), "ogbn-papers100M")
    assert ds.num_classes == 172
    np.testing.assert_array_equal(ds.indptr, EXPECTED_INDPTR)
    np.testing.assert_array_equal(ds.indices, EXPECTED_INDICES)
    np.testing.assert_array_equal(ds.features, FEATURES)  # float16-exact values
    expected = LABELS.copy()
    expected[[0, 5, 9]] = 0  # NaN -> class 0, and never in a split
    np.testing.assert_array_equal(ds.labels, expected)
    np.testing.assert_array_equal(ds.train_idx, [1, 2, 3, 4])
    np.testing.assert_array_equal(ds.val_idx, [6, 7])
    np.testing.assert_array_equal(ds.test_idx, [8])


def test_nan_label_inside_split_is_rejected(tmp_path):
    dataset_dir = make_papers_fixture(tmp_path / "p", nan_in_split=True)
    with pytest.raises(DatasetError, match=r"test.csv.gz: 1 split nodes have no label"):
        convert_ogb_raw(dataset_dir, "papers100M")


def test_binary_layout_missing_and_corrupt_npz(tmp_path):
    dataset_dir = make_papers_fixture(tmp_path / "p")
    victim = dataset_dir / "raw" / "data.npz"
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError, match=re.escape(str(victim))):
        convert_ogb_raw(dataset_dir, "papers100M")
    victim.unlink()
    with pytest.raises(DatasetError, match=re.escape(f"{victim}: missing")):
        convert_ogb_raw(dataset_dir, "papers100M")


def _zip_fixture(tmp_path: Path) -> Path:
    """An archive laid out like OGB's arxiv.zip: one top-level folder 'arxiv/'."""
    src = make_arxiv_fixture(tmp_path / "src" / "arxiv")
    archive = tmp_path / "served" / "arxiv.zip"
    archive.parent.mkdir()
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(src.rglob("*")):
            if path.is_file():
                zf.write(path, Path("arxiv") / path.relative_to(src))
    return archive


def test_download_and_load_via_ogb_machinery(tmp_path):
    archive = _zip_fixture(tmp_path)
    root = tmp_path / "root"
    target = download_ogb("arxiv", root, url=archive.as_uri())
    assert target == root / "ogbn_arxiv"
    assert (target / "raw" / "edge.csv.gz").is_file()
    assert not (root / "arxiv.zip").exists()  # archive removed after extraction
    _assert_fixture(convert_ogb_raw(target, "arxiv"))
    # load_ogb reuses the extracted files: a URL that cannot be fetched is never touched
    _assert_fixture(load_ogb("arxiv", root, url=(tmp_path / "absent.zip").as_uri()))
    # ...and downloads when they are missing
    _assert_fixture(load_ogb("arxiv", tmp_path / "other", url=archive.as_uri()))


def test_download_failure_is_a_dataset_error(tmp_path):
    url = (tmp_path / "absent" / "arxiv.zip").as_uri()
    with pytest.raises(DatasetError, match=r"arxiv\.zip: download of .* failed"):
        download_ogb("arxiv", tmp_path / "root", url=url)
    assert not (tmp_path / "root" / "ogbn_arxiv").exists()


def test_corrupt_archive_is_a_dataset_error(tmp_path):
    bad = tmp_path / "served" / "arxiv.zip"
    bad.parent.mkdir()
    bad.write_bytes(b"PK\x03\x04 definitely not a zip")
    with pytest.raises(DatasetError, match=r"arxiv\.zip: not a valid zip archive"):
        download_ogb("arxiv", tmp_path / "root", url=bad.as_uri())
    assert not (tmp_path / "root" / "ogbn_arxiv").exists()
