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
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from commgnn.core.spec import RunSpec
from commgnn.experiments import expand_experiments
from commgnn.runtime.heartbeat import failed_attempt_error

ROOT = Path(__file__).resolve().parent.parent
METHODS = ("forkserver", "spawn")


def run_dir(results: str, spec: RunSpec) -> Path:
    """The run's directory (the workflow's layout, :attr:`RunSpec.run_id`)."""
    return ROOT / results / "runs" / spec.run_id


def log_path(results: str, spec: RunSpec) -> Path:
    """The training job's log (``rule train``'s ``log:``)."""
    return ROOT / results / "logs" / "train" / f"{spec.run_id}.log"


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


def attempts(results: str, spec: RunSpec, finished: bool) -> list[tuple[int, Path]]:
    """The failed attempts' logs the workflow kept (``<log>.attempt<N>``), and the final
    log when the run did not finish (its last attempt failed)."""
    log = log_path(results, spec)
    kept = sorted(log.parent.glob(log.name + ".attempt*"))
    failed = [(int(p.name.rsplit("attempt", 1)[1]), p) for p in kept]
    if not finished and log.exists():
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
    runs = expand_experiments(config)
    by_method = {m: [spec for spec in runs if spec.seed % len(METHODS) == i]
                 for i, m in enumerate(METHODS)}
    walls = {}
    for method, chosen in by_method.items():
        targets = [str(run_dir(results, spec).relative_to(ROOT)) for spec in chosen]
        walls[method] = snakemake(args.config, results, targets, args.jobs, method,
                                  driver_log)
    rows = []
    for method, chosen in by_method.items():
        for spec in chosen:
            done = (run_dir(results, spec) / "summary.json").exists()
            failed = attempts(results, spec, done)
            for number, log in failed:
                kept = out / "logs" / (spec.run_id.replace("/", "__") + f".attempt{number}.log")
                shutil.copyfile(log, kept)
            rows.append(dict(run_id=spec.run_id, system=spec.system, seed=spec.seed,
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
