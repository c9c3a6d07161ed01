"""Grappa Table 1: the epoch's neighbour traffic of a conventional system (every batch's
remote input rows, repeats counted), checked by hand on a toy graph and against the
1 − 1/P growth of a random partitioning; the distinct 3-hop closure beside it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from commgnn.data.synthetic import generate_synthetic
from commgnn.partition import partition_graph
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.systems.grappa.figures.grappa_table1 import (
    epoch_traffic,
    metis_random_ratio,
    part_traffic,
)


def _path(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The path 0 - 1 - … - n-1 as symmetric CSR."""
    neighbours = [[v for v in (u - 1, u + 1) if 0 <= v < n] for u in range(n)]
    indptr = np.cumsum([0, *map(len, neighbours)]).astype(np.int64)
    return indptr, np.concatenate(neighbours).astype(np.int64)


def test_every_batch_pays_for_its_remote_rows_by_hand():
    """Path 0..7, part 0 = nodes 0-3 (training nodes 2 and 3), part 1 = 4-7; every
    neighbour taken (fan-out -1), 3 layers. Node 3's 3-hop ball holds 4, 5, 6 (remote);
    node 2's holds 4, 5. One batch of both: {4, 5, 6} = 3 rows; one batch each: 3 + 2."""
    indptr, indices = _path(8)
    owner = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    train = np.array([2, 3])
    sampler = NeighborSampler(indptr, indices, [-1, -1, -1])
    assert epoch_traffic(sampler, owner, train, 0, batch_size=2) == (3, 1)
    assert epoch_traffic(sampler, owner, train, 0, batch_size=1) == (5, 2)
    assert part_traffic(indptr, indices, owner, train, 0) == 3  # the distinct closure
    assert epoch_traffic(sampler, owner, train, 1, batch_size=1) == (0, 0)  # no training


def test_a_random_partitionings_traffic_grows_as_one_minus_one_over_p():
    ds = generate_synthetic({"preset": "tiny", "nodes": 5000, "avg_degree": 8, "seed": 3,
                             "split": {"train": 0.2, "val": 0.1, "test": 0.1}}, name="t")
    sampler = NeighborSampler(ds.indptr, ds.indices, [15, 10, 5])
    train = np.asarray(ds.train_idx)
    per_share = {}
    for parts in (2, 4, 8):
        owner = np.asarray(partition_graph(ds, {"method": "random", "parts": parts,
                                                "seed": 0}).book.owner)
        total = sum(epoch_traffic(sampler, owner, train, p, batch_size=10)[0]
                    for p in range(parts))
        per_share[parts] = total / (1 - 1 / parts)
    assert max(per_share.values()) / min(per_share.values()) < 1.1, per_share


def test_the_metis_over_random_ratio_per_dataset_and_part_count():
    data = pd.DataFrame({"dataset": ["d"] * 6, "parts": [2, 2, 2, 2, 4, 4],
                         "method": ["metis", "metis", "random", "random", "metis", "random"],
                         "remote_rows": [10, 20, 50, 50, 30, 100]})
    ratio = metis_random_ratio(data)
    assert list(ratio["parts"]) == [2, 4]
    assert list(ratio["metis_over_random"]) == pytest.approx([0.3, 0.3])
    assert metis_random_ratio(data[data["method"] == "metis"]).empty
