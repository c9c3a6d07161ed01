"""Timing of NeighborSampler on a synthetic ~2M-node, avg-degree-50 graph (not a test).

Usage: ``.venv/bin/python benchmarks/neighbor_sampler.py [poisson|pareto]``.
Needs ~1 GB of memory for the graph. Reports wall and thread-CPU time per 1024-seed batch
with fan-outs [5, 10, 15] after JIT warm-up, sequential and ``parallel=True``.
"""

from __future__ import annotations

import sys
import time

import numba
import numpy as np

from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.seeds import batch_seed


def main(kind: str = "poisson", num_nodes: int = 2_000_000, reps: int = 30) -> None:
    rng = np.random.default_rng(0)
    if kind == "poisson":
        deg = rng.poisson(50, num_nodes)
    else:  # heavy-tailed degrees, mean ~50
        deg = np.minimum((rng.pareto(1.5, num_nodes) + 1) * 17, 200_000)
    deg = deg.astype(np.int64)
    indptr = np.zeros(num_nodes + 1, np.int64)
    np.cumsum(deg, out=indptr[1:])
    indices = rng.integers(0, num_nodes, int(indptr[-1]), dtype=np.int64)
    print(f"{kind}: {num_nodes} nodes, {indptr[-1] / 1e6:.1f}M edges, avg degree "
          f"{deg.mean():.1f}, max {deg.max()}")
    for parallel in (False, True):
        sampler = NeighborSampler(indptr, indices, [5, 10, 15], parallel=parallel)
        sampler.sample(rng.choice(num_nodes, 1024, replace=False), 0)  # JIT warm-up
        wall, cpu = [], []
        for i in range(reps):
            seeds = rng.choice(num_nodes, 1024, replace=False)
            w, c = time.perf_counter(), time.thread_time()
            mb = sampler.sample(seeds, batch_seed(0, 0, 0, i))
            cpu.append(time.thread_time() - c)
            wall.append(time.perf_counter() - w)
        wall_ms, cpu_ms = np.array(wall) * 1e3, np.array(cpu) * 1e3
        print(f"parallel={parallel} (numba threads {numba.get_num_threads()}): wall median "
              f"{np.median(wall_ms):.1f} ms (min {wall_ms.min():.1f}), calling-thread CPU "
              f"median {np.median(cpu_ms):.1f} ms (min {cpu_ms.min():.1f}); "
              f"{len(mb.input_nodes)} input nodes, edges {[b.num_edges for b in mb.blocks]}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
