"""Convert a commgnn dataset and partition to DGL's partition format (DGL environment).

DGL's ``partition_graph`` does the work, with its METIS step replaced by commgnn's node
assignment (``book.npz`` ``owner``), so DGL reshuffles, builds the halo partitions and
splits features exactly as it would for its own METIS result. Writes ``<out>/graph.json``
(DGL's partition config), ``part<i>/``, ``orig_nids.npy`` (DGL id → commgnn id) and
``commgnn.json`` (what it was made from).

    python convert.py --dataset DIR --partition DIR --out DIR
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, required=True)
    parser.add_argument("--partition", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    import dgl  # deferred: imports dgl
    import torch  # deferred: imports torch
    from dgl.distributed import partition as dgl_partition  # deferred: imports dgl

    def array(name: str) -> np.ndarray:
        return np.load(args.dataset / f"{name}.npy", mmap_mode="r")

    indptr, indices = array("indptr"), np.asarray(array("indices"))
    num_nodes = len(indptr) - 1
    rows = np.repeat(np.arange(num_nodes), np.diff(indptr))
    # commgnn's row v lists v's neighbours (symmetric); DGL samples in-edges (u -> v).
    graph = dgl.graph((torch.from_numpy(indices), torch.from_numpy(rows)),
                      num_nodes=num_nodes)
    graph.ndata["feat"] = torch.from_numpy(np.asarray(array("features"), dtype=np.float32))
    graph.ndata["label"] = torch.from_numpy(np.asarray(array("labels"), dtype=np.int64))
    for split in ("train", "val", "test"):
        mask = torch.zeros(num_nodes, dtype=torch.bool)
        mask[torch.from_numpy(np.asarray(array(f"{split}_idx")))] = True
        graph.ndata[f"{split}_mask"] = mask
    owner = np.load(args.partition / "book.npz")["owner"].astype(np.int64)
    if owner.shape != (num_nodes,):
        print(f"{args.partition / 'book.npz'}: owner has {owner.shape[0]} entries, the "
              f"dataset {num_nodes} nodes", file=sys.stderr)
        return 2
    parts = int(json.loads((args.partition / "meta.json").read_text())["num_parts"])
    if owner.min() < 0 or owner.max() >= parts:
        print(f"{args.partition / 'book.npz'}: owner ids outside 0..{parts - 1}",
              file=sys.stderr)
        return 2
    assignment = torch.from_numpy(owner)
    dgl_partition.metis_partition_assignment = lambda *_args, **_kwargs: assignment
    orig_nids, _ = dgl.distributed.partition_graph(
        graph, "graph", parts, str(args.out), num_hops=1, part_method="metis",
        return_mapping=True, balance_edges=False)
    np.save(args.out / "orig_nids.npy", orig_nids.numpy())
    meta = {"dataset": str(args.dataset), "partition": str(args.partition), "parts": parts,
            "num_nodes": num_nodes, "dgl": dgl.__version__,
            "dataset_meta_sha256": hashlib.sha256(
                (args.dataset / "meta.json").read_bytes()).hexdigest(),
            "partition_meta_sha256": hashlib.sha256(
                (args.partition / "meta.json").read_bytes()).hexdigest()}
    (args.out / "commgnn.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
