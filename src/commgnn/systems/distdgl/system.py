"""``distdgl``: DGL's own distributed training (DistDGL) as a baseline, run by DGL's
environment on commgnn's dataset and partition assignment.

DGL 2.1.0 needs torch <= 2.2 and numpy < 2, so it runs in an environment of its own
(``bash setup.sh --dgl`` → ``.venv-dgl``; ``envs/dgl.yaml`` on a cluster, pointed to by
``COMMGNN_DGL_PYTHON``); this module never imports dgl. The pipeline converts each
partition with DGL's ``partition_graph`` given commgnn's node assignment (rule
``dgl_partition``, :mod:`commgnn.systems.distdgl.convert`), so both systems train on the same
partitions. A run (:meth:`DistDGL.run_external`, in place of commgnn's training loop)
starts one DistDGL machine per partition on this host: a graph server and a trainer
(:mod:`commgnn.systems.distdgl.machine`, :mod:`commgnn.systems.distdgl.trainer`: DistGraph,
DistNodeDataLoader with DGL's NeighborSampler, DistTensor features, DDP; the model,
fan-outs, batch size, learning rate and epochs of the run).

Machines on one host: each runs in a mount namespace of its own with a private
``/dev/shm`` (``unshare --mount``, as root, else in a user namespace), because DGL names
a server's shared memory after the graph; and each trainer is told its machine id, because
DGL takes the first server whose address is local (every one, here).

What is measured: DGL's traffic goes through its own sockets on loopback, not commgnn's
emulated links, so times are raw (``time_dilation`` 1, ``network_shaped`` false) and the
modelled link times are absent (null). Recorded per step: the input rows another machine
owns (pulled from its server through DistTensor) and their feature bytes (4 bytes x
dimension each: the payload, not the bytes on the wire), the machines they come from
(``remote_rpcs``), sampling, fetch and compute times, loss and accuracy; per epoch the
DDP gradient bytes. Not measured (null): sampling traffic (DGL samples remote
neighbourhoods on the owners' servers), energy.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import random
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from commgnn.core.batch import PreparedBatch
from commgnn.core.errors import ConfigError, HostError, InputError, StaleInputError, WorkerFailed
from commgnn.core.files import json_text, read_json_object, write_json_atomic
from commgnn.core.testbed import run_provenance
from commgnn.runtime.launcher import external_env
from commgnn.systems.distdgl import DESCRIPTION, SCRIPTS
from commgnn.train.system import System

if TYPE_CHECKING:
    from commgnn.core.spec import RunSpec
    from commgnn.train.loop import RunPaths

#: The environment variable naming the DGL environment's interpreter.
DGL_PYTHON_ENV = "COMMGNN_DGL_PYTHON"
#: How the pipeline builds it on a workstation.
DGL_SETUP = "bash setup.sh --dgl"


def repo_root() -> Path:
    """The checkout this package runs from (``src/commgnn`` → the root)."""
    return Path(__file__).resolve().parents[4]


def dgl_python() -> Path | None:
    """The DGL environment's interpreter: ``$COMMGNN_DGL_PYTHON``, else the checkout's
    ``.venv-dgl`` (None when neither exists)."""
    configured = os.environ.get(DGL_PYTHON_ENV)
    if configured:
        return Path(configured) if Path(configured).exists() else None
    local = repo_root() / ".venv-dgl" / "bin" / "python"
    return local if local.exists() else None


def require_dgl_python() -> Path:
    """:func:`dgl_python`, or a HostError saying how to build it."""
    found = dgl_python()
    if found is None:
        where = os.environ.get(DGL_PYTHON_ENV)
        raise HostError(f"{DGL_PYTHON_ENV}: {where!r}: no such interpreter" if where else
                        f"system 'distdgl' needs the DGL environment: run `{DGL_SETUP}` "
                        f"(or set {DGL_PYTHON_ENV})")
    return found


def namespace_command() -> list[str]:
    """The ``unshare`` prefix that gives a process its own mount namespace here: as root
    a plain one, else one inside a user namespace; HostError when neither works."""
    tried = []
    for prefix in (["unshare", "--mount", "--propagation", "private"],
                   ["unshare", "--user", "--map-root-user", "--mount", "--propagation",
                    "private"]):
        try:
            done = subprocess.run([*prefix, "true"], capture_output=True, text=True,
                                  timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            tried.append(str(exc))
            continue
        if done.returncode == 0:
            return prefix
        tried.append(done.stderr.strip().splitlines()[-1] if done.stderr.strip() else
                     f"exit {done.returncode}")
    raise HostError("system 'distdgl': cannot give each DistDGL machine its own /dev/shm "
                    f"(unshare --mount: {tried[0]}; in a user namespace: {tried[-1]})")


def fixed_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` free ports on ``host`` below the kernel's ephemeral range: DGL's clients
    take their own ports with ``bind(0)`` while the machines start, and would otherwise
    take a port chosen here before its server listens on it."""

    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    pick = random.Random(os.getpid() ^ time.monotonic_ns())
    found: list[int] = []
    for _ in range(1000):
        port = pick.randrange(10000, max(10001, low))
        if port in found:
            continue
        with socket.socket() as probe:
            try:
                probe.bind((host, port))
            except OSError:
                continue
        found.append(port)
        if len(found) == count:
            return found
    raise HostError(f"system 'distdgl': no {count} free ports on {host} below {low}")


def check_dgl_partition(path: str | Path, dataset_dir: str | Path,
                        partition_dir: str | Path, parts: int) -> dict:
    """The conversion record of a DGL partition directory (``commgnn.json``), refused
    (StaleInputError) unless it was made from these dataset and partition directories as
    they are now, into ``parts`` parts."""

    path = Path(path)
    hint = f"delete {path} and rerun snakemake (rule dgl_partition)"
    record_path = path / "commgnn.json"
    try:
        record = json.loads(record_path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{record_path}: not a readable conversion record ({exc}); "
                         f"{hint}") from None
    for key, source in (("dataset_meta_sha256", Path(dataset_dir) / "meta.json"),
                        ("partition_meta_sha256", Path(partition_dir) / "meta.json")):
        now = hashlib.sha256(source.read_bytes()).hexdigest()
        if record.get(key) != now:
            raise StaleInputError(f"{path}: stale: converted from another {source.parent} "
                                  f"({key} {str(record.get(key))[:12]}, now {now[:12]}); "
                                  f"{hint}")
    if int(record.get("parts", -1)) != parts or not (path / "graph.json").is_file():
        raise StaleInputError(f"{path}: holds {record.get('parts')} parts, the run needs "
                              f"{parts}; {hint}")
    return record


def _model(spec: RunSpec) -> str | None:
    """The DGL trainer's model for the cell (``sage`` or ``gcn``; None: neither)."""
    return {"sage": "sage", "graphsage": "sage", "gcn": "gcn"}.get(spec.architecture.lower())


def dgl_evaluation_samples(spec: RunSpec, dataset: str | Path, dgl_parts: str | Path,
                           staging: Path) -> dict[str, str]:
    """commgnn's evaluation sample of each split
    (:func:`commgnn.train.evaluate.evaluation_sample`) in DGL's node ids, one ``.npy`` per
    split in ``staging``: the trainers evaluate the nodes every other system evaluates."""
    # deferred: the evaluation module imports the samplers (numba)
    from commgnn.train.evaluate import evaluation_sample

    orig = np.load(Path(dgl_parts) / "orig_nids.npy")  # DGL id -> commgnn id
    dgl_id = np.empty_like(orig)
    dgl_id[orig] = np.arange(orig.shape[0], dtype=orig.dtype)
    files = {}
    for split in ("val", "test"):
        sample = evaluation_sample(np.load(Path(dataset) / f"{split}_idx.npy"),
                                   int(spec.get("eval_max_nodes")), spec.workers, spec.seed,
                                   split)
        files[split] = str(staging / f"eval_{split}.npy")
        np.save(files[split], dgl_id[sample])
    return files


class DistDGL(System):
    """DistDGL (DGL 2.1.0) on commgnn's partitions, in the DGL environment."""

    description = DESCRIPTION

    @classmethod
    def run_problems(cls, spec: RunSpec, shape=None) -> list[str]:
        """DistDGL here trains GraphSAGE or GCN on CPU over DGL's own (unshaped) sockets."""
        where = f"experiment cell {spec.run_id}"
        problems = []
        if _model(spec) is None:
            problems.append(f"{where}: system 'distdgl' trains GraphSAGE and GCN, not "
                            f"{spec.model!r}")
        shaped = {k: v for k, v in spec.network_spec.items() if k != "preset"}
        if spec.network_spec.get("preset", "none") != "none" or shaped:
            problems.append(f"{where}: system 'distdgl' runs on DGL's own sockets, which "
                            f"commgnn's link model cannot shape: use a network without "
                            f"emulation (preset none), not {spec.network!r}")
        if spec.get("device") == "cuda":
            problems.append(f"{where}: system 'distdgl' trains on the CPU: DGL 2.1.0's "
                            "wheels on the package index are CPU builds (training.device: "
                            "cuda; auto trains it on the CPU)")
        return problems

    def batches(self, epoch: int) -> Iterator[PreparedBatch]:
        raise TypeError("distdgl trains in the DGL environment (DistDGL.run_external), "
                        "not in commgnn's training loop")

    @classmethod
    def run_external(cls, spec: RunSpec, paths: RunPaths) -> dict:
        """Train ``spec`` with DistDGL (one machine per partition on this host) and write
        the run directory as commgnn's loop does; returns the summary."""
        # deferred: imports numba, pandas, pymetis, scipy
        from commgnn.train.loop import publish_run

        system = cls(spec.system_options, where=f"systems.{spec.system}")
        problems = cls.run_problems(spec)
        if problems:
            raise ConfigError(problems[0])
        if external_env() is not None:
            raise HostError("system 'distdgl' starts its own machines: run `commgnn train` "
                            "once (one task), not under srun or torchrun")
        python = require_dgl_python()
        dgl_parts = paths.inputs.get("dgl_partition")
        if not dgl_parts:
            raise HostError("system 'distdgl' needs pipeline input dgl_partition "
                            "(commgnn train --input dgl_partition=PATH)")
        check_dgl_partition(dgl_parts, paths.dataset, paths.partition, spec.workers)

        meta = read_json_object(Path(paths.dataset) / "meta.json")
        unshare = namespace_command()
        staging = paths.staging
        shutil.rmtree(staging, ignore_errors=True)  # no checkpoints: always a fresh run
        staging.mkdir(parents=True)
        ports = fixed_ports(spec.workers + 1)
        ip_config = staging / "ip_config.txt"
        ip_config.write_text("".join(f"127.0.0.1 {port}\n" for port in ports[:-1]))
        trainer_job = {
            "ip_config": str(ip_config), "part_config": str(Path(dgl_parts) / "graph.json"),
            "out": str(staging), "model": _model(spec), "hidden": spec.get("hidden"),
            "num_classes": meta["stats"]["num_classes"], "fanouts": spec.get("fanouts"),
            # commgnn evaluates on full neighbourhoods unless eval_fanouts says otherwise
            "eval_fanouts": spec.get("eval_fanouts") or [-1] * len(spec.get("fanouts")),
            "dropout": spec.get("dropout"), "lr": spec.get("lr"),
            "weight_decay": spec.get("weight_decay"), "batch_size": spec.batch_size,
            "epochs": spec.get("epochs"), "eval_every": spec.get("eval_every"),
            "stop_at_plateau": spec.get("stop_at_plateau"),
            "eval_samples": dgl_evaluation_samples(spec, paths.dataset, dgl_parts, staging),
            "seed": spec.seed}
        threads = max(1, (os.cpu_count() or 1) // spec.workers)
        started = time.perf_counter()
        machines: list = []

        def stop(signum, _frame):
            raise WorkerFailed(f"received signal {signal.Signals(signum).name}; stopped "
                               "every DistDGL machine")

        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            for machine in range(spec.workers):
                job = {"machine": machine, "machines": spec.workers,
                       "ip_config": str(ip_config), "part_config": trainer_job["part_config"],
                       "out": str(staging), "master_port": ports[-1],
                       "shm_mb": system.options["shm_mb"], "threads": threads,
                       "trainer": trainer_job}
                log = open(staging / f"machine_{machine}.log", "w")  # noqa: SIM115
                machines.append((subprocess.Popen(
                    [*unshare, str(python), str(SCRIPTS / "machine.py"), json.dumps(job)],
                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True), log))
            _wait(machines, staging, float(spec.get("collective_timeout_s")))
        finally:
            for proc, log in machines:
                _kill_group(proc)
                log.close()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        wall = time.perf_counter() - started
        summary = _write_records(spec, system, staging, wall, paths)
        publish_run(staging, Path(paths.out))
        return summary


def _kill_group(proc: subprocess.Popen) -> None:
    """Kill ``proc``'s whole session (its server and trainer) and reap it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line]
    except OSError:
        return ""
    return lines[-1].strip() if lines else ""


def _failure_order(staging: Path, machine: int) -> tuple[bool, float]:
    """How ``machine``'s recorded failure (machine.py) ranks as the run's cause: one that
    is not a lost peer's consequence first, then the earliest; unrecorded ones last."""
    try:
        record = json.loads((staging / f"failed_{machine}.json").read_text())
        return bool(record.get("consequence", False)), float(record["time"])
    except (OSError, ValueError, KeyError):
        return True, math.inf


def _wait(machines: list, staging: Path, stall_s: float) -> None:
    """Until every machine exits cleanly; WorkerFailed naming the machine whose failure
    caused the others' (the earliest not caused by a lost peer), or one whose trainer
    wrote nothing for ``stall_s`` seconds (a hang)."""
    last_progress = time.monotonic()
    sizes: dict[Path, int] = {}
    while True:
        codes = [proc.poll() for proc, _ in machines]
        failed = [machine for machine, code in enumerate(codes) if code not in (None, 0)]
        if failed:
            time.sleep(0.5)  # let a failure that caused this one be recorded too
            failed = [m for m, (proc, _) in enumerate(machines)
                      if proc.poll() not in (None, 0)]
            machine = min(failed, key=lambda m: _failure_order(staging, m))
            trainer = _last_line(staging / f"trainer_{machine}.log")
            why = _last_line(staging / f"machine_{machine}.log")
            raise WorkerFailed(f"distdgl machine {machine} failed: {why}"
                               + (f"; trainer: {trainer}" if trainer else ""))
        if all(code == 0 for code in codes):
            return
        grown = False
        for path in staging.glob("*_*.log"):
            size = path.stat().st_size
            grown |= sizes.get(path) != size
            sizes[path] = size
        for path in staging.glob("steps_w*.jsonl"):
            size = path.stat().st_size
            grown |= sizes.get(path) != size
            sizes[path] = size
        now = time.monotonic()
        if grown:
            last_progress = now
        elif now - last_progress > stall_s:
            raise WorkerFailed(f"distdgl: no progress for {stall_s:.0f} s "
                               "(training.collective_timeout_s); stopped every machine")
        time.sleep(0.2)


#: Per-worker epoch values DGL's side does not measure (null in the records).
#: (Also every traffic class's modelled link seconds and bytes, ``network_<class>_s`` /
#: ``_bytes``: DGL's traffic does not cross the emulated links.)
UNMEASURED = ("energy_j", "sampling_rpcs", "sampling_rows", "sampling_bytes",
              "allreduce_messages", "energy_target_j", "energy_target_gpu_j",
              "energy_target_cpu_j")


def _worker_record(row: dict[str, Any]) -> dict[str, Any]:
    """A trainer's epoch row as one worker's record of commgnn's epoch summary."""
    from commgnn.train.summary import NETWORK_CLASSES  # deferred: imports pandas

    record = {**row, "time_dilation": 1.0, "cache_hits": 0, "cache_misses": 0,
              "sync_emulated_s": 0.0, "energy_meter": "none"}
    for key in (*UNMEASURED, *(f"network_{c}_{unit}" for c in NETWORK_CLASSES
                               for unit in ("s", "bytes"))):
        record[key] = math.nan
    return record


#: Why DistDGL's runs are on the CPU whatever ``training.device`` says.
CPU_ONLY = "DistDGL 2.1.0's wheels on the package index are CPU builds"


def _write_records(spec: RunSpec, system: DistDGL, staging: Path, wall_s: float,
                   paths: RunPaths) -> dict:
    """``epochs.jsonl``, ``summary.json`` and the tidy tables from the trainers' files
    (a retried attempt starts over: DistDGL keeps no checkpoints)."""


    from commgnn.train.summary import (
        add_cumulative,
        attempt_record,
        cpu_plan,
        epoch_summary,
        run_summary,
        write_tidy_tables,
    )  # deferred: imports pandas

    per_worker = []
    for worker in range(spec.workers):
        path = staging / f"epochs_w{worker}.jsonl"
        try:
            per_worker.append([json.loads(line) for line in path.read_text().splitlines()])
        except (OSError, ValueError) as exc:
            raise InputError(f"{path}: the trainer's epoch records are unreadable "
                             f"({exc})") from None
    if len({len(rows) for rows in per_worker}) != 1 or not per_worker[0]:
        raise InputError(f"{staging}: the trainers recorded "
                         f"{[len(rows) for rows in per_worker]} epochs")
    reductions = type(system).metric_reductions()
    epochs: list[dict] = []
    for index in range(len(per_worker[0])):
        workers = [_worker_record(rows[index]) for rows in per_worker]
        epochs.append(add_cumulative(epoch_summary(index, workers, reductions), epochs))
    (staging / "epochs.jsonl").write_text("".join(json_text(e) + "\n" for e in epochs))
    setup_s = max(rows[0]["setup_s"] for rows in per_worker)
    run_info = {"time_dilation": 1.0, "setup_s": setup_s, "wall_s": wall_s,
                "hosts": [socket.gethostname()] * spec.workers, "network_shaped": False,
                "network_mode": "loopback",
                "device_plan": {**cpu_plan(spec.workers), "setting": spec.get("device"),
                                "reason": CPU_ONLY},
                "provenance": run_provenance(paths.dataset),
                **attempt_record(paths.attempt, paths.failed_attempt),
                "transport": "DGL sockets on loopback (DistDGL 2.1.0)"}
    summary = run_summary(spec, system, epochs, "none", torch.device("cpu"), "distdgl",
                          run_info)
    write_json_atomic(staging / "summary.json", summary)
    write_tidy_tables(staging, spec.workers)
    return summary
