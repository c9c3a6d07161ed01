"""The soak: many congested runs back to back, failures counted and their logs kept.

Every training run of a soak config (``benchmarks/configs/soak.yaml``: the comparison's
workload under single-link congestion, every system, several seeds) goes through the real
pipeline (Snakemake, ``--keep-going``), each seed's runs under one worker start method
(``COMMGNN_WORKER_START``: seeds alternate between the fork server and spawn), with
``--jobs`` training runs at once so the machine is kept busy by the runs themselves.
Snakemake retries a failed training run once (the workflow's ``retries``); the soak counts
every failed attempt, the retried ones included, from the runs' summaries (``attempt``)
and the attempts' logs the workflow keeps (``<log>.attempt<N>``), and copies each failed
attempt's log beside the result.

    .venv/bin/python benchmarks/soak.py --label after [--config C] [--jobs 3]

writes ``benchmarks/results/soak_<label>/{soak.csv,soak.md,logs/}``.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from commgnn.dist.heartbeat import failed_attempt_error

ROOT = Path(__file__).resolve().parent.parent
METHODS = ("forkserver", "spawn")


def cells(config: dict) -> list[dict]:
    """Every training run of ``config``'s experiments (one dict per run)."""
    found = []
    for exp in config["experiments"]:
        for system, dataset, part, model, batch, network, seed in itertools.product(
                exp["systems"], exp["datasets"], exp["partitionings"], exp["models"],
                exp["batch_sizes"], exp["networks"], exp["seeds"]):
            found.append(dict(system=system, dataset=dataset, partitioning=part,
                              model=model, batch=batch, network=network, seed=seed))
    return found


def run_path(results: str, cell: dict) -> str:
    """The run's directory (the workflow's layout) relative to the repository root."""
    return (f"{results}/runs/{cell['system']}/{cell['dataset']}/{cell['partitioning']}/"
            f"{cell['model']}_b{cell['batch']}_{cell['network']}_s{cell['seed']}")


def log_path(results: str, cell: dict) -> str:
    return run_path(results, cell).replace(f"{results}/runs/", f"{results}/logs/train/") + ".log"


def snakemake(config: Path, results: str, targets: list[str], jobs: int, method: str,
              log: Path) -> float:
    """Run the pipeline for ``targets`` with ``method``; the wall seconds it took."""
    env = dict(os.environ, COMMGNN_WORKER_START=method)
    cmd = [sys.executable, "-m", "snakemake", *targets, "--cores", str(jobs),
           "--set-threads", "train=1", "--keep-going", "--configfile", str(config),
           "--config", f"results_dir={results}"]
    start = time.monotonic()
    with log.open("a") as out:
        out.write(f"$ COMMGNN_WORKER_START={method} {' '.join(cmd)}\n")
        out.flush()
        subprocess.run(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
                       check=False)
    return time.monotonic() - start


def attempts(results: str, cell: dict) -> list[tuple[int, Path]]:
    """The failed attempts' logs the workflow kept (``<log>.attempt<N>``), and the final
    log when the run has no summary (its last attempt failed)."""
    log = ROOT / log_path(results, cell)
    kept = sorted(log.parent.glob(log.name + ".attempt*"))
    failed = [(int(p.name.rsplit("attempt", 1)[1]), p) for p in kept]
    if not (ROOT / run_path(results, cell) / "summary.json").exists() and log.exists():
        failed.append((len(failed) + 1, log))
    return failed


def commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    return done.stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--config", type=Path, default=ROOT / "benchmarks/configs/soak.yaml")
    ap.add_argument("--label", required=True, help="the result's name: soak_<label>")
    ap.add_argument("--jobs", type=int, default=3, help="training runs at once")
    ap.add_argument("--results", default=None, help="pipeline results directory "
                    "(default: results/soak-<label>)")
    args = ap.parse_args()
    config = yaml.safe_load(args.config.read_text())
    results = args.results or f"results/soak-{args.label}"
    out = ROOT / "benchmarks/results" / f"soak_{args.label}"
    (out / "logs").mkdir(parents=True, exist_ok=True)
    driver_log = out / "snakemake.log"
    driver_log.write_text("")
    runs = cells(config)
    by_method = {m: [c for c in runs if c["seed"] % len(METHODS) == i]
                 for i, m in enumerate(METHODS)}
    walls = {}
    for method, chosen in by_method.items():
        walls[method] = snakemake(args.config, results, [run_path(results, c) for c in chosen],
                                  args.jobs, method, driver_log)
    rows = []
    for method, chosen in by_method.items():
        for cell in chosen:
            failed = attempts(results, cell)
            done = (ROOT / run_path(results, cell) / "summary.json").exists()
            run_id = run_path(results, cell).split("/runs/", 1)[1]
            for number, log in failed:
                kept = out / "logs" / (run_id.replace("/", "__") + f".attempt{number}.log")
                shutil.copyfile(log, kept)
            rows.append(dict(run_id=run_id, system=cell["system"], seed=cell["seed"],
                             start_method=method, finished=done,
                             failed_attempts=len(failed),
                             causes=" | ".join(failed_attempt_error(log) for _, log in failed)))
    with (out / "soak.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    failures = sum(r["failed_attempts"] for r in rows)
    unfinished = sum(not r["finished"] for r in rows)
    lines = [f"# Soak `{args.label}`", "",
             f"Command: `.venv/bin/python benchmarks/soak.py --label {args.label} --config "
             f"{args.config.relative_to(ROOT)} --jobs {args.jobs}` at commit {commit()}, "
             f"{time.strftime('%Y-%m-%d')}.", "",
             f"- runs: {len(rows)} ({', '.join(f'{m}: {len(c)}' for m, c in by_method.items())})",
             f"- wall: {', '.join(f'{m} {w / 60:.1f} min' for m, w in walls.items())}",
             f"- failed attempts: {failures}; runs unfinished after the workflow's retry: "
             f"{unfinished}", ""]
    if failures:
        lines += ["| run | start method | failed attempts | finished | cause |",
                  "| --- | --- | --- | --- | --- |"]
        lines += [f"| {r['run_id']} | {r['start_method']} | {r['failed_attempts']} | "
                  f"{r['finished']} | {r['causes']} |" for r in rows if r["failed_attempts"]]
        lines += ["", "Each failed attempt's log: `logs/`."]
    (out / "soak.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
