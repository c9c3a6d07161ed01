"""Reference step times for every workload the configs run, measured on an accelerator.

Time dilation divides this machine's compute-only step by an accelerator's for the same
workload (:mod:`commgnn.train.references`). This script gives that table its rows:

    # here: the workloads of the configs, in order (one JSON file)
    .venv/bin/python benchmarks/reference_steps.py plan config.yaml configs/compare.yaml \
        benchmarks/configs/*.yaml --max-nodes 1500000 > .refjobs/jobs.json
    # on the GPU machine (torch with CUDA, numba; the project's source on PYTHONPATH)
    PYTHONPATH=src python3 benchmarks/reference_steps.py measure .refjobs/jobs.json \
        --device cuda --out $OUT/reference_steps.jsonl --budget-s 420

``measure`` builds each dataset with the project's generator (the workload's graph: its
preset and overrides, seed 0), samples ``--warmup + --steps`` batches of random training
seeds with the project's sampler, and times forward, loss, backward and Adam on the device
(features already there: no fetch, no sync) for each model of the jobs that share the
batches; one JSON line per workload: the workload, the median / p10 / p90 step, the mean
rows per layer and the FLOPs proxy (:func:`commgnn.train.references.step_flops`). Jobs run
in the plan's order until ``--budget-s`` is spent. Only synthetic datasets are planned (the
others need files the GPU machine cannot fetch).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
from pathlib import Path


def plan(args: argparse.Namespace) -> None:
    import yaml

    from commgnn.data.synthetic import resolve_synthetic_spec
    from commgnn.experiments import expand_experiments
    from commgnn.train.workload import StepWorkload, dataset_shape, step_workload

    jobs: dict[str, dict] = {}
    for path in args.configs:
        config = yaml.safe_load(Path(path).read_text())
        for spec in expand_experiments(config):
            entry = config["datasets"][spec.dataset]
            if entry.get("source", "synthetic") != "synthetic":
                continue
            params = resolve_synthetic_spec(entry)
            if params["nodes"] > args.max_nodes:
                continue
            work = step_workload(spec, dataset_shape(entry))
            job = jobs.setdefault(work.key, {
                "workload": work.as_dict(), "key": work.key, "describe": work.describe(),
                "feature_dim": int(params["feature_dim"]), "classes": int(params["classes"]),
                "configs": []})
            if path not in job["configs"]:
                job["configs"].append(path)
    for path in args.extra or []:
        for index, item in enumerate(yaml.safe_load(Path(path).read_text())):
            params = resolve_synthetic_spec(item["dataset"])
            for model in item["models"]:
                arch, _, depth = model.partition("-")
                fanouts = item["fanouts"][int(depth)] if depth else item["fanouts"][2]
                work = StepWorkload(
                    dataset=dataset_shape(item["dataset"]), architecture=arch,
                    layers=len(fanouts), hidden=int(item["hidden"]),
                    heads=int(item.get("heads", 4)) if arch == "gat" else 1,
                    fanouts=tuple(fanouts), batch=int(item["batch"]))
                jobs.setdefault(work.key, {
                    "workload": work.as_dict(), "key": work.key,
                    "describe": work.describe(), "feature_dim": int(params["feature_dim"]),
                    "classes": int(params["classes"]), "configs": [f"{path}[{index}]"]})
    json.dump(list(jobs.values()), sys.stdout, indent=1)
    print()


def measure(args: argparse.Namespace) -> None:
    import numpy as np
    import torch

    from commgnn.core.testbed import SYNTHETIC_GENERATOR
    from commgnn.data.synthetic import generate_synthetic
    from commgnn.models.gnn import build_model
    from commgnn.sampling.neighbor import NeighborSampler
    from commgnn.train.references import layer_dims, layer_rows, mean_layer_rows, step_flops
    from commgnn.train.workload import StepWorkload

    started = time.perf_counter()
    jobs = json.loads(Path(args.jobs).read_text())
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    dataset_key, ds, features, labels = None, None, None, None
    batch_cache: dict[tuple, list] = {}
    with out.open("a") as sink:
        for job in jobs:
            if time.perf_counter() - started > args.budget_s:
                print(f"budget spent: skipped {job['describe']}", flush=True)
                continue
            work = StepWorkload.from_dict(job["workload"])
            shape = {k: v for k, v in work.dataset.items() if k != "source"}
            key = json.dumps(shape, sort_keys=True)
            t0 = time.perf_counter()
            if key != dataset_key:
                ds, features, labels, batch_cache = None, None, None, {}
                if device.type == "cuda":
                    torch.cuda.empty_cache()
                ds = generate_synthetic({**shape, "seed": 0}, name="reference")
                features = torch.from_numpy(np.asarray(ds.features)).to(device)
                labels = torch.from_numpy(np.asarray(ds.labels, dtype=np.int64)).to(device)
                dataset_key = key
            gen_s = time.perf_counter() - t0
            bkey = (work.fanouts, work.batch)
            if bkey not in batch_cache:
                sampler = NeighborSampler(ds.indptr, ds.indices, list(work.fanouts))
                rng = np.random.default_rng(0)
                train = np.asarray(ds.train_idx)
                batch_cache[bkey] = []
                for i in range(args.warmup + args.steps):
                    seeds = np.sort(rng.choice(train, size=min(work.batch, train.shape[0]),
                                               replace=False))
                    batch_cache[bkey].append(sampler.sample(seeds, 1000 + i))  # host
            batches = batch_cache[bkey]
            torch.manual_seed(0)
            model = build_model(work.architecture, ds.feature_dim, work.hidden,
                                ds.num_classes, num_layers=work.layers, dropout=0.5,
                                heads=work.heads, **work.model_kwargs).to(device)
            optimizer = torch.optim.Adam(model.parameters(), lr=0.003)
            try:
                times = _time_steps(batches, model, optimizer, features, labels, device,
                                    args.warmup)
            except torch.OutOfMemoryError:
                print(f"out of device memory: {work.describe()}", flush=True)
                del model, optimizer
                torch.cuda.empty_cache()
                continue
            times.sort()
            rows = mean_layer_rows(layer_rows(b) for b in batches)
            row = {
                "workload": work.as_dict(), "key": work.key, "describe": work.describe(),
                "device": str(device), "device_name": name, "torch": torch.__version__,
                "generator": SYNTHETIC_GENERATOR, "steps": len(times),
                "median_s": statistics.median(times), "p10_s": times[len(times) // 10],
                "p90_s": times[(9 * len(times)) // 10], "layer_rows": rows,
                "flops": step_flops(rows, layer_dims(work, ds.feature_dim, ds.num_classes)),
                "measured": dt.date.today().isoformat()}
            sink.write(json.dumps(row, sort_keys=True) + "\n")
            sink.flush()
            print(f"{row['median_s'] * 1e3:8.3f} ms  {work.describe()}  "
                  f"(dataset {gen_s:.0f} s)", flush=True)
            del model, optimizer


def _time_steps(batches, model, optimizer, features, labels, device, warmup: int) -> list:
    """Seconds of each step after ``warmup`` (:func:`commgnn.train.dilation.time_step`, the
    step the runs' probes time); the batch is moved to the device first, untimed."""
    from commgnn.train.dilation import time_step

    times = []
    for i, host_mb in enumerate(batches):  # one batch on the device at a time
        mb = host_mb.to(device)
        took = time_step(model, optimizer, mb, features[mb.input_nodes], labels[mb.seeds],
                         device)
        if i >= warmup:
            times.append(took)
        del mb
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("plan", help="the configs' workloads, as measure's job list")
    p.add_argument("configs", nargs="+")
    p.add_argument("--max-nodes", type=int, default=2_500_000)
    p.add_argument("--extra", action="append",
                   help="a YAML list of workloads no config runs yet (see the file)")
    p.set_defaults(func=plan)
    m = sub.add_parser("measure", help="time each job's step on a device")
    m.add_argument("jobs")
    m.add_argument("--device", default="cuda")
    m.add_argument("--out", required=True)
    m.add_argument("--warmup", type=int, default=5)
    m.add_argument("--steps", type=int, default=30)
    m.add_argument("--budget-s", type=float, default=420.0)
    m.set_defaults(func=measure)
    args = parser.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
