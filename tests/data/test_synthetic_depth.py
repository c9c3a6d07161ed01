"""Tests for ``signal_fraction`` and the ``multihop`` preset of the synthetic generator."""

from __future__ import annotations

import math

import numpy as np
import pytest

from commgnn.core.config import ConfigError, validate
from commgnn.data.synthetic import (
    PRESETS,
    degree_propensities,
    fill_features,
    generate_synthetic,
    resolve_synthetic_spec,
    seeded_rng,
    signal_mask,
)

ARRAYS = ("indptr", "indices", "features", "labels", "train_idx", "val_idx", "test_idx")
SMALL = {"preset": "multihop", "nodes": 3000, "seed": 5}


@pytest.fixture(scope="module")
def small():
    return generate_synthetic(SMALL)


def _bytes(ds) -> dict[str, bytes]:
    return {key: np.ascontiguousarray(getattr(ds, key)).tobytes() for key in ARRAYS}


def test_same_spec_same_bytes_other_seed_differs(small):
    again = _bytes(generate_synthetic(dict(SMALL)))
    assert _bytes(small) == again
    other = generate_synthetic({**SMALL, "seed": 6})
    for key in ("indices", "features", "labels", "train_idx"):
        assert _bytes(other)[key] != again[key], key
    # the informative subset itself depends on the seed
    assert not np.array_equal(signal_mask(3000, 0.2, 5), signal_mask(3000, 0.2, 6))


def test_fraction_one_gives_the_original_arrays():
    spec = {"preset": "tiny", "nodes": 1500, "seed": 3}
    base = generate_synthetic(spec)
    assert _bytes(generate_synthetic({**spec, "signal_fraction": 1.0})) == _bytes(base)
    assert resolve_synthetic_spec(spec)["signal_fraction"] == 1.0
    # features exactly as generated before the key existed: noise + class mean for every node
    p = resolve_synthetic_spec(spec)
    rng = seeded_rng(3, 1)
    labels = rng.integers(0, p["classes"], size=1500, dtype=np.int64)
    degree_propensities(1500, p["avg_degree"], p["degree_exponent"], rng)
    dim = p["feature_dim"]
    means = (rng.standard_normal((p["classes"], dim)) / math.sqrt(dim)).astype(np.float32)
    expect = np.empty((1500, dim), dtype=np.float32)
    fill_features(expect, (3, 3), scale=p["feature_noise"], offsets=means, labels=labels)
    assert np.array_equal(base.labels, labels)
    assert expect.tobytes() == base.features.tobytes()


def test_fraction_only_changes_the_uninformative_rows():
    spec = {"preset": "tiny", "nodes": 2000, "seed": 4}
    full = generate_synthetic(spec)
    part = generate_synthetic({**spec, "signal_fraction": 0.3})
    for key in ARRAYS:
        if key != "features":
            assert np.array_equal(getattr(part, key), getattr(full, key)), key
    mask = signal_mask(2000, 0.3, 4)
    assert mask.dtype == bool and int(mask.sum()) == 600
    assert signal_mask(2000, 1.0, 4) is None
    assert np.array_equal(part.features[mask], full.features[mask])
    noise = np.empty_like(full.features)
    fill_features(noise, (4, 3), scale=PRESETS["tiny"]["feature_noise"])
    assert np.array_equal(part.features[~mask], noise[~mask])


@pytest.mark.parametrize("fraction", [0.1, 0.5])
def test_informative_fraction_measured_from_features(fraction):
    # x_v . mu_y / |mu_y|^2 is 1 + noise for informative nodes and pure noise for the others,
    # so its mean over nodes estimates the informative fraction (std ~ 1/sqrt(n) here)
    spec = {"preset": "multihop", "nodes": 4000, "signal_fraction": fraction, "seed": 2}
    ds = generate_synthetic(spec)
    x, y = ds.features.astype(np.float64), ds.labels
    p = resolve_synthetic_spec(spec)
    rng = seeded_rng(2, 1)
    rng.integers(0, p["classes"], size=4000, dtype=np.int64)
    degree_propensities(4000, p["avg_degree"], p["degree_exponent"], rng)
    dim = p["feature_dim"]
    mu = (rng.standard_normal((p["classes"], dim)) / math.sqrt(dim)).astype(np.float64)
    proj = (x * mu[y]).sum(1) / (mu[y] ** 2).sum(1)
    assert proj.mean() == pytest.approx(fraction, abs=0.06)


def test_signal_is_in_the_neighbourhood(small):
    """Nearest class mean on features alone is near chance; on neighbour-averaged features
    (mean aggregation as in GraphSAGE) it is far better, and better again after two hops."""
    ds = small
    n, deg = ds.num_nodes, np.maximum(ds.degrees(), 1)
    rows = np.repeat(np.arange(n), ds.degrees())

    def propagate(h):
        out = np.zeros_like(h)
        np.add.at(out, rows, h[ds.indices])
        return out / deg[:, None]

    def ncm(h):
        tr, te, y = ds.train_idx, ds.test_idx, ds.labels
        means = np.stack([h[tr][y[tr] == c].mean(0) for c in range(ds.num_classes)])
        dist = ((h[te][:, None, :] - means[None]) ** 2).sum(-1)
        return float((dist.argmin(1) == y[te]).mean())

    x0 = ds.features.astype(np.float64)
    x1 = propagate(x0)
    x2 = propagate(x1)
    chance = 1.0 / ds.num_classes
    acc0, acc1, acc2 = ncm(x0), ncm(x1), ncm(x2)
    assert acc0 < 2.5 * chance, acc0
    assert acc1 > acc0 + 0.2, (acc0, acc1)  # measured (seed 5): 0.055, 0.47, 0.80
    assert acc2 > acc1 + 0.15, (acc1, acc2)  # the second hop adds much more


def test_multihop_preset_shape():
    p = PRESETS["multihop"]
    assert 100_000 <= p["nodes"] <= 200_000
    assert p["classes"] >= 20 and 15 <= p["avg_degree"] <= 30
    assert 0 < p["signal_fraction"] < 1
    ds = generate_synthetic({"preset": "multihop", "nodes": 2000})
    assert ds.num_classes == p["classes"] and ds.feature_dim == p["feature_dim"]
    assert ds.num_edges == 2 * round(2000 * p["avg_degree"] / 2)


@pytest.mark.parametrize("bad", [0, 0.0, -0.1, 1.5, True, "half", None, float("nan")])
def test_bad_signal_fraction_raises_one_line_error_naming_key(bad):
    with pytest.raises(ValueError, match="signal_fraction") as info:
        generate_synthetic({"preset": "tiny", "signal_fraction": bad})
    assert "\n" not in str(info.value)


def test_schema_accepts_preset_and_key():
    cfg = {"datasets": {"d": {"source": "synthetic", "preset": "multihop",
                              "signal_fraction": 0.5}},
           "partitionings": {"m2": {"method": "metis", "parts": 2}}}
    validate(cfg)
    cfg["datasets"]["d"]["signal_fraction"] = 0
    with pytest.raises(ConfigError, match="signal_fraction"):
        validate(cfg)
