"""Compute-only training step time: forward, loss, backward and Adam step on blocks whose
features are already on the device (no fetch, no sync). The reference time-dilation
needs: a step here vs. the same step on an accelerator.

The graph is the synthetic generator's (a preset, optionally fewer nodes so it builds
quickly; the degree distribution and so the block sizes follow the preset's shape), the
batches are sampled with the project's sampler (DGL ``to_block`` layout, de-duplicated
sources) from random training seeds, the model is the project's.

    .venv/bin/python benchmarks/compute_step.py --preset products-like --nodes 500000 \
        --model sage --hidden 256 --fanouts 25,10 --batch 1000 --device cpu --threads 1

Prints one JSON object: the workload, the device, median / p10 / p90 step seconds over
``--steps`` timed steps (after ``--warmup``), and mean input nodes per batch.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as F

from commgnn.data.synthetic import generate_synthetic
from commgnn.models.gnn import build_model
from commgnn.sampling.neighbor import NeighborSampler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="products-like")
    parser.add_argument("--nodes", type=int, default=None, help="override the preset's size")
    parser.add_argument("--feature-dim", type=int, default=None)
    parser.add_argument("--model", default="sage")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--fanouts", default="25,10", help="input layer first")
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    params = {"preset": args.preset, "seed": args.seed}
    if args.nodes:
        params["nodes"] = args.nodes
    if args.feature_dim:
        params["feature_dim"] = args.feature_dim
    ds = generate_synthetic(params, name=args.preset)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    sampler = NeighborSampler(ds.indptr, ds.indices, fanouts)
    device = torch.device(args.device)
    features = torch.from_numpy(np.asarray(ds.features)).to(device)
    labels = torch.from_numpy(np.asarray(ds.labels, dtype=np.int64)).to(device)
    torch.manual_seed(args.seed)
    model = build_model(args.model, ds.feature_dim, args.hidden, ds.num_classes,
                        num_layers=len(fanouts), dropout=0.5).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.003)
    rng = np.random.default_rng(args.seed)
    train = np.asarray(ds.train_idx)
    batches = []
    for i in range(args.warmup + args.steps):
        seeds = np.sort(rng.choice(train, size=min(args.batch, train.shape[0]), replace=False))
        mb = sampler.sample(seeds, 1000 + i).to(device)
        batches.append((mb, features[mb.input_nodes], labels[mb.seeds]))
    times = []
    for i, (mb, x, y) in enumerate(batches):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(mb.blocks, x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if i >= args.warmup:
            times.append(time.perf_counter() - t0)
    times.sort()
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor()
    print(json.dumps({
        "preset": args.preset, "nodes": ds.num_nodes, "feature_dim": ds.feature_dim,
        "model": args.model, "hidden": args.hidden, "fanouts": fanouts, "batch": args.batch,
        "device": str(device), "device_name": name or platform.machine(),
        "threads": torch.get_num_threads(), "torch": torch.__version__,
        "steps": len(times), "median_s": statistics.median(times),
        "p10_s": times[len(times) // 10], "p90_s": times[(9 * len(times)) // 10],
        "mean_input_nodes": float(np.mean([b[0].input_nodes.numel() for b in batches])),
    }, sort_keys=True))


if __name__ == "__main__":
    main()
