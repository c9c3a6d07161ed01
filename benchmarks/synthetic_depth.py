"""Does depth matter on a synthetic preset? Test accuracy of 0-hop baselines and GraphSAGE-L.

Usage::

    python benchmarks/synthetic_depth.py [--preset multihop] [--nodes N] [--seeds 0]
        [--layers 1,2,3,4] [--max-hops 6] [--epochs 200] [--hidden 128] [--dropout 0.2]
        [--lr 0.01] [--no-mlp] [--threads T] [--results benchmarks/results/synthetic_depth.json]

Recorded runs (``benchmarks/results/``): ``synthetic_depth.json`` (defaults),
``synthetic_depth_400ep.json`` (``--epochs 400 --layers 2,3 --max-hops 0 --no-mlp``: is the
3-layer model just under-trained at 200 epochs?), ``synthetic_depth_20k.json``
(``--nodes 20000 --threads 1``: a smaller instance of the same preset).

For each seed the preset is generated with that seed (graph, features and split all change)
and these models are trained on it, all with the repo's own code:

* ``ncm``: nearest class mean on the features alone (class means from the training nodes);
* ``ncm_hop<k>`` (k = 1 .. ``--max-hops``): the same on ``Â^k x``, ``Â = D^-1 A`` the mean
  over neighbours (GraphSAGE's aggregator, no self term): how much class signal sits exactly
  k hops away, with no training at all;
* ``mlp``: :func:`~commgnn.models.fullgraph.train_full_graph` with a 2-layer GraphSAGE on the
  same nodes with every edge removed — ``W_self`` only, i.e. a 2-layer MLP (hidden width as
  the GNNs): the 0-hop baseline with the same optimiser and budget;
* ``sage<L>``: ``train_full_graph(ds, "sage", num_layers=L)``, full neighbourhood (mean
  aggregator over all neighbours, every layer), so it sees exactly the L-hop ball.

Every trained model: Adam (lr ``--lr``), no weight decay, dropout ``--dropout`` between layers
(none on the inputs), ``--epochs`` full-graph epochs, the model after the last epoch is
evaluated (no early stopping, no model selection). The JSON records the exact command line,
the resolved spec, generation time and peak RSS right after generation, graph statistics,
every accuracy (and train accuracy, to show under- vs over-fitting) and wall time, and is
rewritten after every model so a partial run leaves its results. No git information is read.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import resource
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse
import torch

from commgnn.data import synthetic
from commgnn.data.store import GraphDataset, graph_statistics
from commgnn.models.fullgraph import train_full_graph

REPO = Path(__file__).resolve().parents[1]
DEFAULT_RESULTS = REPO / "benchmarks" / "results" / "synthetic_depth.json"


def peak_rss_bytes() -> int:
    """Peak RSS of this process (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def nearest_class_mean(ds: GraphDataset) -> float:
    x, y = np.asarray(ds.features, dtype=np.float64), np.asarray(ds.labels)
    tr, te = ds.train_idx, ds.test_idx
    means = np.stack([x[tr][y[tr] == c].mean(0) for c in range(ds.num_classes)])
    correct = 0
    for start in range(0, te.shape[0], 8192):
        rows = te[start:start + 8192]
        dist = ((x[rows][:, None, :] - means[None]) ** 2).sum(-1)
        correct += int((dist.argmin(1) == y[rows]).sum())
    return correct / max(te.shape[0], 1)


def mean_adjacency(ds: GraphDataset) -> scipy.sparse.csr_matrix:
    """``D^-1 A`` (rows of isolated nodes stay zero)."""
    deg = np.diff(np.asarray(ds.indptr)).astype(np.float32)
    values = np.repeat(1.0 / np.maximum(deg, 1.0), deg.astype(np.int64)).astype(np.float32)
    return scipy.sparse.csr_matrix((values, np.asarray(ds.indices), np.asarray(ds.indptr)),
                                   shape=(ds.num_nodes, ds.num_nodes))


def edgeless(ds: GraphDataset) -> GraphDataset:
    """``ds`` with every edge removed: a GNN on it sees only each node's own features."""
    return dataclasses.replace(ds, indptr=np.zeros(ds.num_nodes + 1, dtype=np.int64),
                               indices=np.empty(0, dtype=np.int64))


def summarise(runs: list[dict]) -> dict:
    out: dict[str, dict] = {}
    for model in runs[0]["models"]:
        accs = [r["models"][model]["test_acc"] for r in runs if model in r["models"]]
        out[model] = {"test_acc_mean": round(float(np.mean(accs)), 4),
                      "test_acc_std": round(float(np.std(accs)), 4), "seeds": len(accs)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="multihop", choices=sorted(synthetic.PRESETS))
    parser.add_argument("--nodes", type=int, default=None,
                        help="override the preset's node count (a smaller instance)")
    parser.add_argument("--seeds", default="0", help="comma-separated dataset/training seeds")
    parser.add_argument("--layers", default="1,2,3,4", help="comma-separated GraphSAGE depths")
    parser.add_argument("--max-hops", type=int, default=6,
                        help="largest k for the nearest-class-mean baseline on A^k x")
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--dropout", type=float, default=0.2)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--mlp", action=argparse.BooleanOptionalAction, default=True,
                        help="train the 0-hop MLP baseline")
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    seeds = [int(s) for s in args.seeds.split(",")]
    layers = [int(v) for v in args.layers.split(",")]
    train_kw = {"hidden_dim": args.hidden, "dropout": args.dropout, "input_dropout": 0.0,
                "lr": args.lr, "weight_decay": 0.0, "epochs": args.epochs}

    base_spec = {"preset": args.preset}
    if args.nodes is not None:
        base_spec["nodes"] = args.nodes
    record: dict = {
        "command": " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv]),
        "preset": args.preset,
        "resolved_params": synthetic.resolve_synthetic_spec(base_spec),
        "training": {"model": "sage", "full_graph": True, **train_kw,
                     "evaluated": "model after the last epoch"},
        "runs": [],
        "machine": {"python": platform.python_version(), "numpy": np.__version__,
                    "torch": torch.__version__, "platform": platform.platform(),
                    "cpus": os.cpu_count(), "torch_threads": torch.get_num_threads()},
    }

    def save() -> None:
        if record["runs"] and record["runs"][0]["models"]:
            record["summary"] = summarise(record["runs"])
        args.results.parent.mkdir(parents=True, exist_ok=True)
        args.results.write_text(json.dumps(record, indent=2) + "\n")

    for seed in seeds:
        spec = {"source": "synthetic", **base_spec, "seed": seed}
        t0 = time.perf_counter()
        ds = synthetic.generate_synthetic(spec, name=args.preset)
        gen_s = time.perf_counter() - t0
        rss = peak_rss_bytes()
        deg = ds.degrees()
        rows = np.repeat(np.arange(ds.num_nodes, dtype=np.int64), deg)
        homophily = float((ds.labels[rows] == ds.labels[ds.indices]).mean())
        del rows
        run = {"seed": seed, "generation_wall_s": round(gen_s, 3),
               "peak_rss_bytes_after_generation": rss,
               "peak_rss_mib_after_generation": round(rss / 2**20, 1),
               "stats": {**graph_statistics(ds), "edge_homophily": round(homophily, 5),
                         "median_degree": float(np.median(deg))},
               "models": {}}
        record["runs"].append(run)
        print(f"seed {seed}: generated {ds.num_nodes:,} nodes / {ds.num_edges:,} CSR entries "
              f"in {gen_s:.2f} s, peak RSS {rss / 2**20:.0f} MiB", flush=True)

        t0 = time.perf_counter()
        run["models"]["ncm"] = {"test_acc": round(nearest_class_mean(ds), 4), "hops": 0,
                                "seconds": round(time.perf_counter() - t0, 2)}
        save()
        print(f"  ncm    test {run['models']['ncm']['test_acc']:.4f}", flush=True)
        adj, h = mean_adjacency(ds), np.asarray(ds.features, dtype=np.float32)
        for k in range(1, args.max_hops + 1):
            t0 = time.perf_counter()
            h = adj @ h
            acc = nearest_class_mean(dataclasses.replace(ds, features=h))
            run["models"][f"ncm_hop{k}"] = {"test_acc": round(acc, 4), "hops": k,
                                            "seconds": round(time.perf_counter() - t0, 2)}
            print(f"  ncm_hop{k} test {acc:.4f}", flush=True)
        del adj, h
        save()
        jobs = [("mlp", edgeless(ds), 2, 0)] if args.mlp else []
        jobs += [(f"sage{L}", ds, L, L) for L in layers]
        for name, data, num_layers, hops in jobs:
            r = train_full_graph(data, "sage", num_layers=num_layers, seed=seed, **train_kw)
            run["models"][name] = {"test_acc": round(r["test_acc"], 4),
                                   "val_acc": round(r["val_acc"], 4),
                                   "train_acc": round(r["train_acc"], 4), "hops": hops,
                                   "layers": num_layers, "seconds": round(r["seconds"], 1)}
            save()
            print(f"  {name:6s} test {r['test_acc']:.4f}  train {r['train_acc']:.4f}  "
                  f"({r['seconds']:.0f} s)", flush=True)
    save()
    print(f"results -> {args.results}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
