"""Grappa Table 1 / §2: the neighbour traffic a conventional (DistDGL-style) system moves
in one epoch of a 3-layer model, by number of partitions.

Per part of every METIS/random partitioning given, the part trains on its own training
nodes in batches of Grappa's 1000 with Grappa's 3-layer fan-outs [15, 10, 5] (the project's
sampler, seeded as training is): ``remote_rows`` counts every batch's input rows owned by
another part, summed over the epoch — a row fetched by two batches counts twice, as it
travels twice — and ``remote_bytes`` their float32 features (``seconds_at_10gbps`` on one
10 Gb/s link). Table 1's figures are totals over the parts (its Random column grows as
1 − 1/P), so the figure plots the sum over parts; the METIS ÷ Random ratio is what a
stand-in can be held to (the paper's exact counting rule is not given).
``distinct_remote_rows`` is another quantity kept beside it: the distinct remote nodes
within 3 hops of the part's training nodes (what a full-neighbourhood model pulls at least
once, each row once).
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from commgnn.core.errors import NotApplicable
from commgnn.partition.halo import halo_nodes
from commgnn.report.figures.plotting import finish, node_partitions
from commgnn.sampling.batches import epoch_batches
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.seeds import batch_seed

HOPS = 3
#: Grappa's 3-layer fan-outs and batch size (§5.1).
FANOUTS = (15, 10, 5)
BATCH_SIZE = 1000
SEED = 0
LINK_BYTES_PER_S = 10e9 / 8


def part_traffic(indptr, indices, owner: np.ndarray, train_idx: np.ndarray, part: int,
                 hops: int = HOPS) -> int:
    """Distinct remote nodes within ``hops`` of ``part``'s training nodes."""
    seeds = np.zeros(owner.shape[0], dtype=bool)
    seeds[train_idx[owner[train_idx] == part]] = True
    reached = halo_nodes(indptr, indices, seeds, hops)
    return int((owner[reached] != part).sum())


def epoch_traffic(sampler: NeighborSampler, owner: np.ndarray, train_idx: np.ndarray,
                  part: int, batch_size: int = BATCH_SIZE, seed: int = SEED) -> tuple[int, int]:
    """The remote input rows ``part``'s batches fetch over one epoch (repeats across
    batches counted), and its batch count."""
    mine = train_idx[owner[train_idx] == part]
    batches = epoch_batches(mine, batch_size, seed, part, 0)
    remote = 0
    for step, seeds in enumerate(batches):
        batch = sampler.sample(seeds, batch_seed(seed, part, 0, step))
        remote += int((owner[batch.input_nodes.numpy()] != part).sum())
    return remote, len(batches)


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    rows = []
    for directory, meta, ds, partition in node_partitions(inputs):
        owner = np.asarray(partition.book.owner)
        train = np.asarray(ds.train_idx)
        sampler = NeighborSampler(ds.indptr, ds.indices, list(FANOUTS))
        for part in range(partition.num_parts):
            remote, batches = epoch_traffic(sampler, owner, train, part)
            distinct = part_traffic(ds.indptr, ds.indices, owner, train, part)
            nbytes = remote * ds.feature_dim * 4
            rows.append({"dataset": directory.parent.name, "partitioning": directory.name,
                         "method": meta["spec"]["method"], "parts": partition.num_parts,
                         "part": part, "hops": HOPS, "fanouts": "/".join(map(str, FANOUTS)),
                         "batch_size": BATCH_SIZE, "batches": batches, "remote_rows": remote,
                         "remote_bytes": nbytes, "seconds_at_10gbps": nbytes / LINK_BYTES_PER_S,
                         "distinct_remote_rows": distinct,
                         "distinct_remote_bytes": distinct * ds.feature_dim * 4})
    data = pd.DataFrame(rows)
    if data.empty:
        raise NotApplicable("no metis or random partitionings among the inputs")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for key, group in data.groupby(["dataset", "method"]):
        total = group.groupby("parts")["remote_bytes"].sum() / 1e6
        ax.plot(total.index, total.values, marker="o", label=" ".join(key))
    finish(fig, ax, out_png, "Neighbour traffic of a conventional system", "partitions",
           f"MB per epoch, all parts ({HOPS} layers, fan-outs "
           f"{'/'.join(map(str, FANOUTS))}, batch {BATCH_SIZE})")
    return data


def metis_random_ratio(data: pd.DataFrame) -> pd.DataFrame:
    """Per dataset and part count: METIS's epoch traffic (summed over parts) over
    Random's — Table 1's ratio (0.31 on OGBN-Products, 0.56 on Reddit at 4 parts)."""
    totals = data.groupby(["dataset", "parts", "method"])["remote_rows"].sum().unstack()
    if not {"metis", "random"} <= set(totals.columns):
        return pd.DataFrame(columns=["dataset", "parts", "metis_over_random"])
    ratio = (totals["metis"] / totals["random"]).rename("metis_over_random")
    return ratio.dropna().reset_index()
