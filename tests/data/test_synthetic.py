"""Tests for the degree-corrected SBM generator (commgnn.data.synthetic)."""

from __future__ import annotations

import numpy as np
import pytest

from commgnn.data.store import load_dataset, symmetrize_csr, validate_arrays, write_dataset
from commgnn.data.synthetic import PRESETS, generate_synthetic, resolve_synthetic_spec

ARRAYS = ("indptr", "indices", "features", "labels", "train_idx", "val_idx", "test_idx")


@pytest.fixture(scope="module")
def tiny():
    return generate_synthetic({"preset": "tiny", "seed": 7})


def edge_homophily(ds) -> float:
    rows = np.repeat(np.arange(ds.num_nodes), ds.degrees())
    return float((ds.labels[rows] == ds.labels[ds.indices]).mean())


def assert_csr_invariants(ds) -> None:
    validate_arrays(ds)
    n, indptr, indices = ds.num_nodes, ds.indptr, ds.indices
    assert indptr.dtype == np.int64 and indices.dtype == np.int64
    rows = np.repeat(np.arange(n), np.diff(indptr))
    assert not np.any(rows == indices), "self-loop"
    keys = rows * n + indices
    assert np.all(np.diff(keys) > 0), "rows not sorted or duplicate entries"
    rev = np.sort(indices * n + rows)
    assert np.array_equal(keys, rev), "not symmetric"


def test_tiny_preset_shapes_and_invariants(tiny):
    p = PRESETS["tiny"]
    assert tiny.num_nodes == p["nodes"]
    assert tiny.feature_dim == p["feature_dim"]
    assert tiny.num_classes == p["classes"]
    assert tiny.features.dtype == np.float32 and tiny.labels.dtype == np.int64
    assert set(np.unique(tiny.labels)) == set(range(p["classes"]))
    assert_csr_invariants(tiny)
    # avg_degree = CSR entries per node (exact up to rounding when the pools fill)
    assert tiny.num_edges == 2 * round(p["nodes"] * p["avg_degree"] / 2)


def test_split_is_disjoint_sorted_and_sized(tiny):
    n, split = tiny.num_nodes, PRESETS["tiny"]["split"]
    parts = [tiny.train_idx, tiny.val_idx, tiny.test_idx]
    for idx, key in zip(parts, ("train", "val", "test"), strict=True):
        assert idx.dtype == np.int64
        assert np.all(np.diff(idx) > 0)
        assert idx.shape[0] == int(split[key] * n)
    allidx = np.concatenate(parts)
    assert np.unique(allidx).shape[0] == allidx.shape[0]


def test_same_seed_byte_identical_files_other_seed_differs(tmp_path):
    spec = {"preset": "tiny", "nodes": 1500, "seed": 3}
    a = write_dataset(generate_synthetic(spec), tmp_path / "a")
    b = write_dataset(generate_synthetic(dict(spec)), tmp_path / "b")
    c = write_dataset(generate_synthetic({**spec, "seed": 4}), tmp_path / "c")
    for key in ARRAYS:
        assert (a / f"{key}.npy").read_bytes() == (b / f"{key}.npy").read_bytes(), key
    for key in ("indices", "features", "labels", "train_idx"):
        assert (a / f"{key}.npy").read_bytes() != (c / f"{key}.npy").read_bytes(), key
    # the noise itself must depend on the seed, not just the labels it is added to
    fa, fc = np.load(a / "features.npy"), np.load(c / "features.npy")
    assert not np.any(np.all(fa == fc, axis=1))
    loaded = load_dataset(a, verify_checksums=True)
    assert loaded.num_edges == generate_synthetic(spec).num_edges


def test_degrees_are_heavy_tailed():
    ds = generate_synthetic({"preset": "tiny", "nodes": 5000, "seed": 1})
    deg = ds.degrees().astype(np.float64)
    assert deg.max() > 10 * deg.mean()
    top = np.sort(deg)[::-1][: ds.num_nodes // 100]
    share = top.sum() / deg.sum()
    # an Erdos-Renyi graph of the same density puts ~2% of endpoints on its top 1% of nodes
    assert share > 0.07, share
    # complementary CDF decays like a power law: log-log slope of P(D >= k) for k in the tail
    ks = np.unique(np.quantile(deg, [0.7, 0.8, 0.9, 0.95, 0.98, 0.99]))
    ccdf = np.array([(deg >= k).mean() for k in ks])
    slope = np.polyfit(np.log(ks), np.log(ccdf), 1)[0]
    assert -2.5 < slope < -0.6, slope  # requested exponent 2.3 -> CCDF slope ~ -1.3


def test_steeper_exponent_gives_lighter_tail():
    heavy = generate_synthetic({"preset": "tiny", "nodes": 5000, "degree_exponent": 2.1})
    light = generate_synthetic({"preset": "tiny", "nodes": 5000, "degree_exponent": 4.0})
    assert heavy.degrees().max() > 2 * light.degrees().max()


@pytest.mark.parametrize("h", [0.2, 0.8, 0.95])
def test_homophily_matches_request(h):
    ds = generate_synthetic({"preset": "tiny", "homophily": h, "seed": 2})
    assert edge_homophily(ds) == pytest.approx(h, abs=0.01)


def test_features_predict_labels_but_not_perfectly(tiny):
    x, y = tiny.features.astype(np.float64), tiny.labels
    tr, te = tiny.train_idx, tiny.test_idx
    means = np.stack([x[tr][y[tr] == c].mean(0) for c in range(tiny.num_classes)])
    dist = ((x[te][:, None, :] - means[None]) ** 2).sum(-1)
    acc = float((dist.argmin(1) == y[te]).mean())
    chance = 1.0 / tiny.num_classes
    assert acc > 3 * chance, acc
    assert acc < 0.97, acc


def test_feature_noise_controls_separability():
    def nearest_mean_acc(noise):
        ds = generate_synthetic({"preset": "tiny", "feature_noise": noise})
        x, y, tr, te = ds.features, ds.labels, ds.train_idx, ds.test_idx
        means = np.stack([x[tr][y[tr] == c].mean(0) for c in range(ds.num_classes)])
        return float((((x[te][:, None] - means[None]) ** 2).sum(-1).argmin(1) == y[te]).mean())

    assert nearest_mean_acc(0.05) > 0.99
    assert nearest_mean_acc(3.0) < 0.3


def test_explicit_keys_override_preset():
    spec = {"source": "synthetic", "preset": "arxiv-like", "nodes": 3000, "avg_degree": 6,
            "classes": 5, "feature_dim": 12, "split": {"train": 0.5}}
    ds = generate_synthetic(spec, name="custom")
    assert ds.name == "custom"
    assert (ds.num_nodes, ds.num_classes, ds.feature_dim) == (3000, 5, 12)
    assert ds.num_edges == 2 * 9000
    assert ds.train_idx.shape[0] == 1500
    assert ds.val_idx.shape[0] == int(PRESETS["arxiv-like"]["split"]["val"] * 3000)
    p = resolve_synthetic_spec(spec)
    assert p["homophily"] == PRESETS["arxiv-like"]["homophily"]
    assert PRESETS["arxiv-like"]["nodes"] == 169_343  # merging must not mutate the preset


def test_presets_match_paper_shapes():
    assert PRESETS["products-like"]["nodes"] == 2_449_029
    assert PRESETS["products-like"]["avg_degree"] == pytest.approx(50.5, abs=0.5)
    assert (PRESETS["products-like"]["classes"], PRESETS["products-like"]["feature_dim"]) == (
        47, 100)
    assert (PRESETS["arxiv-like"]["classes"], PRESETS["arxiv-like"]["feature_dim"]) == (40, 128)
    assert (PRESETS["reddit-like"]["classes"], PRESETS["reddit-like"]["feature_dim"]) == (41, 602)
    # Reddit's own degree (114.6 M CSR entries over 232,965 nodes): fewer than products'
    assert PRESETS["reddit-like"]["nodes"] == 232_965
    assert PRESETS["reddit-like"]["avg_degree"] == pytest.approx(114_615_892 / 232_965, abs=0.5)
    for preset in ("arxiv-like", "reddit-like", "products-like", "uk-like", "in-like"):
        assert PRESETS[preset]["locality"] > 0 and PRESETS[preset]["class_regions"] >= 1, preset


def test_scaled_down_presets_generate():
    for preset in ("arxiv-like", "reddit-like", "products-like"):
        ds = generate_synthetic({"preset": preset, "nodes": 1200, "avg_degree": 8})
        assert_csr_invariants(ds)
        assert ds.num_classes == PRESETS[preset]["classes"]


@pytest.mark.parametrize("bad", [
    {"nodes": 1}, {"avg_degree": 0}, {"homophily": 1.5}, {"degree_exponent": 1.0},
    {"classes": 1}, {"feature_noise": -1}, {"preset": "huge"}, {"bogus": 1},
    {"split": {"train": 0.7, "val": 0.3, "test": 0.2}},
])
def test_invalid_specs_raise_value_error_naming_key(bad):
    key = next(iter(bad))
    with pytest.raises(ValueError, match=key):
        generate_synthetic({"preset": "tiny", **bad})


def test_infeasible_homophily_leaves_pool_short_but_valid():
    # 2 classes of ~10 nodes cannot hold 100 intra-class edges each; must still terminate
    ds = generate_synthetic({"preset": "tiny", "nodes": 20, "classes": 2, "avg_degree": 15,
                             "homophily": 1.0})
    assert_csr_invariants(ds)
    assert edge_homophily(ds) == 1.0


def test_symmetrize_agrees_with_store():
    ds = generate_synthetic({"preset": "tiny", "nodes": 300, "avg_degree": 4})
    rows = np.repeat(np.arange(ds.num_nodes), ds.degrees())
    indptr, indices = symmetrize_csr(ds.num_nodes, rows, ds.indices)
    assert np.array_equal(indptr, ds.indptr) and np.array_equal(indices, ds.indices)


def test_guide_table_lookup_equals_searchsorted():
    from commgnn.data.synthetic import _EndpointSampler, degree_propensities

    rng = np.random.Generator(np.random.PCG64(0))
    theta = degree_propensities(5000, 20.0, 2.1, rng)
    labels = rng.integers(0, 7, 5000)
    sampler = _EndpointSampler(theta, labels, 7)
    u = np.concatenate([rng.random(200_000) * sampler.total, sampler.cum[:1000],
                        np.nextafter(sampler.cum[:1000], 0), [0.0, sampler.total]])
    expect = np.minimum(np.searchsorted(sampler.cum, u, side="right"), 4999)
    assert np.array_equal(sampler._lookup(u), expect)
