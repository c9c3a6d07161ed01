"""Tests for the Graph500 RMAT generator (commgnn.data.rmat)."""

from __future__ import annotations

import numpy as np
import pytest

from commgnn.data.rmat import generate_rmat, resolve_rmat_spec, rmat_edges
from commgnn.data.store import validate_arrays, write_dataset

ARRAYS = ("indptr", "indices", "features", "labels", "train_idx", "val_idx", "test_idx")


@pytest.fixture(scope="module")
def g12():
    return generate_rmat({"source": "rmat", "scale": 12, "seed": 5})


def test_node_count_shapes_and_defaults(g12):
    assert g12.num_nodes == 2**12
    assert g12.feature_dim == 128 and g12.features.dtype == np.float32
    assert g12.num_classes == 16
    assert g12.labels.min() >= 0 and g12.labels.max() < 16
    # symmetrised + de-duplicated: at most 2 * edge_factor * n entries, but most survive
    assert 0.5 * 2 * 16 * 2**12 < g12.num_edges <= 2 * 16 * 2**12
    assert g12.train_idx.shape[0] == int(0.6 * 2**12)


def test_csr_invariants(g12):
    validate_arrays(g12)
    n = g12.num_nodes
    rows = np.repeat(np.arange(n), g12.degrees())
    assert not np.any(rows == g12.indices)
    keys = rows * n + g12.indices
    assert np.all(np.diff(keys) > 0)
    assert np.array_equal(keys, np.sort(g12.indices * n + rows))


def test_degree_skew(g12):
    deg = g12.degrees().astype(np.float64)
    assert deg.max() > 20 * deg.mean()
    top = np.sort(deg)[::-1][: g12.num_nodes // 100]
    assert top.sum() / deg.sum() > 0.15
    # uniform a=b=c=d=0.25 is Erdos-Renyi-like: no skew
    flat = generate_rmat({"scale": 12, "a": 0.25, "b": 0.25, "c": 0.25}).degrees()
    assert flat.max() < 3 * flat.mean()


def test_quadrant_probabilities_at_one_level():
    src, dst = rmat_edges(1, 200_000, 0.57, 0.19, 0.19, (9, 9))
    freq = np.bincount(src * 2 + dst, minlength=4) / src.shape[0]
    assert np.allclose(freq, [0.57, 0.19, 0.19, 0.05], atol=0.005), freq


def test_vertex_permutation_scatters_hubs(g12):
    # without the Graph500 relabelling the hubs would be the lowest ids (all-zero bits)
    hubs = np.argsort(g12.degrees())[-20:]
    assert np.median(hubs) > g12.num_nodes / 8


def test_determinism_byte_identical(tmp_path):
    spec = {"scale": 9, "edge_factor": 8, "feature_dim": 16, "seed": 11}
    a = write_dataset(generate_rmat(spec), tmp_path / "a")
    b = write_dataset(generate_rmat(dict(spec)), tmp_path / "b")
    c = write_dataset(generate_rmat({**spec, "seed": 12}), tmp_path / "c")
    for key in ARRAYS:
        assert (a / f"{key}.npy").read_bytes() == (b / f"{key}.npy").read_bytes(), key
    for key in ("indices", "features", "labels", "train_idx"):
        assert (a / f"{key}.npy").read_bytes() != (c / f"{key}.npy").read_bytes(), key


def test_overrides():
    ds = generate_rmat({"scale": 8, "edge_factor": 4, "feature_dim": 7, "classes": 3,
                        "split": {"train": 0.5, "val": 0.25, "test": 0.25}}, name="r8")
    assert ds.name == "r8" and ds.num_nodes == 256 and ds.feature_dim == 7
    assert ds.num_classes == 3
    assert ds.num_edges <= 2 * 4 * 256
    assert [x.shape[0] for x in (ds.train_idx, ds.val_idx, ds.test_idx)] == [128, 64, 64]
    assert resolve_rmat_spec({"scale": 8, "a": 0.6, "b": 0.1, "c": 0.1})["d"] == \
        pytest.approx(0.2)


@pytest.mark.parametrize("bad, key", [
    ({"a": 1.2}, "'a'"), ({"b": -0.1}, "'b'"), ({"c": "x"}, "'c'"),
    ({"a": 0.6, "b": 0.3, "c": 0.3}, "'a' \\+ 'b' \\+ 'c'"), ({"scale": 0}, "'scale'"),
    ({"edge_factor": 0}, "'edge_factor'"), ({"classes": 1}, "'classes'"),
    ({"scale": 40}, "'scale'"), ({"nodes": 5}, "unknown"),
])
def test_invalid_specs(bad, key):
    with pytest.raises(ValueError, match=key):
        generate_rmat({"scale": 6, **bad})


def test_scale_required():
    with pytest.raises(ValueError, match="'scale'"):
        generate_rmat({"edge_factor": 4})
