"""Mini-batch training on sampled neighbourhoods (commgnn.models.minibatch): it learns what
the features and the neighbourhood say, is reproducible, and refuses a depth without fan-outs."""

from __future__ import annotations

import pytest

from commgnn.data.synthetic import generate_synthetic
from commgnn.models.minibatch import train_sampled

SPEC = {"preset": "tiny", "nodes": 2000, "feature_noise": 1.0, "seed": 0}


def test_sampled_sage_learns_from_the_neighbourhood():
    """Noise 1.0 leaves one node's features little to go on; aggregating neighbours (80 %
    of one class) recovers the class: 2 layers beat 1 by a wide margin, both beat chance."""
    ds = generate_synthetic(SPEC, name="x")
    deep = train_sampled(ds, "sage", hidden_dim=64, num_layers=2, fanouts=(10, 10),
                         batch_size=128, epochs=15, seed=0)
    shallow = train_sampled(ds, "sage", hidden_dim=64, num_layers=1, fanouts=(10,),
                            batch_size=128, epochs=15, seed=0)
    assert deep["batches_run"] == 15 * 10  # 1200 training nodes in batches of 128
    assert deep["test_acc"] > shallow["test_acc"] + 0.1 > 1 / 8 + 0.2, (deep, shallow)


def test_sampled_training_is_reproducible():
    ds = generate_synthetic({**SPEC, "nodes": 600}, name="x")
    kwargs = dict(hidden_dim=16, num_layers=2, fanouts=(5, 5), batch_size=64, epochs=2,
                  max_batches_per_epoch=3, max_eval_nodes=50)
    a, b = train_sampled(ds, seed=3, **kwargs), train_sampled(ds, seed=3, **kwargs)
    assert a["batches_run"] == 6
    assert {k: a[k] for k in ("test_acc", "val_acc", "train_acc")} == \
        {k: b[k] for k in ("test_acc", "val_acc", "train_acc")}


def test_a_depth_without_its_fanouts_is_refused():
    ds = generate_synthetic({**SPEC, "nodes": 200}, name="x")
    with pytest.raises(ValueError, match="3 layers need 3 fan-outs"):
        train_sampled(ds, num_layers=3, fanouts=(5, 5))
