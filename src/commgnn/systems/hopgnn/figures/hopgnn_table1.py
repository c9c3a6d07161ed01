"""HopGNN Table 1 / §4: data locality of micrographs (R_micro) against subgraphs (R_sub),
by partitioning (method, number of machines) and depth.

For every METIS/random partitioning given, :data:`BATCHES` batches of :data:`ROOTS` roots
(the global schedule's first batches) are sampled node-wise with fan-out ``f`` over ``L``
layers for each ``(L, f)`` in :data:`SETTINGS`. A root's micrograph is every vertex its
output depends on (its computation tree, the root included). ``R_micro`` is the mean over
micrographs of (non-root vertices on the root's machine) ÷ (vertices in the micrograph);
``R_sub`` the mean over roots of (non-root vertices of the whole subgraph on the root's
machine) ÷ (vertices in the subgraph) — about 1 / machines for random roots.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import scipy.sparse as sp

from commgnn.core.blocks import MiniBatch
from commgnn.core.errors import NotApplicable
from commgnn.report.figures.plotting import finish, node_partitions
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.schedule import global_epoch_seed_nodes
from commgnn.sampling.seeds import batch_seed

#: (layers, fan-out) pairs: the paper's shallow case, its 3-layer models, a deep model.
SETTINGS = ((2, 10), (3, 10), (10, 2))
BATCHES = 4
ROOTS = 128


def micrograph_members(batch: MiniBatch) -> sp.csr_matrix:
    """``[root, input position]`` booleans: the vertices each root's output depends on."""
    n_roots = int(batch.seeds.numel())
    reach = sp.identity(n_roots, dtype=np.int8, format="csr")
    for block in reversed(batch.blocks):
        indptr, indices = block.indptr.numpy(), block.indices.numpy()
        adj = sp.csr_matrix((np.ones(indices.shape[0], dtype=np.int8), indices, indptr),
                            shape=(block.num_dst, block.num_src))
        keep = sp.eye(block.num_dst, block.num_src, dtype=np.int8, format="csr")
        reach = ((reach @ (adj + keep)) > 0).astype(np.int8)
    return reach.tocsr()


def locality(batch: MiniBatch, owner: np.ndarray) -> tuple[float, float]:
    """(R_micro, R_sub) of one sampled batch under the partition ``owner``."""
    nodes = batch.input_nodes.numpy()
    members = micrograph_members(batch)
    roots = nodes[:batch.seeds.numel()]
    home = owner[roots]
    micro = []
    for r in range(roots.shape[0]):
        cols = members.indices[members.indptr[r]:members.indptr[r + 1]]
        colocated = int((owner[nodes[cols]] == home[r]).sum()) - 1  # the root itself
        micro.append(colocated / cols.shape[0])
    per_machine = np.bincount(owner[nodes], minlength=int(owner.max()) + 1)
    sub = (per_machine[home] - 1) / nodes.shape[0]
    return float(np.mean(micro)), float(np.mean(sub))


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    rows = []
    for directory, meta, ds, partition in node_partitions(inputs):
        owner = np.asarray(partition.book.owner)
        batches = global_epoch_seed_nodes(ds.train_idx, 1, ROOTS, 0, 0, 0)[:BATCHES]
        for layers, fanout in SETTINGS:
            sampler = NeighborSampler(ds.indptr, ds.indices, [fanout] * layers)
            values = [locality(sampler.sample(seeds, batch_seed(0, 0, 0, i)), owner)
                      for i, seeds in enumerate(batches)]
            rows.append({"dataset": directory.parent.name, "partitioning": directory.name,
                         "method": meta["spec"]["method"], "machines": partition.num_parts,
                         "layers": layers, "fanout": fanout,
                         "r_micro": float(np.mean([v[0] for v in values])),
                         "r_sub": float(np.mean([v[1] for v in values]))})
    data = pd.DataFrame(rows)
    if data.empty:
        raise NotApplicable("no metis or random partitionings among the inputs")
    data["micro_over_sub"] = data["r_micro"] / data["r_sub"]
    fig, ax = plt.subplots(figsize=(5.5, 3.5))
    for (dataset, method, layers), group in data.groupby(["dataset", "method", "layers"]):
        group = group.sort_values("machines")
        ax.plot(group["machines"], group["r_micro"], marker="o",
                label=f"R_micro {dataset} {method} {layers}L")
    sub = data.groupby("machines")["r_sub"].mean()
    ax.plot(sub.index, sub.values, "k--", label="R_sub (mean)")
    finish(fig, ax, out_png, "Locality of micrographs vs subgraphs", "machines",
           "co-located share of vertices")
    return data
