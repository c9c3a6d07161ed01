"""Share of the graph each Grappa partition holds with a k-hop halo (§3.2), k = 0..4.

Usage: python benchmarks/grappa_halo_share.py DATASET_DIR PARTITION_DIR [OUT_JSON]

For the first super-epoch's partitions (base chunk ∪ swept chunk, ``chunk_pairs``) of a
``chunk`` partitioning: the nodes and edges (CSR entries of the held nodes) each worker
would hold with a halo of 0 (strict isolation) to 4 hops, as shares of the graph (min,
mean and max over workers). Built with Grappa's own ``partition_nodes``.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import numpy as np

from commgnn.data.store import load_dataset
from commgnn.partition.chunk import chunk_pairs
from commgnn.partition.io import load_partition
from commgnn.systems.grappa.system import partition_nodes


def shares(dataset_dir: Path, partition_dir: Path, max_hops: int = 4) -> dict:
    dataset = load_dataset(dataset_dir)
    partition = load_partition(partition_dir)
    chunk_of = np.asarray(partition.book.owner)
    chunks = int(chunk_of.max()) + 1
    degree = np.diff(np.asarray(dataset.indptr))
    pairs = chunk_pairs(chunks, chunks, 0)
    rows = []
    for hops in range(max_hops + 1):
        nodes, edges = [], []
        for pair in pairs:
            held = partition_nodes(chunk_of, pair, dataset.indptr, dataset.indices, hops)
            nodes.append(held.shape[0] / dataset.num_nodes)
            edges.append(float(degree[held].sum()) / float(degree.sum()))
        rows.append({"hops": hops, **{f"node_share_{s}": float(f(nodes)) for s, f in
                                      (("min", np.min), ("mean", np.mean), ("max", np.max))},
                     "edge_share_mean": float(np.mean(edges))})
    return {"command": " ".join(shlex.quote(a) for a in
                                ["python", "benchmarks/grappa_halo_share.py", *sys.argv[1:]]),
            "dataset": str(dataset_dir),
            "partitioning": str(partition_dir), "nodes": int(dataset.num_nodes),
            "chunks": chunks, "workers": len(pairs), "by_hops": rows}


def main() -> None:
    result = shares(Path(sys.argv[1]), Path(sys.argv[2]))
    text = json.dumps(result, indent=2) + "\n"
    if len(sys.argv) > 3:
        Path(sys.argv[3]).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
