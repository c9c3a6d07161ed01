"""The generator's locality (commgnn.data.synthetic, "Locality"): METIS finds it, Random
does not; homophily and size are kept; locality 0 leaves the graphs as they were."""

from __future__ import annotations

import numpy as np
import pytest

from commgnn.data.synthetic import generate_synthetic, regional_labels
from commgnn.partition import partition_graph
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.systems.grappa.figures.grappa_table1 import epoch_traffic

BASE = {"preset": "tiny", "nodes": 20000, "avg_degree": 10, "classes": 8, "seed": 0}


def _traffic_ratio(ds) -> float:
    """METIS ÷ Random remote input rows of an epoch at 4 parts (2 layers, fan-out 5,
    batches of 50: balls small enough to stay local where the graph is)."""
    sampler = NeighborSampler(ds.indptr, ds.indices, [5, 5])
    train = np.asarray(ds.train_idx)
    totals = {}
    for method in ("metis", "random"):
        owner = np.asarray(partition_graph(ds, {"method": method, "parts": 4,
                                                "seed": 0}).book.owner)
        totals[method] = sum(epoch_traffic(sampler, owner, train, part, batch_size=50)[0]
                             for part in range(4))
    return totals["metis"] / totals["random"]


def _homophily(ds) -> float:
    src = np.repeat(np.arange(ds.num_nodes), np.diff(ds.indptr))
    labels = np.asarray(ds.labels)
    return float((labels[src] == labels[np.asarray(ds.indices)]).mean())


def test_locality_is_what_metis_finds_and_random_cannot():
    plain = generate_synthetic(BASE, name="x")
    local = generate_synthetic({**BASE, "locality": 0.95, "locality_exponent": 2.0}, name="x")
    before, after = _traffic_ratio(plain), _traffic_ratio(local)
    assert after < 0.3 and after < 0.6 * before, (before, after)
    assert _homophily(local) == pytest.approx(0.8, abs=0.01)  # the class signal kept
    assert int(np.asarray(local.indptr)[-1]) == int(np.asarray(plain.indptr)[-1])  # the size
    degree = np.diff(local.indptr)  # still heavy-tailed
    assert degree.max() > 8 * np.median(degree)


def test_locality_is_deterministic_and_zero_changes_nothing():
    spec = {**BASE, "nodes": 3000, "locality": 0.9}
    a, b = generate_synthetic(spec, name="x"), generate_synthetic(spec, name="x")
    assert np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)
    other = generate_synthetic({**spec, "seed": 1}, name="x")
    assert not np.array_equal(a.indices[:1000], other.indices[:1000])
    plain = generate_synthetic({**BASE, "nodes": 3000}, name="x")
    zero = generate_synthetic({**BASE, "nodes": 3000, "locality": 0.0}, name="x")
    for key in ("indptr", "indices", "features", "labels", "train_idx"):
        assert np.array_equal(getattr(plain, key), getattr(zero, key)), key
    assert not np.array_equal(a.indices, plain.indices)


@pytest.mark.parametrize(("key", "value"), [("locality", 1.0), ("locality", -0.1),
                                            ("locality", True), ("locality_exponent", -1),
                                            ("class_regions", -1), ("class_regions", 0.5),
                                            ("label_noise", 1.0), ("label_noise", -0.1)])
def test_bad_locality_is_refused_naming_the_key(key, value):
    with pytest.raises(ValueError, match=key):
        generate_synthetic({**BASE, "nodes": 100, key: value}, name="x")


def test_class_regions_lay_the_classes_out_along_the_line():
    labels = regional_labels(1500, 5, 3, seed=0)
    segments = labels.reshape(15, -1)
    assert (segments == segments[:, :1]).all()  # each segment one class
    first = segments[:, 0]
    assert (first[1:] != first[:-1]).all()  # neighbouring segments never share one
    assert sorted(np.bincount(first)) == [3] * 5  # every class in exactly 3 regions
    assert np.array_equal(labels, regional_labels(1500, 5, 3, seed=0))
    assert not np.array_equal(labels, regional_labels(1500, 5, 3, seed=1))


def test_regions_make_metis_and_the_classes_agree():
    """Classes in regions of the line: the inter-class edges are near too (they leave their
    region for the nearest other one), so METIS no longer trades locality for class groups;
    the class signal and the size are kept."""
    spec = {**BASE, "locality": 0.8, "locality_exponent": 2.0}
    plain, regional = (generate_synthetic(s, name="x")
                       for s in (spec, {**spec, "class_regions": 1}))
    assert _traffic_ratio(regional) < 0.75 * _traffic_ratio(plain) < 0.3
    assert _homophily(regional) == pytest.approx(0.8, abs=0.01)
    assert int(np.asarray(regional.indptr)[-1]) == int(np.asarray(plain.indptr)[-1])
    zero = generate_synthetic({**BASE, "nodes": 3000, "class_regions": 0}, name="x")
    unset = generate_synthetic({**BASE, "nodes": 3000}, name="x")
    assert np.array_equal(zero.indices, unset.indices)
    assert np.array_equal(zero.labels, unset.labels)


def test_label_noise_records_a_random_class_for_exactly_its_share():
    clean = generate_synthetic({**BASE, "nodes": 4000}, name="x")
    noisy = generate_synthetic({**BASE, "nodes": 4000, "label_noise": 0.25}, name="x")
    for key in ("indptr", "indices", "features", "train_idx"):  # graph and features untouched
        assert np.array_equal(getattr(clean, key), getattr(noisy, key)), key
    changed = (clean.labels != noisy.labels).mean()
    assert changed == pytest.approx(0.25 * (1 - 1 / 8), abs=0.02)  # a drawn class may be its own
    assert _homophily(noisy) == pytest.approx(0.8 * 0.75 ** 2 + 0.8 * (1 - 0.75 ** 2) / 8
                                              + 0.2 / 8, abs=0.03)
    again = generate_synthetic({**BASE, "nodes": 4000, "label_noise": 0.25}, name="x")
    assert np.array_equal(noisy.labels, again.labels)
