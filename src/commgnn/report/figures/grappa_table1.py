"""Grappa Table 1 / §2: the neighbour traffic a conventional (DistDGL-style) system moves
per partition and epoch, by number of partitions — exact from the partition book.

Per part of every METIS/random partitioning given: the remote nodes within ``L`` hops
(``L`` = 3, Table 1's depth) of the part's training nodes, i.e. the rows a full-neighbourhood
``L``-layer model fetches at least once per epoch when each remote row is pulled once,
their bytes (float32 features) and the seconds they take on a 10 Gb/s link. Sampling
fetches fewer rows per batch but repeats rows across batches; this is the per-epoch
distinct volume, the quantity Table 1 reports.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from commgnn.errors import NotApplicable
from commgnn.partition.halo import halo_nodes
from commgnn.report.figures.plotting import finish, node_partitions

HOPS = 3
LINK_BYTES_PER_S = 10e9 / 8


def part_traffic(indptr, indices, owner: np.ndarray, train_idx: np.ndarray, part: int,
                 hops: int = HOPS) -> int:
    """Distinct remote nodes within ``hops`` of ``part``'s training nodes."""
    seeds = np.zeros(owner.shape[0], dtype=bool)
    seeds[train_idx[owner[train_idx] == part]] = True
    reached = halo_nodes(indptr, indices, seeds, hops)
    return int((owner[reached] != part).sum())


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    rows = []
    for directory, meta, ds, partition in node_partitions(inputs):
        owner = np.asarray(partition.book.owner)
        train = np.asarray(ds.train_idx)
        for part in range(partition.num_parts):
            remote = part_traffic(ds.indptr, ds.indices, owner, train, part)
            nbytes = remote * ds.feature_dim * 4
            rows.append({"dataset": directory.parent.name, "partitioning": directory.name,
                         "method": meta["spec"]["method"], "parts": partition.num_parts,
                         "part": part, "hops": HOPS, "remote_rows": remote,
                         "remote_bytes": nbytes, "seconds_at_10gbps": nbytes / LINK_BYTES_PER_S})
    data = pd.DataFrame(rows)
    if data.empty:
        raise NotApplicable("no metis or random partitionings among the inputs")
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for key, group in data.groupby(["dataset", "method"]):
        per = group.groupby("parts")["remote_bytes"].mean() / 1e6
        ax.plot(per.index, per.values, marker="o", label=" ".join(key))
    finish(fig, ax, out_png, "Neighbour traffic of a conventional system", "partitions",
           f"MB per partition per epoch ({HOPS}-hop)")
    return data
