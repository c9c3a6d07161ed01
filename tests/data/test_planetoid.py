"""Planetoid loader: published statistics on the real files, and hostile/damaged input."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from commgnn.data.planetoid import load_planetoid, normalize_features, restricted_load
from commgnn.data.store import DatasetError

PLANETOID = Path(__file__).resolve().parents[2].parent / "shared" / "datasets" / "planetoid"

# name: (nodes, directed edges, features, classes, train, val, test)
PUBLISHED = {
    "cora": (2708, 10556, 1433, 7, 140, 500, 1000),
    "citeseer": (3327, 9104, 3703, 6, 120, 500, 1000),
}


def _require(name: str) -> Path:
    if not (PLANETOID / f"ind.{name}.graph").is_file():
        pytest.skip(f"{PLANETOID} lacks the raw {name} files")
    return PLANETOID


@pytest.fixture(scope="module", params=sorted(PUBLISHED))
def loaded(request):
    name = request.param
    return name, load_planetoid(name, _require(name))


@pytest.mark.shared
def test_published_statistics(loaded):
    name, ds = loaded
    nodes, edges, dim, classes, n_train, n_val, n_test = PUBLISHED[name]
    assert ds.name == name
    assert ds.num_nodes == nodes
    assert ds.num_edges == edges
    assert ds.feature_dim == dim
    assert ds.num_classes == classes
    assert (ds.train_idx.size, ds.val_idx.size, ds.test_idx.size) == (n_train, n_val, n_test)
    np.testing.assert_array_equal(ds.train_idx, np.arange(n_train))
    np.testing.assert_array_equal(ds.val_idx, np.arange(n_train, n_train + n_val))
    assert np.all(np.diff(ds.test_idx) > 0)
    assert ds.test_idx.min() >= n_train + n_val
    # public split: 20 training nodes per class
    np.testing.assert_array_equal(np.bincount(ds.labels[ds.train_idx], minlength=classes),
                                  np.full(classes, 20))
    assert ds.features.dtype == np.float32 and ds.labels.dtype == np.int64


@pytest.mark.shared
def test_csr_is_symmetric_sorted_simple(loaded):
    _, ds = loaded
    n = ds.num_nodes
    rows = np.repeat(np.arange(n), ds.degrees())
    cols = ds.indices
    assert not np.any(rows == cols)
    for v in range(n):
        nbrs = ds.indices[ds.indptr[v]:ds.indptr[v + 1]]
        assert np.all(np.diff(nbrs) > 0)
    forward = set(zip(rows.tolist(), cols.tolist(), strict=True))
    assert forward == {(c, r) for r, c in forward}


@pytest.mark.shared
def test_label_distribution_matches_pyg(loaded):
    name, ds = loaded
    expected = {"cora": [351, 217, 418, 818, 426, 298, 180],
                "citeseer": [264, 590, 668, 701, 596, 508]}[name]
    np.testing.assert_array_equal(np.bincount(ds.labels), expected)


@pytest.mark.shared
def test_citeseer_isolated_test_nodes_are_zero_padded():
    ds = load_planetoid("citeseer", _require("citeseer"))
    in_split = np.zeros(ds.num_nodes, dtype=bool)
    for idx in (ds.train_idx, ds.val_idx, ds.test_idx):
        in_split[idx] = True
    padded = np.flatnonzero(~in_split[2312:]) + 2312  # test range nodes absent from test.index
    assert padded.size == 15
    assert not ds.features[padded].any()
    assert np.all(ds.labels[padded] == 0)


@pytest.mark.shared
def test_normalize_features_rows_sum_to_one_or_zero(loaded):
    _, ds = loaded
    normed = normalize_features(ds.features)
    sums = normed.sum(axis=1)
    nonzero = ds.features.sum(axis=1) > 0
    np.testing.assert_allclose(sums[nonzero], 1.0, rtol=1e-5)
    assert np.all(sums[~nonzero] == 0)


def _copy_cora(tmp_path: Path) -> Path:
    src = _require("cora")
    for path in src.glob("ind.cora.*"):
        shutil.copy(path, tmp_path / path.name)
        (tmp_path / path.name).chmod(0o644)
    return tmp_path


@pytest.mark.shared
@pytest.mark.parametrize("part", ["graph", "allx", "ty"])
def test_truncated_file_names_it(tmp_path, part):
    root = _copy_cora(tmp_path)
    victim = root / f"ind.cora.{part}"
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])
    with pytest.raises(DatasetError, match=re.escape(str(victim))):
        load_planetoid("cora", root)


@pytest.mark.shared
def test_missing_and_corrupt_test_index_names_it(tmp_path):
    root = _copy_cora(tmp_path)
    victim = root / "ind.cora.test.index"
    victim.write_text("1708\nnot-a-number\n")
    with pytest.raises(DatasetError, match=re.escape(str(victim))):
        load_planetoid("cora", root)
    victim.unlink()
    with pytest.raises(DatasetError, match=re.escape(f"{victim}: missing")):
        load_planetoid("cora", root)


@pytest.mark.shared
def test_disallowed_global_in_real_layout(tmp_path):
    root = _copy_cora(tmp_path)
    marker = tmp_path / "pwned"
    victim = root / "ind.cora.tx"
    victim.write_bytes(f"cos\nsystem\n(S'touch {marker}'\ntR.".encode())
    with pytest.raises(DatasetError, match=r"ind\.cora\.tx.*'os\.system'"):
        load_planetoid("cora", root)
    assert not marker.exists()


def test_restricted_unpickler_refuses_globals(tmp_path):
    marker = tmp_path / "pwned"
    evil = tmp_path / "ind.evil.x"
    evil.write_bytes(f"cos\nsystem\n(S'touch {marker}'\ntR.".encode())
    with pytest.raises(DatasetError, match=re.escape(str(evil)) + r".*'os\.system'.*not allowed"):
        restricted_load(evil)
    assert not marker.exists()
    builtin_eval = tmp_path / "ind.evil.y"
    builtin_eval.write_bytes(b"c__builtin__\neval\n(S'1+1'\ntR.")
    with pytest.raises(DatasetError, match=r"'__builtin__\.eval'"):
        restricted_load(builtin_eval)


def test_restricted_unpickler_accepts_allowed_types(tmp_path):
    import collections
    import pickle

    # Python 3 pickles numpy buffers via ``_codecs.encode`` (not allowed: the Python-2
    # Planetoid files never need it), so only the adjacency type is round-tripped here.
    path = tmp_path / "ok.pkl"
    path.write_bytes(pickle.dumps(collections.defaultdict(list, {0: [1, 2]}), protocol=2))
    loaded = restricted_load(path)
    assert isinstance(loaded, collections.defaultdict) and loaded == {0: [1, 2]}


def test_unknown_name_and_missing_directory(tmp_path):
    with pytest.raises(ValueError, match="unknown Planetoid"):
        load_planetoid("reddit", tmp_path)
    with pytest.raises(DatasetError, match=re.escape(str(tmp_path / "ind.cora.x"))):
        load_planetoid("cora", tmp_path)
