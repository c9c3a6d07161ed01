"""Per-(worker, epoch) seed-node batches."""

from __future__ import annotations

import numpy as np
import pytest
from sampling_reference import stream_draw

from commgnn.sampling.batches import epoch_batches, epoch_order, num_batches
from commgnn.sampling.seeds import shuffle_seed

TRAIN = np.sort(np.random.default_rng(3).choice(10_000, 1_003, replace=False)).astype(np.int64)


def test_every_train_node_exactly_once_per_epoch():
    for epoch in range(3):
        batches = epoch_batches(TRAIN, 64, base_seed=11, worker=1, epoch=epoch)
        assert len(batches) == num_batches(TRAIN.shape[0], 64) == 16
        assert [b.shape[0] for b in batches] == [64] * 15 + [1003 - 15 * 64]
        assert all(b.dtype == np.int64 for b in batches)
        flat = np.concatenate(batches)
        assert np.array_equal(np.sort(flat), TRAIN)


def test_drop_last():
    batches = epoch_batches(TRAIN, 64, base_seed=11, worker=0, epoch=0, drop_last=True)
    assert len(batches) == num_batches(TRAIN, 64, drop_last=True) == 15
    assert all(b.shape[0] == 64 for b in batches)
    kept = np.concatenate(batches)
    assert np.unique(kept).shape[0] == kept.shape[0]
    assert np.array_equal(kept, np.concatenate(epoch_batches(TRAIN, 64, 11, 0, 0))[:960])


def test_order_depends_on_epoch_and_worker_and_base_seed():
    base = epoch_order(TRAIN, 11, 0, 0)
    assert np.array_equal(base, epoch_order(TRAIN, 11, 0, 0))  # deterministic
    for other in (epoch_order(TRAIN, 11, 0, 1), epoch_order(TRAIN, 11, 1, 0),
                  epoch_order(TRAIN, 12, 0, 0)):
        assert not np.array_equal(base, other)
        assert np.array_equal(np.sort(other), TRAIN)
    assert not np.array_equal(base, TRAIN)  # actually shuffled


def test_permutation_matches_spec():
    # Sort keys are the splitmix64 stream keyed by H(s0, "shuffle", w, e).
    key = shuffle_seed(4, 2, 9)
    keys = [stream_draw(key, t) for t in range(TRAIN.shape[0])]
    expected = TRAIN[sorted(range(TRAIN.shape[0]), key=keys.__getitem__)]
    assert np.array_equal(epoch_order(TRAIN, 4, 2, 9), expected)


def test_no_shuffle_and_edge_cases():
    batches = epoch_batches(TRAIN, 100, 0, 0, 0, shuffle=False)
    assert np.array_equal(np.concatenate(batches), TRAIN)
    assert epoch_batches(np.array([], dtype=np.int64), 8, 0, 0, 0) == []
    assert len(epoch_batches(TRAIN[:5], 8, 0, 0, 0)) == 1
    assert epoch_batches(TRAIN[:5], 8, 0, 0, 0, drop_last=True) == []
    with pytest.raises(ValueError):
        epoch_batches(TRAIN, 0, 0, 0, 0)
    with pytest.raises(ValueError):
        epoch_order(TRAIN.reshape(1, -1), 0, 0, 0)


def test_input_not_modified():
    train = TRAIN.copy()
    epoch_batches(train, 10, 1, 1, 1)
    assert np.array_equal(train, TRAIN)
