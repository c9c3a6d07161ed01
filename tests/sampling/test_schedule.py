"""Training schedules: the per-partition (owned) one under a placement, and DGL's global one."""

from __future__ import annotations

import numpy as np
import pytest

from commgnn.data.synthetic import generate_synthetic
from commgnn.partition import partition_graph
from commgnn.sampling.schedule import (
    global_epoch_seed_nodes,
    placement_steps,
    steps_per_epoch,
    worker_train_nodes,
)


def test_global_schedule_splits_the_shuffled_training_set_evenly():
    train = np.arange(100, 1103, dtype=np.int64)  # 1003 nodes
    per_worker = [global_epoch_seed_nodes(train, 4, 64, 7, w, epoch=2) for w in range(4)]
    steps = {len(batches) for batches in per_worker}
    assert steps == {4}  # ceil(ceil(1003 / 4) / 64)
    firsts = [np.concatenate(b[:4]) for b in per_worker]
    slices = [np.unique(f) for f in firsts]
    assert sorted(len(s) for s in slices) == [250, 251, 251, 251]
    assert np.array_equal(np.sort(np.concatenate(slices)), train)  # each node once
    again = global_epoch_seed_nodes(train, 4, 64, 7, 1, epoch=2)
    assert all(np.array_equal(a, b) for a, b in zip(again, per_worker[1], strict=True))
    other_epoch = global_epoch_seed_nodes(train, 4, 64, 7, 1, epoch=3)
    assert not np.array_equal(other_epoch[0], per_worker[1][0])
    assert not np.array_equal(firsts[0][:64], np.sort(firsts[0][:64]))  # shuffled


def test_global_schedule_misses_about_one_minus_one_over_p_on_random_partitions():
    ds = generate_synthetic({"preset": "tiny", "nodes": 4000, "seed": 1}, name="t")
    owner = np.asarray(partition_graph(ds, {"method": "random", "parts": 4, "seed": 0})
                       .book.owner)
    for worker in range(4):
        seeds = np.concatenate(global_epoch_seed_nodes(ds.train_idx, 4, 128, 0, worker, 0))
        remote = float(np.mean(owner[seeds] != worker))
        assert remote == pytest.approx(0.75, abs=0.05)


def test_placement_steps_follow_the_largest_active_worker():
    owner = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 2])
    train = np.arange(10)
    assert steps_per_epoch(train, owner, 3, 2) == 3  # partition 2 has 5 nodes
    assert placement_steps(train, owner, [(0,), (1,), (2,)], 2) == 3
    assert placement_steps(train, owner, [(0, 1), (), ()], 2) == 3  # 5 nodes, others idle
    assert placement_steps(train, owner, [(0,), (1,), ()], 2) == 2
    assert placement_steps(train, owner, [(), (), ()], 2) == 1
    assert worker_train_nodes(train, owner, [0, 1]).tolist() == [0, 1, 2, 3, 4]
    assert worker_train_nodes(train, owner, 1).tolist() == [3, 4]
