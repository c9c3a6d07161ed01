"""HopGNN Table 1 on this repo's graphs: micrograph vs subgraph locality by number of
machines (METIS 2/4/8/16 and random 4), depth and fan-out.

Usage::

    python benchmarks/hopgnn_locality.py DATASET_DIR [--parts 2,4,8,16]
        [--results benchmarks/results/hopgnn_locality.json]

Partitions the dataset in memory (METIS with ``balance_train``, seed 0; and a random
partition into 4) and measures R_micro and R_sub with
:func:`commgnn.systems.hopgnn.figures.hopgnn_table1.locality` (the definitions are there) on the
first :data:`~commgnn.systems.hopgnn.figures.hopgnn_table1.BATCHES` global-schedule batches of
:data:`~commgnn.systems.hopgnn.figures.hopgnn_table1.ROOTS` roots, for each (layers, fan-out) of
:data:`~commgnn.systems.hopgnn.figures.hopgnn_table1.SETTINGS`. The JSON records the command.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from commgnn.data.store import load_dataset
from commgnn.partition import partition_graph
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.schedule import global_epoch_seed_nodes
from commgnn.sampling.seeds import batch_seed
from commgnn.systems.hopgnn.figures.hopgnn_table1 import BATCHES, ROOTS, SETTINGS, locality


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--parts", default="2,4,8,16")
    parser.add_argument("--results", type=Path,
                        default=Path("benchmarks/results/hopgnn_locality.json"))
    args = parser.parse_args()
    ds = load_dataset(args.dataset)
    specs = [{"method": "metis", "parts": int(p), "balance_train": True, "seed": 0}
             for p in args.parts.split(",")] + [{"method": "random", "parts": 4, "seed": 0}]
    batches = global_epoch_seed_nodes(ds.train_idx, 1, ROOTS, 0, 0, 0)[:BATCHES]
    rows = []
    for spec in specs:
        owner = np.asarray(partition_graph(ds, spec).book.owner)
        for layers, fanout in SETTINGS:
            sampler = NeighborSampler(ds.indptr, ds.indices, [fanout] * layers)
            values = [locality(sampler.sample(seeds, batch_seed(0, 0, 0, i)), owner)
                      for i, seeds in enumerate(batches)]
            micro, sub = (float(np.mean([v[k] for v in values])) for k in (0, 1))
            rows.append({"method": spec["method"], "machines": spec["parts"], "layers": layers,
                         "fanout": fanout, "r_micro": micro, "r_sub": sub,
                         "micro_over_sub": micro / sub})
            print(json.dumps(rows[-1]))
    args.results.write_text(json.dumps({"command": " ".join(sys.argv), "dataset": str(
        args.dataset), "roots": ROOTS, "batches": BATCHES, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
