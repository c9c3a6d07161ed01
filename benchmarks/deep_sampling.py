"""Deep sampling: block sizes, bytes, sample time and peak RSS at 3, 7, 10 layers.

Fan-out 10 for 7–10 layers saturates to most of the graph (HopGNN's DeeperGCN has 7
layers, GNN-FiLM 10). This measures what the sampler, the presampled blocks and the
feature rows cost then, on the synthetic ``arxiv-like`` preset (169,343 nodes, average
degree 13.7, 128 features), METIS into 4 parts, batch 1024, the schedule's batches of
worker 0 in epoch 0 (base seed 0) — or on a dataset and 4-part partition the pipeline
wrote (``--dataset DIR --partition DIR``, e.g. the uk-like stand-in of
``hopgnn_eval_uk.yaml``, where item 3's deep models run):

* ``sample``: one fresh process per depth samples ``--batches`` batches with
  :class:`~commgnn.sampling.neighbor.NeighborSampler` (``fanouts = [10] * L``), writes each
  to a block file (:class:`~commgnn.sampling.blockio.BlockWriter`, the presample format),
  reads it back (:class:`~commgnn.sampling.blockio.BlockReader`: equal to the sample) and
  gathers the batch's feature rows from the memory-mapped dataset (what the feature store
  serves: local rows read, remote rows pulled). Per layer (``blocks[0]`` first): sources,
  destinations, edges; input rows (``blocks[0]``'s sources) and the share of the graph;
  bytes of the blocks in memory (int64 CSR), of the record on disk, of the input features
  (float32); sample, write and read times; peak RSS of the process (``getrusage``) after
  loading the dataset and at the end.
* ``presample``: one fresh process per depth runs the real
  :func:`~commgnn.sampling.presample.presample` for worker 0, one epoch (every batch of
  it): wall time, bytes on disk, peak RSS.
* ``--model NAME`` (optional): one training step (forward, backward) of that model
  (hidden ``--hidden``, ``--model-args`` JSON for its class, e.g. ``{"ckpt_grad": true}``)
  on the first batch, in the sampling process after the rest: its time and the peak RSS
  (the activation memory of deep models).

Writes ``benchmarks/results/deep_sampling.json`` and ``.md`` (the table)::

    nice -n 10 .venv/bin/python benchmarks/deep_sampling.py [--layers 3,7,10] [--batches 3]
        [--no-presample] [--model deepgcn --hidden 16 --model-args '{}'] [--threads 1]
        [--dataset DIR --partition DIR] [--results PATH.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
BATCH, PARTS, FANOUT, SEED = 1024, 4, 10, 0

CONSTANTS = f"PARTS, BATCH, FANOUT, SEED = {PARTS}, {BATCH}, {FANOUT}, {SEED}\n"

SAMPLE_CHILD = CONSTANTS + r"""
import json, os, resource, sys, time
import numpy as np, torch
torch.set_num_threads(int(sys.argv[5]))
from commgnn.data.store import load_dataset
from commgnn.partition import load_partition
from commgnn.sampling.blockio import BlockReader, BlockWriter
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.schedule import epoch_seed_nodes, steps_per_epoch, worker_train_nodes
from commgnn.sampling.seeds import batch_seed

def rss_kb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

ds_dir, part_dir, layers, batches = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
model_name, hidden, tmp = sys.argv[6], int(sys.argv[7]), sys.argv[8]
model_args = json.loads(sys.argv[9])
ds = load_dataset(ds_dir)
owner = np.asarray(load_partition(part_dir, dataset=ds).book.owner)
train = np.asarray(ds.train_idx)
steps = steps_per_epoch(train, owner, PARTS, BATCH)
seeds = epoch_seed_nodes(worker_train_nodes(train, owner, 0), steps, BATCH, SEED, 0, 0)
sampler = NeighborSampler(ds.indptr, ds.indices, [FANOUT] * layers)
sampler.sample(seeds[0][:8], 1)  # numba compile (cached) outside the clock
loaded_kb = rss_kb()
rows = []
first = None
for step in range(min(batches, len(seeds))):
    t0 = time.perf_counter()
    batch = sampler.sample(seeds[step], batch_seed(SEED, 0, 0, step))
    t1 = time.perf_counter()
    nodes = batch.input_nodes.numpy()
    mask = owner[nodes] == 0
    path = f"{tmp}/L{layers}_s{step}.blocks"
    with BlockWriter(path, num_layers=layers, worker=0, epoch=0) as out:
        out.write(step, batch, mask)
    t2 = time.perf_counter()
    with BlockReader(path, num_nodes=ds.num_nodes) as reader:
        back = reader.read(step)
    t3 = time.perf_counter()
    assert torch.equal(back.batch.input_nodes, batch.input_nodes)
    assert all(torch.equal(a.indices, b.indices) and torch.equal(a.indptr, b.indptr)
               for a, b in zip(back.batch.blocks, batch.blocks))
    features = torch.from_numpy(np.ascontiguousarray(ds.features[np.sort(nodes)]))
    t4 = time.perf_counter()
    rows.append({
        "step": step, "seeds": int(len(seeds[step])),
        "layers": [{"src": b.num_src, "dst": b.num_dst, "edges": b.num_edges}
                   for b in batch.blocks],
        "input_rows": int(nodes.shape[0]), "remote_rows": int((~mask).sum()),
        "block_bytes": int(sum(b.indptr.numel() + b.indices.numel()
                               for b in batch.blocks) * 8),
        "record_bytes": int(out.nbytes),
        "feature_bytes": int(features.numel() * features.element_size()),
        "sample_s": t1 - t0, "write_s": t2 - t1, "read_s": t3 - t2, "gather_s": t4 - t3,
    })
    os.remove(path)
    if first is None:
        first = (batch, features)
    del back, features
result = {"layers": layers, "num_nodes": ds.num_nodes, "feature_dim": ds.feature_dim,
          "steps_per_epoch": steps, "rss_loaded_kb": loaded_kb, "batches": rows,
          "peak_rss_kb": rss_kb()}
if model_name != "-":
    from commgnn.models import build_model
    batch, _ = first
    x = torch.from_numpy(np.ascontiguousarray(ds.features[batch.input_nodes.numpy()]))
    y = torch.as_tensor(np.asarray(ds.labels)[batch.seeds.numpy()], dtype=torch.int64)
    torch.manual_seed(0)
    model = build_model(model_name, ds.feature_dim, hidden, ds.num_classes, layers, 0.1,
                        **model_args)
    before = rss_kb()
    t0 = time.perf_counter()
    loss = torch.nn.functional.cross_entropy(model(batch.blocks, x), y)
    loss.backward()
    result["model"] = {"name": model_name, "hidden": hidden, "args": model_args, "step_s":
                       time.perf_counter() - t0, "rss_before_kb": before,
                       "peak_rss_kb": rss_kb()}
print(json.dumps(result))
"""

PRESAMPLE_CHILD = CONSTANTS + r"""
import json, resource, sys, time
from commgnn.sampling.presample import presample
layers = int(sys.argv[4])
start = time.perf_counter()
meta = presample(sys.argv[1], sys.argv[2], sys.argv[3], fanouts=[FANOUT] * layers,
                 batch_size=BATCH, base_seed=SEED, epochs=1, workers=[0])
print(json.dumps({"wall_s": time.perf_counter() - start,
                  "batches": meta["workers"]["0"]["batches"][0],
                  "max_input_nodes": meta["workers"]["0"]["max_input_nodes"][0],
                  "edges": meta["workers"]["0"]["edges"][0],
                  "output_bytes": sum(f["bytes"] for f in meta["files"].values()),
                  "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def _child(code: str, *args) -> dict:
    proc = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True,
                          text=True, check=False)
    if proc.returncode != 0:
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip()[-2000:]}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _mb(n: float) -> str:
    return f"{n / 2**20:,.1f}"


def table(result: dict) -> str:
    """The markdown table: one row per depth (first batch's per-layer sizes)."""
    model = next((row["sample"]["model"] for row in result["depths"]
                  if "model" in row["sample"]), None)
    head = ("| layers | per layer, blocks[0] first: srcs/edges | input rows (of graph) | "
            "blocks MB (mem / file) | features MB | sample s | peak RSS MB (sample / "
            "presample) | presample epoch (batches, GB, s) |")
    rule = "| --- | --- | --- | --- | --- | --- | --- | --- |"
    if model:
        args = f", {model['args']}" if model.get("args") else ""
        head += f" {model['name']}({model['hidden']}{args}) step: s, peak RSS MB |"
        rule += " --- |"
    lines = [head, rule]
    for row in result["depths"]:
        s, p = row["sample"], row.get("presample") or {}
        if "error" in s:
            lines.append(f"| {row['layers']} | failed: {s['error'][:200]} |||||||")
            continue
        b = s["batches"][0]
        per_layer = " · ".join(f"{x['src']:,}/{x['edges']:,}" for x in b["layers"])
        mean_sample = sum(x["sample_s"] for x in s["batches"]) / len(s["batches"])
        pre = ("—" if not p else f"failed: {p['error'][:120]}" if "error" in p else
               f"{p['batches']}, {p['output_bytes'] / 1e9:.2f}, {p['wall_s']:.0f}")
        pre_rss = _mb(p["peak_rss_kb"] * 1024) if p and "error" not in p else "—"
        lines.append(
            f"| {row['layers']} | {per_layer} | {b['input_rows']:,} "
            f"({b['input_rows'] / s['num_nodes']:.0%}) | {_mb(b['block_bytes'])} / "
            f"{_mb(b['record_bytes'])} | {_mb(b['feature_bytes'])} | {mean_sample:.2f} | "
            f"{_mb(s['peak_rss_kb'] * 1024)} / {pre_rss} | {pre} |"
            + (f" {s['model']['step_s']:.1f}, {_mb(s['model']['peak_rss_kb'] * 1024)} |"
               if "model" in s else ""))
    return "\n".join(lines)


def _inputs(args: argparse.Namespace, root: Path) -> tuple[Path, Path]:
    """The dataset and partition directories: the given ones, or arxiv-like generated
    and METIS-partitioned into ``root``."""
    from commgnn.data.store import write_dataset
    from commgnn.data.synthetic import generate_synthetic
    from commgnn.partition import partition_graph, write_partition

    if args.dataset is not None:
        return Path(args.dataset), Path(args.partition)
    ds = generate_synthetic({"preset": "arxiv-like", "seed": 0}, name="arxiv-like")
    write_dataset(ds, root / "ds")
    part = partition_graph(ds, {"method": "metis", "parts": PARTS, "seed": 0})
    write_partition(part, root / "part")
    return root / "ds", root / "part"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", default="3,7,10")
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--no-presample", action="store_true")
    parser.add_argument("--model", default=None)
    parser.add_argument("--hidden", type=int, default=16)
    parser.add_argument("--model-args", default="{}")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--results", default=str(RESULTS / "deep_sampling.json"))
    parser.add_argument("--dataset", default=None,
                        help="a dataset directory the pipeline wrote (default: generate "
                             "arxiv-like)")
    parser.add_argument("--partition", default=None,
                        help="its partition directory (4 parts; with --dataset)")
    args = parser.parse_args(argv)
    if (args.dataset is None) != (args.partition is None):
        parser.error("--dataset and --partition go together")
    layers = [int(x) for x in args.layers.split(",")]

    from commgnn.data.store import load_dataset
    from commgnn.partition import load_partition

    out = Path(args.results)
    result: dict = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "setup": {"dataset": args.dataset or "synthetic arxiv-like, seed 0",
                  "partitioning": args.partition or f"metis {PARTS}",
                  "fanout": FANOUT, "batch_size": BATCH, "worker": 0, "epoch": 0,
                  "base_seed": SEED, "batches_sampled": args.batches,
                  "threads": args.threads},
        "host": {"cpus": os.cpu_count(), "platform": platform.platform()},
        "date": time.strftime("%Y-%m-%d"),
        "depths": [],
    }
    with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        ds_dir, part_dir = _inputs(args, root)
        ds = load_dataset(ds_dir)
        parts = load_partition(part_dir, dataset=ds).book.num_parts  # checked against ds
        if parts != PARTS:
            raise SystemExit(f"{part_dir}: {parts} parts, the benchmark takes {PARTS}")
        result["graph"] = {"nodes": ds.num_nodes, "csr_entries": ds.num_edges,
                           "feature_dim": ds.feature_dim,
                           "csr_bytes": int(ds.indptr.nbytes + ds.indices.nbytes),
                           "feature_bytes": int(ds.features.nbytes),
                           "prepare_s": time.perf_counter() - t0}
        del ds
        for depth in layers:
            row: dict = {"layers": depth}
            row["sample"] = _child(SAMPLE_CHILD, ds_dir, part_dir, depth,
                                   args.batches, args.threads, args.model or "-",
                                   args.hidden, root, args.model_args)
            if not args.no_presample:
                row["presample"] = _child(PRESAMPLE_CHILD, ds_dir, part_dir,
                                          root / f"pre{depth}", depth)
                subprocess.run(["rm", "-rf", str(root / f"pre{depth}")], check=False)
            result["depths"].append(row)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(result, indent=2) + "\n")
            print(json.dumps(row)[:400], flush=True)
    text = table(result)
    out.with_suffix(".md").write_text(
        f"# Deep sampling on {result['setup']['dataset']} (fan-out 10)\n\n"
        f"`{result['command']}` ({result['date']}, {os.cpu_count()} CPUs). Graph: "
        f"{result['graph']['nodes']:,} nodes, {result['graph']['csr_entries']:,} CSR "
        f"entries, {result['graph']['feature_dim']} features "
        f"({_mb(result['graph']['feature_bytes'])} MB), partition "
        f"{result['setup']['partitioning']}, batch {BATCH}, "
        "worker 0, epoch 0. Per-layer sizes and bytes are the epoch's first batch; sample "
        f"time the mean over {args.batches} batches; peak RSS of a fresh process "
        "(sampling + writing + reading + gathering the batches; presample: one whole "
        f"epoch of worker 0). Full results: `{out.name}`.\n\n" + text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
