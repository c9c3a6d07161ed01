"""How well each synthetic stand-in has the shape of the dataset it stands for: one row per
stand-in × statistic — ``dataset, statistic, published, measured, source`` — in
``<out>.csv``, and a Markdown table in ``<out>.md``.

Statistics: size (nodes, CSR entries), degree (mean, quantiles, max), feature width,
classes, training fraction, edge homophily (the share of CSR entries whose endpoints share a
class); ``metis_random_traffic_<P>``: METIS ÷ Random neighbour traffic over one epoch of a
3-layer model with Grappa's fan-outs 15/10/5 and batch size 1000
(:mod:`commgnn.systems.grappa.figures.grappa_table1`, repeats across batches counted) at P = 2, 4, 8
parts, as remote rows per batch over the first ``--max-batches`` batches of each part (an
estimate of the epoch totals' ratio, as both methods batch the same training set; Grappa
Table 1 gives 0.31 on OGBN-Products and 0.56 on Reddit at 4 parts), with
``random_traffic_growth`` (Random's remote rows per batch at 8 parts over 2, against (1 −
1/8)/(1 − 1/2) = 1.75 while batches do not cover the graph); ``sage_test_acc``: GraphSAGE
test accuracy trained as the published number was (:data:`SAGE_MODELS`: full-graph on
arxiv-like for ``--sage-epochs`` epochs, sampled mini-batches on products- and reddit-like
for ``--sampled-epochs``; only where a published accuracy exists); generation seconds and
peak RSS. Each stand-in
runs in its own process (its peak RSS is its own; ``--jobs`` runs several at once, and
``--merge`` joins tables measured by separate invocations). A stand-in at a scale below 1
keeps the degree, width, classes, fractions and homophily, not the sizes, and not quite the
locality (the near edges' windows start at the average degree, a larger share of a shorter
line: METIS ÷ Random traffic is higher).

    python benchmarks/standins.py --out benchmarks/results/standins \
        arxiv-like:1 reddit-like:0.25 products-like:0.25 uk-like:0.25 in-like:0.25
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

#: Published statistics, each with where it comes from; None: not published.
PUBLISHED: dict[str, dict[str, tuple[float | None, str]]] = {
    "arxiv-like": {
        "nodes": (169_343, "OGB ogbn-arxiv; HopGNN Table 2 (169K)"),
        "csr_entries": (2 * 1_166_243, "OGB: 1,166,243 edges, both directions"),
        "feature_dim": (128, "OGB; HopGNN Table 2"),
        "classes": (40, "OGB ogbn-arxiv"),
        "train_fraction": (90_941 / 169_343, "OGB split (90,941 training nodes)"),
        "sage_test_acc": (0.715, "OGB reference GraphSAGE: 3 layers, hidden 256"),
    },
    "reddit-like": {
        "nodes": (232_965, "RapidGNN Table 1; DGL's Reddit"),
        "csr_entries": (114_615_892, "DGL's Reddit (114.6 M; RapidGNN Table 1: 114.8 M)"),
        "feature_dim": (602, "RapidGNN Table 1"),
        "classes": (41, "DGL's Reddit (RapidGNN Table 1 prints 50)"),
        "train_fraction": (153_431 / 232_965, "DGL's Reddit split (153,431 training nodes)"),
        "metis_random_traffic_2": (3264 / 6106, "Grappa Table 1 (3,264 / 6,106 MB)"),
        "metis_random_traffic_4": (5180 / 9216, "Grappa Table 1 (5,180 / 9,216 MB)"),
        "metis_random_traffic_8": (5512 / 10832, "Grappa Table 1 (5,512 / 10,832 MB)"),
        "sage_test_acc": (0.95, "Hamilton et al. 2017, GraphSAGE: 2 layers"),
    },
    "products-like": {
        "nodes": (2_449_029, "RapidGNN Table 1; OGB ogbn-products"),
        "csr_entries": (123_718_280, "RapidGNN Table 1 (123.7 M); HopGNN Table 2 (61.9 M edges)"),
        "feature_dim": (100, "RapidGNN Table 1"),
        "classes": (47, "RapidGNN Table 1"),
        "train_fraction": (196_615 / 2_449_029, "OGB split (196,615 training nodes)"),
        "metis_random_traffic_2": (5000 / 21448, "Grappa Table 1 (5,000 / 21,448 MB)"),
        "metis_random_traffic_4": (10120 / 32160, "Grappa Table 1 (10,120 / 32,160 MB)"),
        "metis_random_traffic_8": (11072 / 37682, "Grappa Table 1 (11,072 / 37,682 MB)"),
        "sage_test_acc": (0.787, "OGB reference GraphSAGE: 3 layers, hidden 256"),
    },
    "uk-like": {
        "nodes": (1_000_000, "HopGNN Table 2 (UK, uk-2006-05)"),
        "csr_entries": (41_200_000, "HopGNN Table 2 (41.2 M edges)"),
        "feature_dim": (600, "HopGNN Table 2 (random features)"),
    },
    "in-like": {
        "nodes": (1_380_000, "HopGNN Table 2 (IN, indochina-2004)"),
        "csr_entries": (16_900_000, "HopGNN Table 2 (16.9 M edges)"),
        "feature_dim": (600, "HopGNN Table 2 (random features)"),
    },
}
NOT_PUBLISHED = {
    "degree_p50": "degree quantiles: not published in the papers",
    "edge_homophily": "not published in the papers",
    "metis_random_traffic_2": "no locality figure published for this dataset",
    "metis_random_traffic_4": "no locality figure published for this dataset",
    "metis_random_traffic_8": "no locality figure published for this dataset",
    "classes": "not published (no labels: HopGNN adds random features)",
    "train_fraction": "not published (no split)",
    "sage_test_acc": "not published",
}
#: The model each published accuracy was measured with: OGB's full-batch GraphSAGE on
#: ogbn-arxiv (3 layers, hidden 256, 500 epochs); OGB's neighbour-sampling GraphSAGE on
#: ogbn-products (3 layers, hidden 256, fan-outs 15/10/5, batches of 1024 — its full-batch
#: reference reaches the same 0.787 and does not fit here); Hamilton et al.'s GraphSAGE-mean
#: on Reddit (2 layers, hidden 256, fan-outs 25/10, batches of 512, sampled inference); each
#: with its reference's Adam learning rate (``lr``).
SAGE_MODELS: dict[str, dict] = {
    "arxiv-like": {"kind": "full", "layers": 3, "lr": 0.01},
    "products-like": {"kind": "sampled", "layers": 3, "fanouts": (15, 10, 5),
                      "batch_size": 1024, "lr": 0.003},
    "reddit-like": {"kind": "sampled", "layers": 2, "fanouts": (25, 10), "batch_size": 512,
                    "lr": 0.01},
}
SAGE_HIDDEN = 256


def measure(preset: str, scale: float, max_batches: int, sage_epochs: int,
            sampled_epochs: int) -> dict:
    """Every statistic of ``preset`` at ``scale`` of its nodes (run in its own process)."""
    from commgnn.data.synthetic import PRESETS, generate_synthetic
    from commgnn.models.fullgraph import train_full_graph
    from commgnn.models.minibatch import train_sampled
    from commgnn.partition import partition_graph
    from commgnn.sampling.batches import epoch_batches
    from commgnn.sampling.neighbor import NeighborSampler
    from commgnn.sampling.seeds import batch_seed
    from commgnn.systems.grappa.figures.grappa_table1 import BATCH_SIZE, FANOUTS

    nodes = max(1000, round(PRESETS[preset]["nodes"] * scale))
    start = time.perf_counter()
    ds = generate_synthetic({"source": "synthetic", "preset": preset, "nodes": nodes,
                             "seed": 0}, name=preset)
    out = {"generation_s": time.perf_counter() - start,
           "generation_peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    degree = np.diff(np.asarray(ds.indptr))
    labels = np.asarray(ds.labels)
    src = np.repeat(np.arange(ds.num_nodes), degree)
    out.update(nodes=ds.num_nodes, csr_entries=int(degree.sum()), avg_degree=degree.mean(),
               degree_p50=np.quantile(degree, 0.5), degree_p90=np.quantile(degree, 0.9),
               degree_p99=np.quantile(degree, 0.99), degree_max=int(degree.max()),
               feature_dim=ds.feature_dim, classes=ds.num_classes,
               train_fraction=len(ds.train_idx) / ds.num_nodes,
               edge_homophily=float((labels[src] == labels[np.asarray(ds.indices)]).mean()))
    del src
    sampler = NeighborSampler(ds.indptr, ds.indices, list(FANOUTS))
    train = np.asarray(ds.train_idx)
    per_batch: dict[tuple[str, int], float] = {}
    for parts in (2, 4, 8):
        for method in ("metis", "random"):
            owner = np.asarray(partition_graph(ds, {"method": method, "parts": parts,
                                                    "seed": 0}).book.owner)
            total, counted = 0, 0
            for part in range(parts):
                batches = epoch_batches(train[owner[train] == part], BATCH_SIZE, 0, part, 0)
                for step, seeds in enumerate(batches[:max_batches]):
                    batch = sampler.sample(seeds, batch_seed(0, part, 0, step))
                    total += int((owner[batch.input_nodes.numpy()] != part).sum())
                    counted += 1
            per_batch[method, parts] = total / max(1, counted)
        out[f"metis_random_traffic_{parts}"] = (per_batch["metis", parts]
                                                / per_batch["random", parts])
    out["random_traffic_growth"] = per_batch["random", 8] / per_batch["random", 2]
    model = SAGE_MODELS.get(preset)
    if model is not None and model["kind"] == "full" and sage_epochs > 0:
        result = train_full_graph(ds, "sage", hidden_dim=SAGE_HIDDEN,
                                  num_layers=model["layers"], dropout=0.5, lr=model["lr"],
                                  weight_decay=0.0, epochs=sage_epochs, seed=0)
        out.update(sage_test_acc=result["test_acc"], sage_seconds=result["seconds"],
                   sage_model=f"{model['layers']} layers, hidden {SAGE_HIDDEN}, full graph, "
                              f"{sage_epochs} epochs")
    elif model is not None and sampled_epochs > 0:
        result = train_sampled(ds, "sage", hidden_dim=SAGE_HIDDEN, num_layers=model["layers"],
                               fanouts=model["fanouts"], batch_size=model["batch_size"],
                               epochs=sampled_epochs, dropout=0.5, lr=model["lr"], seed=0)
        fanouts = "/".join(map(str, model["fanouts"]))
        out.update(sage_test_acc=result["test_acc"], sage_seconds=result["seconds"],
                   sage_model=f"{model['layers']} layers, hidden {SAGE_HIDDEN}, fan-outs "
                              f"{fanouts}, batches of {model['batch_size']}, "
                              f"{sampled_epochs} epochs, sampled inference on up to 20,000 "
                              f"test nodes")
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {k: (float(v) if isinstance(v, np.floating | np.integer) else v)
            for k, v in out.items()}


def rows_for(preset: str, scale: float, measured: dict, command: str) -> list[dict]:
    """The table's rows of one stand-in."""
    published = PUBLISHED.get(preset, {})
    name = preset if scale == 1 else f"{preset} ×{scale:g}"
    rows = []
    for statistic, value in measured.items():
        if statistic in ("sage_seconds", "sage_model"):
            continue
        known, source = published.get(statistic, (None, ""))
        if known is None:
            if statistic.startswith(("generation", "peak")):
                source = command
            elif statistic == "random_traffic_growth":
                source = "expected (1 − 1/8) / (1 − 1/2) = 1.75"
            elif statistic.startswith(("degree_", "avg_degree")):
                known = (published["csr_entries"][0] / published["nodes"][0]
                         if statistic == "avg_degree" and "csr_entries" in published else None)
                source = ("published CSR entries ÷ nodes" if known is not None
                          else NOT_PUBLISHED["degree_p50"])
            else:
                source = NOT_PUBLISHED.get(statistic, "not published")
        if statistic == "sage_test_acc":
            source += f" (ours: {measured['sage_model']})"
        rows.append({"dataset": name, "statistic": statistic, "published": known,
                     "measured": value, "source": source})
    return rows


def markdown(table: pd.DataFrame) -> str:
    lines = ["# Synthetic stand-ins against the datasets they stand for", "",
             "Generated by `benchmarks/standins.py` (module doc: what each statistic is and "
             "how it is measured). A stand-in at a scale below 1 (×0.25: for this machine) "
             "keeps the degrees, width, classes, fractions and homophily, not the sizes, and "
             "not quite the locality: its near edges' windows start at the average degree, "
             "a larger share of a shorter line, so METIS ÷ Random traffic is higher than at "
             "full scale (compare its rows).", "",
             "| dataset | statistic | published | measured | source |",
             "|---|---|---|---|---|"]
    for _, r in table.iterrows():
        pub = "" if r["published"] is None or pd.isna(r["published"]) else f"{r['published']:.4g}"
        lines.append(f"| {r['dataset']} | {r['statistic']} | {pub} | {r['measured']:.4g} | "
                     f"{r['source']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("standins", nargs="*", help="preset[:scale]")
    parser.add_argument("--out", default="benchmarks/results/standins")
    parser.add_argument("--max-batches", type=int, default=8)
    parser.add_argument("--sage-epochs", type=int, default=100,
                        help="full-graph epochs (arxiv-like)")
    parser.add_argument("--sampled-epochs", type=int, default=3,
                        help="mini-batch epochs (products-, reddit-like)")
    parser.add_argument("--jobs", type=int, default=1,
                        help="stand-ins measured at once, each in its own process")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # preset:scale, in a child process
    parser.add_argument("--merge", nargs="+", metavar="CSV",
                        help="join tables measured apart (in this order) into --out instead")
    args = parser.parse_args()
    if args.merge:
        table = pd.concat([pd.read_csv(path) for path in args.merge], ignore_index=True)
        table.to_csv(Path(args.out).with_suffix(".csv"), index=False)
        Path(args.out).with_suffix(".md").write_text(markdown(table))
        return
    if args.one:
        preset, scale = args.one.split(":")
        print(json.dumps(measure(preset, float(scale), args.max_batches, args.sage_epochs,
                                 args.sampled_epochs)))
        return
    command = "python benchmarks/standins.py " + " ".join(sys.argv[1:])
    out = Path(args.out)
    items = [(item.partition(":")[0], float(item.partition(":")[2] or 1))
             for item in args.standins]
    children: dict[int, subprocess.Popen] = {}
    measured: dict[int, dict] = {}
    waiting = list(range(len(items)))
    while waiting or children:
        while waiting and len(children) < args.jobs:
            k = waiting.pop(0)
            children[k] = subprocess.Popen(
                [sys.executable, __file__, "--one", f"{items[k][0]}:{items[k][1]}",
                 "--max-batches", str(args.max_batches), "--sage-epochs", str(args.sage_epochs),
                 "--sampled-epochs", str(args.sampled_epochs), "x"],
                stdout=subprocess.PIPE, text=True)
        ended = [k for k, child in children.items() if child.poll() is not None]
        if not ended:
            time.sleep(1)
            continue
        k = ended[0]
        child = children[k]
        stdout, _ = child.communicate()
        del children[k]
        if child.returncode != 0:
            for other in children.values():
                other.kill()
            raise SystemExit(f"standins: {items[k][0]} ×{items[k][1]:g} failed "
                             f"(exit {child.returncode}); its errors are above")
        measured[k] = json.loads(stdout.strip().splitlines()[-1])
        rows = [row for i in sorted(measured) for row in rows_for(*items[i], measured[i],
                                                                  command)]
        table = pd.DataFrame(rows, columns=["dataset", "statistic", "published", "measured",
                                            "source"])
        table.to_csv(out.with_suffix(".csv"), index=False)  # rewritten after each stand-in
        out.with_suffix(".md").write_text(markdown(table))
        print(f"{items[k][0]} ×{items[k][1]:g}: done", file=sys.stderr, flush=True)

if __name__ == "__main__":
    main()
