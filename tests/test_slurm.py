"""The SLURM path for real: a one-node cluster on localhost (scripts/slurm-local), the tiny
pipeline through ``--profile profiles/slurm``, a job no node can hold refused before any
submission (commgnn.slurm_fit, also unit-tested here on hand-written sinfo outputs), and a
worker task killed under srun.

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
from types import SimpleNamespace

import pytest
import yaml

from commgnn import slurm_fit
from commgnn.slurm_fit import Node, Partition, Request

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


def _snakemake(repo: Path, workdir: Path, *args: str, config: dict | None = None
               ) -> tuple[subprocess.CompletedProcess, float]:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump(config or CONFIG))
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


def test_a_job_no_node_can_hold_is_refused_before_any_submission(slurm_cluster, repo_root,
                                                                 tmp_path):
    # 2 workers x more CPUs than the largest node has: SLURM would leave the train job
    # pending (PartitionConfig) for ever; the workflow stops before submitting anything.
    listing = subprocess.run(["sinfo", "-h", "-o", "%P %c"], capture_output=True, text=True,
                             check=True).stdout.split("\n")
    default = next(line.split() for line in listing if line.split()[0].endswith("*"))
    partition, largest = default[0].rstrip("*"), int(default[1].rstrip("+"))
    cpus = max(4, largest)
    config = {**CONFIG, "cluster": {"cpus_per_worker": cpus}}
    proc, seconds = _snakemake(
        repo_root, tmp_path / "unfit", "--profile", str(repo_root / "profiles" / "slurm"),
        "--workflow-profile", "none", "--slurm-init-seconds-before-status-checks", "2",
        config=config)
    log = proc.stdout + proc.stderr
    print(f"refused after {seconds:.1f} s")
    assert proc.returncode == 1, log[-3000:]
    assert seconds < 60
    assert (f"commgnn: rule train ({RUN}) asks 2 tasks × {cpus} CPUs = {2 * cpus} CPUs on "
            f"one node; the largest node of partition {partition} has {largest} CPUs: lower "
            f"cluster.cpus_per_worker") in log, log[-3000:]
    assert [line for line in log.splitlines() if line.startswith("commgnn: rule")] == [
        next(line for line in log.splitlines() if line.startswith("commgnn: rule train"))]
    assert "submitted with SLURM jobid" not in log
    run_id = re.search(r"SLURM run ID: (\S+)", log).group(1)
    assert subprocess.run(["squeue", "-h", "-t", "all", "-n", run_id], capture_output=True,
                          text=True, check=True).stdout.strip() == ""
    assert not (tmp_path / "unfit" / "out").exists()  # not even the dataset job ran


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


# --- commgnn.slurm_fit on hand-written sinfo outputs (no cluster needed) ---------------

SINFO = """\
debug*|n01|2|21694|(null)|infinite|1-infinite|
cpu|c01|64|256000|(null)|2-00:00:00|1-4|
cpu|c02|64|256000|(null)|2-00:00:00|1-4|
cpu|c03|32|512000|(null)|2-00:00:00|1-4|
gpu|g01|32|512000|gpu:a100:4(S:0-1)|12:00:00|1-infinite|
gpu|g02|32|512000|gpu:a100:4(S:0-1),mps:200|12:00:00|1-infinite|
"""


def _partitions(text: str = SINFO) -> dict[str, Partition]:
    return slurm_fit.parse_sinfo(text.replace("|\n", "\n"))


def test_sinfo_lines_become_partitions_with_their_nodes():
    parts = _partitions()
    assert sorted(parts) == ["cpu", "debug", "gpu"]
    assert parts["debug"] == Partition("debug", (Node("n01", 2, 21694, 0),), None, None,
                                       default=True)
    assert [n.cpus for n in parts["cpu"].nodes] == [64, 64, 32]
    assert (parts["cpu"].max_minutes, parts["cpu"].max_nodes, parts["cpu"].default) == \
        (2 * 24 * 60, 4, False)
    assert [n.gpus for n in parts["gpu"].nodes] == [4, 4]
    assert parts["gpu"].max_minutes == 12 * 60
    # sinfo -M names the cluster first; a node listed twice counts once
    again = _partitions("CLUSTER: big\n" + SINFO + "cpu|c01|64|256000|(null)|2-00:00:00|1-4|\n")
    assert again == parts
    with pytest.raises(slurm_fit.SinfoError, match="unexpected sinfo line"):
        slurm_fit.parse_sinfo("debug*|n01|two|100|(null)|infinite|1-infinite")


@pytest.mark.parametrize("text,minutes", [
    ("infinite", None), ("UNLIMITED", None), ("30", 30), ("30:00", 30), ("30:01", 31),
    ("2:00:00", 120), ("1-00:00:00", 1440), ("1-02:03:00", 1563)])
def test_slurm_time_limits_in_minutes(text, minutes):
    assert slurm_fit.parse_minutes(text) == minutes


@pytest.mark.parametrize("gres,gpus", [("(null)", 0), ("gpu:2", 2), ("gpu:a100:4(S:0-1)", 4),
                                       ("mps:200,gpu:v100:2,gpu:a100:1", 3)])
def test_gpus_of_a_nodes_gres(gres, gpus):
    assert slurm_fit.parse_gpus(gres) == gpus


TRAIN = {"tasks": 2, "cpus_per_task": 4, "mem_mb": 2400, "runtime": 12, "nodes": 1, "gpu": 0,
         "tasks_per_gpu": 0, "mpi": "srun"}


def test_a_train_cells_resources_as_the_plugin_submits_them():
    req = slurm_fit.request_of(TRAIN, threads=4)
    assert req == Request(tasks=2, cpus_per_task=4, nodes=1, mem_mb=2400, runtime=12)
    assert req.cpu_source == "cpus_per_task"
    # no cpus_per_task: the rule's threads; an unknown (TBD) memory is left out
    light = slurm_fit.request_of({"mem_mb": "<TBD>", "slurm_partition": "cpu"}, threads=3)
    assert light == Request(cpus_per_task=3, partition="cpu")
    assert light.cpu_source == "threads"
    # a GPU cell: --gpus=4 --ntasks-per-gpu=1, plus --ntasks=4 as an MPI job
    gpu = slurm_fit.request_of({**TRAIN, "tasks": 4, "gpu": 4, "tasks_per_gpu": 1}, threads=1)
    assert (gpu.tasks, gpu.gpus, gpu.nodes) == (4, 4, 1)
    # not MPI: tasks per GPU times GPUs; cpus_per_gpu spread over them
    gpu = slurm_fit.request_of({"gpu": 2, "tasks_per_gpu": 1, "cpus_per_gpu": 8}, threads=1)
    assert (gpu.tasks, gpu.cpus_per_task, gpu.cpu_source) == (2, 8, "cpus_per_gpu")
    assert slurm_fit.request_of({"gres": "gpu:a100:2"}, 1).gpus_per_node == 2
    assert slurm_fit.request_of({"slurm_cluster": "big"}, 1).cluster == "big"


def test_a_request_no_node_can_hold_is_named_against_the_largest_node():
    parts = _partitions()
    req = slurm_fit.request_of(TRAIN, threads=4)
    shortfall = slurm_fit.problem(req, [parts["debug"]])
    assert shortfall.what == "cpus"
    assert shortfall.text() == ("asks 2 tasks × 4 CPUs = 8 CPUs on one node; the largest "
                                "node of partition debug has 2 CPUs")
    assert slurm_fit.hint("train", shortfall, req).startswith("lower cluster.cpus_per_worker")
    assert slurm_fit.problem(req, [parts["cpu"]]) is None
    assert slurm_fit.problem(Request(cpus_per_task=2), [parts["debug"]]) is None

    one = slurm_fit.problem(Request(cpus_per_task=3), [parts["debug"]])
    assert one.text() == "asks 3 CPUs on one node; the largest node of partition debug has 2 CPUs"
    mem = slurm_fit.problem(Request(mem_mb=600_000), [parts["cpu"]])
    assert mem.text() == ("asks 600000 MB of memory on one node; the largest node of "
                          "partition cpu has 512000 MB")
    per_cpu = slurm_fit.problem(Request(cpus_per_task=64, mem_mb_per_cpu=9000), [parts["cpu"]])
    assert per_cpu.what == "mem" and per_cpu.asks == "576000 MB of memory on one node"
    gpus = slurm_fit.problem(Request(gpus=2, nodes=1), [parts["cpu"]])
    assert gpus.text() == "asks 2 GPUs on one node; the largest node of partition cpu has 0 GPUs"
    assert slurm_fit.problem(Request(gpus=8, nodes=2, tasks=8), [parts["gpu"]]) is None
    assert slurm_fit.problem(Request(gpus=8, nodes=1), [parts["gpu"]]).what == "gpus"
    late = slurm_fit.problem(Request(runtime=3000), [parts["cpu"]])
    assert late.text() == "asks 3000 minutes; the time limit of partition cpu is 2880 minutes"
    assert slurm_fit.hint("train", late, Request()).startswith("lower cluster.runtime_factor")


def test_a_request_over_several_nodes():
    parts = _partitions()
    # 3 nodes of 64 CPUs: the cpu partition has 2 (c03 has 32)
    wide = slurm_fit.problem(Request(tasks=3, cpus_per_task=64, nodes=3), [parts["cpu"]])
    assert wide.text() == ("asks 3 nodes with 64 CPUs each; partition cpu has 2 such nodes")
    # more nodes than a job of the partition may have
    many = slurm_fit.problem(Request(tasks=5, nodes=5), [parts["cpu"]])
    assert many.text() == "asks 5 nodes; a job of partition cpu may have at most 4 nodes"
    # every dimension fits some node, but no node all at once
    both = slurm_fit.problem(Request(cpus_per_task=64, mem_mb=400_000, nodes=1),
                             [parts["cpu"]])
    assert both.what == "node" and both.offers.startswith("no node of partition cpu has all")
    # without --nodes SLURM spreads the tasks: 32-CPU tasks, 2 each on c01 and c02, 1 on c03
    assert slurm_fit.problem(Request(tasks=4, cpus_per_task=32), [parts["cpu"]]) is None
    spread = slurm_fit.problem(Request(tasks=6, cpus_per_task=64), [parts["cpu"]])
    assert spread.text() == ("asks 6 tasks × 64 CPUs = 384 CPUs in all; the nodes of "
                             "partition cpu hold at most 2 such tasks")
    per_task = slurm_fit.problem(Request(tasks=2, cpus_per_task=4), [parts["debug"]])
    assert per_task.asks == "4 CPUs per task"


def _job(rule: str, resources: dict, output: str, threads: int = 1) -> SimpleNamespace:
    return SimpleNamespace(rule=SimpleNamespace(name=rule), resources=resources,
                           threads=threads, output=[output], wildcards_dict={})


def test_the_workflows_unfit_jobs_one_line_per_rule_and_shortfall():
    queries = []

    def query(cluster):
        queries.append(cluster)
        return _partitions()

    jobs = [_job("dataset", {"mem_mb": 2000}, "out/datasets/tiny"),
            _job("train", TRAIN, "out/runs/a", threads=4),
            _job("train", TRAIN, "out/runs/b", threads=4),
            _job("train", {**TRAIN, "slurm_partition": "cpu"}, "out/runs/c"),
            _job("figure", {"slurm_partition": "nope"}, "out/figures/x.png")]
    lines = slurm_fit.job_problems(jobs, query)
    assert queries == [None]  # sinfo once
    assert lines == [
        "commgnn: rule train (out/runs/a, and 1 more job) asks 2 tasks × 4 CPUs = 8 CPUs on "
        "one node; the largest node of partition debug has 2 CPUs: lower "
        "cluster.cpus_per_worker (or --set-resources train:cpus_per_task=N)",
        "commgnn: rule figure (out/figures/x.png) asks partition nope; the cluster has cpu, "
        "debug, gpu: name one of the cluster's partitions (--default-resources "
        "slurm_partition=…)"]
    # the plugin picks the partition (--slurm-partition-config): any partition will do
    assert slurm_fit.job_problems(jobs[:3], query, auto_select=True) == []
    # no default partition: sbatch decides, nothing to compare
    no_default = _partitions(SINFO.replace("debug*", "debug"))
    assert slurm_fit.job_problems(jobs[:3], lambda cluster: no_default) == []


def test_without_sinfo_the_jobs_go_unchecked_with_a_warning():
    def broken(cluster):
        raise slurm_fit.SinfoError("sinfo exited 1: Unable to contact slurm controller")

    warnings = []
    jobs = [_job("train", TRAIN, "out/runs/a"), _job("train", TRAIN, "out/runs/b")]
    assert slurm_fit.job_problems(jobs, broken, warn=warnings.append) == []
    assert warnings == ["cannot read the SLURM partitions (sinfo exited 1: Unable to contact "
                        "slurm controller); jobs are submitted without checking that a node "
                        "can hold them"]

    def run(cmd, **kwargs):
        run.cmd = cmd
        return subprocess.CompletedProcess(cmd, 1, "", "slurm_load_partitions: Unable to "
                                           "contact slurm controller (connect failure)\n")

    with pytest.raises(slurm_fit.SinfoError, match="exited 1: slurm_load_partitions"):
        slurm_fit.query_partitions("big", run=run)
    assert run.cmd[-2:] == ["-M", "big"]

    def missing(cmd, **kwargs):
        raise FileNotFoundError(2, "No such file or directory", "sinfo")

    with pytest.raises(slurm_fit.SinfoError, match="No such file"):
        slurm_fit.query_partitions(run=missing)

    def fine(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 0, SINFO.replace("|\n", "\n"), "")

    assert slurm_fit.query_partitions(run=fine) == _partitions()


def test_only_the_slurm_executor_is_checked():
    assert not slurm_fit.uses_slurm(SimpleNamespace(executor_plugin=None))
    assert not slurm_fit.uses_slurm(SimpleNamespace(executor_plugin=SimpleNamespace(
        name="local")))
    assert slurm_fit.uses_slurm(SimpleNamespace(executor_plugin=SimpleNamespace(name="slurm")))
    local = SimpleNamespace(executor_plugin=SimpleNamespace(name="local"), dag=None)
    assert slurm_fit.workflow_problems(local) == []  # the DAG is not even read
