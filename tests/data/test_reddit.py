"""Reddit archive download/verify/convert on a generated offline fixture."""

from __future__ import annotations

import hashlib
import re
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from commgnn.data import reddit
from commgnn.data.reddit import convert_reddit, download_reddit, load_reddit
from commgnn.data.store import DatasetError

NUM_NODES = 6
FEATURES = np.arange(NUM_NODES * 3, dtype=np.float32).reshape(NUM_NODES, 3)
LABELS = np.array([0, 1, 2, 3, 1, 0], dtype=np.int64)
NODE_TYPES = np.array([1, 1, 2, 3, 1, 3], dtype=np.int32)
# one-directional edges, a duplicate, a reciprocal pair and a self-loop
ROWS = np.array([0, 1, 0, 2, 3, 4, 4, 5])
COLS = np.array([1, 0, 1, 3, 3, 5, 2, 4])
EXPECTED_INDPTR = [0, 1, 2, 4, 5, 7, 8]
EXPECTED_INDICES = [1, 0, 3, 4, 2, 2, 5, 4]


def write_npz_pair(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(folder / "reddit_data.npz", feature=FEATURES, label=LABELS,
             node_types=NODE_TYPES, node_ids=np.arange(NUM_NODES))
    adj = sp.coo_matrix((np.ones(ROWS.size), (ROWS, COLS)), shape=(NUM_NODES, NUM_NODES))
    sp.save_npz(folder / "reddit_graph.npz", adj)
    return folder


def make_archive(tmp_path: Path) -> tuple[Path, str]:
    src = write_npz_pair(tmp_path / "src")
    archive = tmp_path / "served" / "reddit.zip"
    archive.parent.mkdir()
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in ("reddit_data.npz", "reddit_graph.npz"):
            zf.write(src / name, name)
    return archive, hashlib.sha256(archive.read_bytes()).hexdigest()


def _assert_fixture(ds):
    assert ds.name == "reddit"
    assert ds.num_nodes == NUM_NODES and ds.num_classes == 4
    np.testing.assert_array_equal(ds.indptr, EXPECTED_INDPTR)
    np.testing.assert_array_equal(ds.indices, EXPECTED_INDICES)
    np.testing.assert_array_equal(ds.features, FEATURES)
    np.testing.assert_array_equal(ds.labels, LABELS)
    np.testing.assert_array_equal(ds.train_idx, [0, 1, 4])
    np.testing.assert_array_equal(ds.val_idx, [2])
    np.testing.assert_array_equal(ds.test_idx, [3, 5])


def test_default_source():
    assert reddit.DEFAULT_URL == "https://data.dgl.ai/dataset/reddit.zip"
    assert reddit.DEFAULT_SHA256 is None or len(reddit.DEFAULT_SHA256) == 64


def test_convert_exact(tmp_path):
    _assert_fixture(convert_reddit(write_npz_pair(tmp_path / "r")))


def test_csr_graph_file_is_accepted(tmp_path):
    folder = write_npz_pair(tmp_path / "r")
    adj = sp.coo_matrix((np.ones(ROWS.size), (ROWS, COLS)), shape=(NUM_NODES, NUM_NODES))
    sp.save_npz(folder / "reddit_graph.npz", adj.tocsr())
    _assert_fixture(convert_reddit(folder))


def test_download_verify_extract_and_load(tmp_path):
    archive, digest = make_archive(tmp_path)
    root = tmp_path / "root"
    folder = download_reddit(root, url=archive.as_uri(), sha256=digest.upper())
    assert folder == root / "reddit"
    assert sorted(p.name for p in root.iterdir()) == ["reddit"]  # no temp files left behind
    _assert_fixture(convert_reddit(folder))
    # load_reddit uses the extracted files without fetching again
    _assert_fixture(load_reddit(root, url=(tmp_path / "absent.zip").as_uri(), sha256=digest))
    _assert_fixture(load_reddit(tmp_path / "fresh", url=archive.as_uri(), sha256=digest))


def test_checksum_mismatch_names_file_and_digests_and_deletes(tmp_path):
    archive, digest = make_archive(tmp_path)
    root = tmp_path / "root"
    wrong = "0" * 64
    with pytest.raises(DatasetError) as info:
        download_reddit(root, url=archive.as_uri(), sha256=wrong)
    message = str(info.value)
    assert "reddit.zip" in message and str(root) in message
    assert wrong in message and digest in message
    assert list(root.iterdir()) == []  # bad download deleted, nothing extracted


def test_unknown_checksum_records_and_warns(tmp_path):
    archive, digest = make_archive(tmp_path)
    root = tmp_path / "root"
    with pytest.warns(UserWarning, match=digest):
        folder = download_reddit(root, url=archive.as_uri(), sha256=None)
    assert digest in (root / "reddit.zip.sha256").read_text()
    _assert_fixture(convert_reddit(folder))


def test_download_failure_is_a_dataset_error(tmp_path):
    with pytest.raises(DatasetError, match=r"download of .* failed"):
        download_reddit(tmp_path / "root", url=(tmp_path / "absent.zip").as_uri(), sha256=None)
    assert list((tmp_path / "root").iterdir()) == []


def test_archive_without_npz_files(tmp_path):
    archive = tmp_path / "reddit.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("README", "nothing here")
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    with pytest.raises(DatasetError, match=r"lacks reddit_data\.npz"):
        download_reddit(tmp_path / "root", url=archive.as_uri(), sha256=digest)


@pytest.mark.parametrize("victim", ["reddit_data.npz", "reddit_graph.npz"])
def test_truncated_npz_names_it(tmp_path, victim):
    folder = write_npz_pair(tmp_path / "r")
    path = folder / victim
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError, match=re.escape(str(path))):
        convert_reddit(folder)


def test_missing_npz_and_missing_key_name_it(tmp_path):
    folder = write_npz_pair(tmp_path / "r")
    np.savez(folder / "reddit_data.npz", feature=FEATURES, label=LABELS)
    with pytest.raises(DatasetError, match=r"reddit_data.npz: lacks arrays \['node_types'\]"):
        convert_reddit(folder)
    (folder / "reddit_graph.npz").unlink()
    write_npz_pair(tmp_path / "r2")
    (tmp_path / "r2" / "reddit_graph.npz").unlink()
    missing = tmp_path / "r2" / "reddit_graph.npz"
    with pytest.raises(DatasetError, match=re.escape(f"{missing}: missing")):
        convert_reddit(tmp_path / "r2")


def test_pickled_object_arrays_are_refused(tmp_path):
    folder = write_npz_pair(tmp_path / "r")
    np.savez(folder / "reddit_data.npz", feature=FEATURES, label=LABELS.astype(object),
             node_types=NODE_TYPES)
    with pytest.raises(DatasetError, match=r"reddit_data.npz: truncated or corrupt"):
        convert_reddit(folder)


def test_graph_node_count_mismatch(tmp_path):
    folder = write_npz_pair(tmp_path / "r")
    sp.save_npz(folder / "reddit_graph.npz", sp.coo_matrix((NUM_NODES + 1, NUM_NODES + 1)))
    with pytest.raises(DatasetError, match=r"reddit_graph\.npz: 7 nodes"):
        convert_reddit(folder)
