"""Refuse a SLURM job that no node of its partition can hold, before anything is submitted.

SLURM accepts a job that asks one node for more CPUs than any node of the partition has
(or more nodes than the partition has, or a longer time than its limit) and leaves it
pending with reason ``PartitionConfig`` for ever; the executor plugin keeps polling it
without a word. Under the slurm executor the workflow's ``onstart`` (common.smk) therefore
reads the partitions' nodes once (:func:`query_partitions`: ``sinfo``), turns each job's
resources into what the plugin asks ``sbatch`` for (:func:`request_of`, after
snakemake-executor-plugin-slurm 2.8) and compares the two (:func:`problem`); a job that
cannot start stops the run before the first submission, with one line per rule naming the
request, the largest node and what to change (:func:`workflow_problems`). Where ``sinfo``
does not answer, the check is skipped with a warning.

Only what SLURM can never satisfy is refused: a busy, drained or down node still counts
(the job waits until it is back), and per-partition limits beyond the nodes, the job size
and the time limit (``MaxCPUsPerNode``, QOS and association limits) are not read.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

#: One line per node and partition: partition (``*`` marks the default), node, CPUs,
#: memory (MB), generic resources, time limit, job size in nodes.
SINFO_FORMAT = "%P|%N|%c|%m|%G|%l|%s"
SINFO_TIMEOUT_S = 20

#: Rules whose CPUs per task come from ``cluster.cpus_per_worker`` (commgnn.cluster).
WORKER_CPU_RULES = frozenset({"train", "dilation", "calibrate", "validate_simulator"})


@dataclass(frozen=True)
class Node:
    name: str
    cpus: int
    mem_mb: int
    gpus: int = 0


@dataclass(frozen=True)
class Partition:
    name: str
    nodes: tuple[Node, ...] = ()
    max_minutes: int | None = None  # None: no time limit
    max_nodes: int | None = None  # most nodes one job may have; None: unlimited
    default: bool = False


@dataclass(frozen=True)
class Request:
    """What a job asks ``sbatch`` for. ``nodes`` None lets SLURM choose how many nodes;
    ``mem_mb`` is per node; ``gpus`` is for the whole job (``--gpus``) and
    ``gpus_per_node`` a ``gres=gpu:N`` request."""

    tasks: int = 1
    cpus_per_task: int = 1
    nodes: int | None = None
    tasks_per_node: int | None = None
    mem_mb: int | None = None
    mem_mb_per_cpu: int | None = None
    gpus: int = 0
    gpus_per_node: int = 0
    runtime: int | None = None  # minutes
    partition: str | None = None
    cluster: str | None = None
    # the resource that set cpus_per_task ("cpus_per_task", "cpus_per_gpu" or "threads")
    cpu_source: str = field(default="threads", compare=False)


class SinfoError(RuntimeError):
    """``sinfo`` did not answer (not installed, no controller, unreadable output)."""


# ---------------------------------------------------------------------------------------
# sinfo


def parse_minutes(text: str) -> int | None:
    """A SLURM time limit in minutes (``infinite``/``UNLIMITED``/``n/a``: None), from
    ``D-HH:MM:SS``, ``HH:MM:SS``, ``MM:SS`` or ``MM``; seconds round up."""
    text = text.strip()
    if text.lower() in ("infinite", "unlimited", "n/a", "none", ""):
        return None
    days = 0
    if "-" in text:
        day_text, text = text.split("-", 1)
        days = int(day_text)
    parts = [int(p) for p in text.split(":")]
    if len(parts) == 3:
        hours, minutes, seconds = parts
    elif len(parts) == 2:
        hours, (minutes, seconds) = 0, parts
    elif len(parts) == 1:
        hours, minutes, seconds = 0, parts[0], 0
    else:
        raise ValueError(f"not a SLURM time: {text!r}")
    return days * 24 * 60 + hours * 60 + minutes + (1 if seconds else 0)


_GRES_GPU = re.compile(r"(?:^|,)gpu(?::[^:,()]+)?:(\d+)")


def parse_gpus(gres: str) -> int:
    """GPUs in a node's ``%G`` (``gpu:4``, ``gpu:a100:4(S:0-1)``, ``(null)``)."""
    return sum(int(n) for n in _GRES_GPU.findall(gres.strip()))


def _int(text: str) -> int:
    return int(text.strip().rstrip("+"))


def parse_sinfo(text: str) -> dict[str, Partition]:
    """Partitions from ``sinfo -h -a -N -o SINFO_FORMAT``; a node listed twice in one
    partition counts once."""
    nodes: dict[str, dict[str, Node]] = {}
    limits: dict[str, tuple[int | None, int | None]] = {}
    defaults: set[str] = set()
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("CLUSTER:"):  # sinfo -M prints the cluster first
            continue
        fields = line.split("|")
        if len(fields) != 7:
            raise SinfoError(f"unexpected sinfo line {line!r}")
        part, node, cpus, mem, gres, limit, size = fields
        if part.endswith("*"):
            part = part[:-1]
            defaults.add(part)
        try:
            nodes.setdefault(part, {})[node] = Node(node, _int(cpus), _int(mem),
                                                    parse_gpus(gres))
            max_nodes = size.split("-")[-1].strip()
            limits[part] = (parse_minutes(limit),
                            None if max_nodes in ("infinite", "") else _int(max_nodes))
        except ValueError as error:
            raise SinfoError(f"unexpected sinfo line {line!r}: {error}") from None
    return {name: Partition(name, tuple(by_name.values()), *limits[name],
                            default=name in defaults)
            for name, by_name in nodes.items()}


def query_partitions(cluster: str | None = None,
                     run: Callable[..., subprocess.CompletedProcess] = subprocess.run
                     ) -> dict[str, Partition]:
    """Every partition of the (local, or named) cluster with its nodes, from one ``sinfo``
    call; :class:`SinfoError` when sinfo does not answer."""
    cmd = ["sinfo", "-h", "-a", "-N", "-o", SINFO_FORMAT] + (["-M", cluster] if cluster else [])
    try:
        proc = run(cmd, capture_output=True, text=True, timeout=SINFO_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError) as error:
        raise SinfoError(f"sinfo: {error}") from None
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout or "").strip().splitlines()
        raise SinfoError(f"sinfo exited {proc.returncode}: "
                         f"{lines[-1] if lines else '(no output)'}")
    partitions = parse_sinfo(proc.stdout)
    if not partitions:
        raise SinfoError("sinfo lists no partition")
    return partitions


# ---------------------------------------------------------------------------------------
# a job's request


def _count(value) -> int | None:
    """An integer resource, or None (unset, a string, or Snakemake's not-yet-known
    value)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def request_of(resources: Mapping, threads: int = 1) -> Request:
    """What snakemake-executor-plugin-slurm 2.8 passes to ``sbatch`` for a job with these
    evaluated ``resources`` (``-p``, ``--clusters``, ``-t``, ``--mem``/``--mem-per-cpu``,
    ``--nodes``, ``--ntasks``/``--ntasks-per-node``/``--ntasks-per-gpu``, ``--gpus``,
    ``--gres``, ``--cpus-per-task``/``--cpus-per-gpu``)."""
    get = resources.get
    gres = get("gres") if isinstance(get("gres"), str) else ""
    gpus = _count(get("gpu")) or 0
    if get("gpu_model") and not gpus:
        gpus = 1
    gpus_per_node = parse_gpus(gres)
    gpu_job = bool(gpus) or "gpu" in gres
    mpi = bool(get("mpi"))

    tasks = _count(get("tasks")) or 1
    tasks_per_node = _count(get("tasks_per_node")) if mpi else None
    if gpu_job and not mpi:  # --ntasks-per-gpu (tasks_per_gpu, else tasks), no --ntasks
        per_gpu = _count(get("tasks_per_gpu"))
        if per_gpu is None:
            per_gpu = _count(get("tasks"))
        tasks = per_gpu * max(gpus, gpus_per_node, 1) if per_gpu and per_gpu >= 1 else 1

    cpt = _count(get("cpus_per_task"))
    cpg = _count(get("cpus_per_gpu"))
    if cpt:
        cpus, source = (1, "cpus_per_task") if cpt < 0 else (max(1, cpt), "cpus_per_task")
    elif gpu_job and cpg:
        # --cpus-per-gpu: spread over the tasks to compare per task
        per_job = cpg * max(gpus, gpus_per_node, 1) if cpg > 0 else 1
        cpus, source = max(1, math.ceil(per_job / tasks)), "cpus_per_gpu"
    else:
        cpus, source = max(1, _count(threads) or 1), "threads"

    nodes = _count(get("nodes"))
    cluster = get("slurm_cluster") or get("cluster") or get("clusters")
    return Request(
        tasks=tasks, cpus_per_task=cpus, nodes=nodes if nodes and nodes >= 1 else None,
        tasks_per_node=tasks_per_node if tasks_per_node and tasks_per_node >= 1 else None,
        mem_mb=_count(get("mem_mb")), mem_mb_per_cpu=_count(get("mem_mb_per_cpu")),
        gpus=gpus, gpus_per_node=gpus_per_node, runtime=_count(get("runtime")),
        partition=str(get("slurm_partition")) if get("slurm_partition") else None,
        cluster=str(cluster) if cluster else None, cpu_source=source)


# ---------------------------------------------------------------------------------------
# the comparison


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


@dataclass(frozen=True)
class Shortfall:
    """Why a request cannot start on a partition: the request, what the partition offers
    at most, and which resource (``cpus``, ``mem``, ``gpus``, ``nodes``, ``time``,
    ``partition``)."""

    what: str
    asks: str
    offers: str

    def text(self) -> str:
        return f"asks {self.asks}; {self.offers}"


def _per_node(req: Request) -> tuple[int, int | None]:
    """Tasks on each node and the nodes the job needs (None: SLURM chooses)."""
    if req.tasks_per_node:
        return req.tasks_per_node, req.nodes or 1
    if req.nodes:
        return math.ceil(req.tasks / req.nodes), req.nodes
    return 1, None


def _node_shape(node: Node) -> str:
    return f"{node.cpus} CPUs, {node.mem_mb} MB" + (f", {node.gpus} GPUs" if node.gpus else "")


def problem(req: Request, partitions: Iterable[Partition]) -> Shortfall | None:
    """Why no node of ``partitions`` (the job's partition, or every candidate when the
    plugin picks one) can ever start ``req``; None when one can. A busy or down node
    counts: the job waits for it."""
    partitions = list(partitions)
    label = (f"partition {partitions[0].name}" if len(partitions) == 1
             else "any partition")
    all_nodes = [node for p in partitions for node in p.nodes]
    if not all_nodes:
        return Shortfall("nodes", "a node", f"{label} has no node")
    tpn, nodes_needed = _per_node(req)
    cpus = tpn * req.cpus_per_task
    mem = req.mem_mb_per_cpu * cpus if req.mem_mb_per_cpu else req.mem_mb
    gpus = req.gpus_per_node or (math.ceil(req.gpus / nodes_needed) if req.gpus and
                                 nodes_needed else (1 if req.gpus else 0))

    def cpu_text(n_tasks: int, where: str = "on one node") -> str:
        if n_tasks == 1:
            return f"{_plural(req.cpus_per_task, 'CPU')} {where}"
        return (f"{n_tasks} tasks × {_plural(req.cpus_per_task, 'CPU')} = "
                f"{_plural(n_tasks * req.cpus_per_task, 'CPU')} {where}")

    # one dimension beyond every node: name it against the largest node
    largest = max(all_nodes, key=lambda n: n.cpus)
    if cpus > largest.cpus:
        where = "per task" if nodes_needed is None and req.tasks > 1 else "on one node"
        return Shortfall("cpus", cpu_text(tpn, where),
                         f"the largest node of {label} has {_plural(largest.cpus, 'CPU')}")
    largest = max(all_nodes, key=lambda n: n.mem_mb)
    if mem and mem > largest.mem_mb:
        return Shortfall("mem", f"{mem} MB of memory on one node",
                         f"the largest node of {label} has {largest.mem_mb} MB")
    largest = max(all_nodes, key=lambda n: n.gpus)
    if gpus > largest.gpus:
        return Shortfall("gpus", f"{_plural(gpus, 'GPU')} on one node",
                         f"the largest node of {label} has {_plural(largest.gpus, 'GPU')}")

    def fits(p: Partition) -> bool:
        if req.runtime and p.max_minutes is not None and req.runtime > p.max_minutes:
            return False
        holding = [n for n in p.nodes if n.mem_mb >= (mem or 0)]
        if nodes_needed is not None:
            if p.max_nodes is not None and nodes_needed > p.max_nodes:
                return False
            holding = [n for n in holding if n.cpus >= cpus and n.gpus >= gpus]
            return len(holding) >= nodes_needed
        # SLURM chooses the nodes: every task must fit on one, all of them somewhere
        if sum(n.gpus for n in holding) < req.gpus:
            return False
        capacity = sorted((n.cpus // req.cpus_per_task for n in holding), reverse=True)
        if p.max_nodes is not None:
            capacity = capacity[:p.max_nodes]
        return sum(capacity) >= req.tasks

    if any(fits(p) for p in partitions):
        return None
    # no partition holds it: say why, for the first candidate
    p = partitions[0]
    if req.runtime and p.max_minutes is not None and req.runtime > p.max_minutes:
        return Shortfall("time", f"{req.runtime} minutes",
                         f"the time limit of {label} is {p.max_minutes} minutes")
    if nodes_needed is not None:
        holding = [n for n in p.nodes if n.cpus >= cpus and n.mem_mb >= (mem or 0)
                   and n.gpus >= gpus]
        if p.max_nodes is not None and nodes_needed > p.max_nodes:
            return Shortfall("nodes", _plural(nodes_needed, "node"),
                             f"a job of {label} may have at most "
                             f"{_plural(p.max_nodes, 'node')}")
        need = (f"{_plural(nodes_needed, 'node')} with {cpu_text(tpn, 'each')}"
                + (f", {mem} MB" if mem else "") + (f", {_plural(gpus, 'GPU')}" if gpus
                                                    else ""))
        if not holding:
            shapes = sorted({_node_shape(n) for n in p.nodes})
            return Shortfall("node", need, f"no node of {label} has all of it (nodes: "
                             f"{'; '.join(shapes[:4])}{'; …' if len(shapes) > 4 else ''})")
        return Shortfall("nodes", need, f"{label} has {_plural(len(holding), 'such node')}")
    return Shortfall("nodes", cpu_text(req.tasks, "in all"),
                     f"the nodes of {label} hold at most "
                     f"{sum(n.cpus // req.cpus_per_task for n in p.nodes)} such tasks")


def hint(rule: str, shortfall: Shortfall, req: Request) -> str:
    """What to change in this project's config or command line."""
    partition = "or name a partition with larger nodes (--default-resources slurm_partition=…)"
    if shortfall.what == "cpus":
        if req.cpu_source == "cpus_per_task" and rule in WORKER_CPU_RULES:
            return f"lower cluster.cpus_per_worker (or --set-resources {rule}:cpus_per_task=N)"
        if req.cpu_source == "threads":
            return f"lower its threads (--set-threads {rule}=N) {partition}"
        return f"lower it (--set-resources {rule}:{req.cpu_source}=N) {partition}"
    if shortfall.what == "mem":
        return f"lower cluster.mem_factor (or --set-resources {rule}:mem_mb=N) {partition}"
    if shortfall.what == "gpus":
        return ("name a partition with GPU nodes (--default-resources slurm_partition=…) "
                "or set training.device: cpu")
    if shortfall.what == "time":
        return (f"lower cluster.runtime_factor (or --set-resources {rule}:runtime=N) or name "
                f"a partition with a longer limit")
    if shortfall.what == "partition":
        return "name one of the cluster's partitions (--default-resources slurm_partition=…)"
    if rule in WORKER_CPU_RULES:
        return "lower cluster.cpus_per_worker or change cluster.workers_per_node"
    return f"lower the request (--set-resources {rule}:…) {partition}"


# ---------------------------------------------------------------------------------------
# the workflow


def _candidates(req: Request, partitions: dict[str, Partition], auto_select: bool
                ) -> list[Partition] | Shortfall | None:
    if req.partition:
        if req.partition in partitions:
            return [partitions[req.partition]]
        return Shortfall("partition", f"partition {req.partition}",
                         f"the cluster has {', '.join(sorted(partitions))}")
    if auto_select:  # the plugin picks a partition from its --slurm-partition-config
        return list(partitions.values())
    default = [p for p in partitions.values() if p.default]
    return default or None  # no default partition: sbatch decides, nothing to compare


def _job_label(job) -> str:
    outputs = [str(f) for f in getattr(job, "output", [])]
    return outputs[0] if outputs else ", ".join(f"{k}={v}" for k, v in
                                                dict(job.wildcards_dict).items())


def uses_slurm(workflow) -> bool:
    """Whether jobs go to SLURM through snakemake-executor-plugin-slurm (the executor
    plugin Snakemake runs with; set once the workflow executes)."""
    plugin = getattr(workflow, "executor_plugin", None)
    return plugin is not None and getattr(plugin, "name", None) == "slurm"


def _auto_select(workflow) -> bool:
    settings = getattr(workflow, "executor_settings", None)
    return bool(getattr(settings, "partition_config", None)
                or os.environ.get("SNAKEMAKE_SLURM_PARTITIONS"))


def job_problems(jobs: Iterable, query: Callable[[str | None], dict[str, Partition]],
                 auto_select: bool = False, warn: Callable[[str], None] | None = None
                 ) -> list[str]:
    """One line per rule (and distinct shortfall) of ``jobs`` that no node can hold.
    ``jobs`` are Snakemake jobs (``rule.name``, ``resources``, ``threads``, ``output``);
    ``query(cluster)`` reads the partitions once per cluster. When it fails, ``warn``
    is told and the jobs of that cluster are not checked."""
    by_cluster: dict[str | None, dict[str, Partition] | None] = {}
    found: dict[tuple[str, str], tuple[str, Shortfall, Request, int]] = {}
    for job in jobs:
        try:
            resources = job.resources
            req = request_of(resources, job.threads)
        except Exception:  # an unevaluable resource fails at submission, named there
            continue
        if req.cluster not in by_cluster:
            try:
                by_cluster[req.cluster] = query(req.cluster)
            except SinfoError as error:
                by_cluster[req.cluster] = None
                if warn:
                    where = f" of cluster {req.cluster}" if req.cluster else ""
                    warn(f"cannot read the SLURM partitions{where} ({error}); jobs are "
                         f"submitted without checking that a node can hold them")
        partitions = by_cluster[req.cluster]
        if partitions is None:
            continue
        candidates = _candidates(req, partitions, auto_select)
        if candidates is None:
            continue
        shortfall = candidates if isinstance(candidates, Shortfall) else problem(req,
                                                                                  candidates)
        if shortfall is None:
            continue
        rule = job.rule.name
        key = (rule, shortfall.text())
        if key in found:
            label, s, r, n = found[key]
            found[key] = (label, s, r, n + 1)
        else:
            found[key] = (_job_label(job), shortfall, req, 1)
    lines = []
    for (rule, _), (label, shortfall, req, n) in found.items():
        more = f", and {_plural(n - 1, 'more job')}" if n > 1 else ""
        lines.append(f"commgnn: rule {rule} ({label}{more}) {shortfall.text()}: "
                     f"{hint(rule, shortfall, req)}")
    return lines


def workflow_problems(workflow) -> list[str]:
    """Under the slurm executor, the lines naming every job of the workflow's DAG that
    no node of its partition can hold (empty when all fit, when jobs run elsewhere, or
    when sinfo does not answer: then with a warning on stderr)."""
    if not uses_slurm(workflow):
        return []
    jobs = [job for job in workflow.dag.needrun_jobs() if not job.is_local]
    if not jobs:
        return []

    def warn(message: str) -> None:
        print(f"commgnn: warning: {message}", file=sys.stderr)

    return job_problems(jobs, query_partitions, _auto_select(workflow), warn)
