"""The SLURM path for real: a one-node cluster on localhost (scripts/slurm-local), the tiny
pipeline through ``--profile profiles/slurm``, and a worker task killed under srun.

Skips, with the reason, where SLURM cannot be brought up (not root, no apt, a daemon that
does not start, no executor plugin); a cluster that was already up is left up.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.timeout(900)

CONFIG = {
    "results_dir": "out",
    "datasets": {"tiny": {"source": "synthetic", "preset": "tiny", "seed": 3}},
    "partitionings": {"metis2": {"method": "metis", "parts": 2, "halo_hops": 1}},
    "training": {"epochs": 2, "fanouts": [5, 5], "hidden": 16, "eval_max_nodes": 100},
    "cluster": {"cpus_per_worker": 1},  # the local node may have only 2 CPUs
    "experiments": [{"systems": ["default"], "datasets": ["tiny"], "partitionings": ["metis2"],
                     "batch_sizes": [256], "networks": ["10gbe"]}],
}
RUN = "out/runs/default/tiny/metis2/sage_b256_10gbe_s0"


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


@pytest.fixture(scope="module")
def slurm_cluster(repo_root):
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        pytest.skip("snakemake-executor-plugin-slurm is not installed (pip install -e '.[slurm]')")
    script = repo_root / "scripts" / "slurm-local"
    already_up = subprocess.run([script, "status"], capture_output=True).returncode == 0
    if not already_up:
        proc = subprocess.run([script, "up"], capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:  # 3: not root, no apt; else a daemon did not start
            pytest.skip(f"SLURM did not come up (scripts/slurm-local up exited "
                        f"{proc.returncode}): {_last_line(proc.stderr)}")
    yield
    if not already_up:
        subprocess.run([script, "down"], capture_output=True, timeout=120, check=False)


def _snakemake(repo: Path, workdir: Path, *args: str) -> tuple[subprocess.CompletedProcess, float]:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump(CONFIG))
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"),
         "--directory", str(workdir), "--configfile", str(workdir / "config.yaml"), *args],
        capture_output=True, text=True, check=False, timeout=800)
    return proc, time.perf_counter() - start


def _steps(run: Path, worker: int) -> list[tuple]:
    keys = ("epoch", "step", "remote_rows", "remote_bytes", "remote_rpcs", "local_rows")
    return [tuple(json.loads(line)[k] for k in keys)
            for line in (run / f"steps_w{worker}.jsonl").read_text().splitlines()]


def test_tiny_pipeline_through_the_slurm_profile(slurm_cluster, repo_root, tmp_path):
    proc, slurm_s = _snakemake(
        repo_root, tmp_path / "slurm", "--profile", str(repo_root / "profiles" / "slurm"),
        "--workflow-profile", "none", "--slurm-init-seconds-before-status-checks", "2")
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log[-4000:]
    local, local_s = _snakemake(repo_root, tmp_path / "local", "--cores", "2")
    assert local.returncode == 0, local.stderr[-3000:]
    print(f"wall time: SLURM {slurm_s:.1f} s, --cores 2 {local_s:.1f} s")

    # (a) every job but the `all` target went through SLURM, and SLURM ran it to completion
    submitted = dict(re.findall(r"Job (\d+) has been submitted with SLURM jobid (\d+)", log))
    stats = dict(re.findall(r"^(\w+)\s+(\d+)$", log, re.M))
    # dataset, partition, partition_table, train, runs_table, compare, claims, figure_index
    assert len(submitted) == int(stats["total"]) - int(stats["all"]) == 8
    run_id = re.search(r"SLURM run ID: (\S+)", log).group(1)
    queue = subprocess.run(["squeue", "-h", "-t", "all", "-n", run_id, "-o", "%i|%k|%T"],
                           capture_output=True, text=True, check=True).stdout.split()
    jobs = {job: (comment, state) for job, comment, state in (q.split("|") for q in queue)}
    assert set(jobs) == set(submitted.values())
    assert {state for _, state in jobs.values()} == {"COMPLETED"}
    assert sorted(re.sub(r"_wildcards.*", "", c) for c, _ in jobs.values()) == [
        "rule_claims", "rule_compare", "rule_dataset", "rule_figure_index", "rule_partition",
        "rule_partition_table", "rule_runs_table", "rule_train"]

    # (b) the train cell ran as 2 srun tasks, one worker each
    run = tmp_path / "slurm" / RUN
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["launcher"], summary["world_size"], len(summary["hosts"])) == ("srun", 2, 2)
    train_job = next(job for job, (c, _) in jobs.items() if c.startswith("rule_train"))
    job_info = subprocess.run(["scontrol", "show", "job", train_job], capture_output=True,
                              text=True, check=True).stdout
    assert "NumTasks=2" in job_info
    train_log = (tmp_path / "slurm" / "out/logs/train/default/tiny/metis2/"
                 "sage_b256_10gbe_s0.log").read_text()
    assert {line.split(":", 1)[0] for line in train_log.splitlines() if line[:1].isdigit()} \
        == {"0", "1"}  # srun --label: each task's own lines
    local_summary = json.loads((tmp_path / "local" / RUN / "summary.json").read_text())
    assert local_summary["launcher"] == "spawn"

    # (c) the same communication, step by step, as the workstation run
    for worker in range(2):
        assert _steps(run, worker) == _steps(tmp_path / "local" / RUN, worker)
    assert summary["remote_rows_per_epoch"] == local_summary["remote_rows_per_epoch"] > 0


def _task_pid(marker: str, rank: int) -> int | None:
    """The pid of the srun task ``rank`` whose command line contains ``marker``."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker in cmdline and "commgnn" in cmdline and \
                f"SLURM_PROCID={rank}".encode() in environ:
            return int(proc.name)
    return None


def test_a_killed_srun_task_ends_the_step_naming_it(slurm_cluster, tiny_inputs, make_spec,
                                                    tmp_path):
    spec = make_spec(epochs=200, checkpoint=False)
    out = tmp_path / "killed-run"
    dataset, partition = tiny_inputs
    cmd = ["srun", "--kill-on-bad-exit=1", "--label", "--ntasks=2", "--cpus-per-task=1",
           sys.executable, "-m", "commgnn", "train", "--spec", spec.to_json(), "--dataset",
           str(dataset), "--partition", str(partition), "--out", str(out), "--checkpoints",
           str(tmp_path / "ckpt")]
    srun = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    staging = out.with_name(out.name + ".partial")
    deadline = time.monotonic() + 240
    while not ((staging / "steps_w1.jsonl").is_file() and
               (staging / "steps_w1.jsonl").stat().st_size > 0):
        assert srun.poll() is None, srun.communicate()[1][-3000:]
        assert time.monotonic() < deadline, "training never started under srun"
        time.sleep(0.2)
    victim = _task_pid(str(out), rank=1)
    assert victim is not None
    os.kill(victim, signal.SIGKILL)
    killed = time.monotonic()
    _, stderr = srun.communicate(timeout=60)
    elapsed = time.monotonic() - killed
    print(f"srun ended {elapsed:.1f} s after task 1 was killed")
    assert srun.returncode != 0
    assert elapsed < 30
    assert re.search(r"task 1: Killed", stderr), stderr[-2000:]
    assert _task_pid(str(out), rank=0) is None  # no orphaned worker
    assert not out.exists()  # no half-written run
