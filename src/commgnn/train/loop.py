"""One training run: launch the workers, and the loop each worker runs.

Every worker: build the system from its options (and refuse a partition it cannot train
on), load the memory-mapped dataset and partition, join the process group (gloo on CPU,
NCCL on CUDA) and the RPC group, serve its features, create the model, hand it to the
system (``System.setup``; the system decides about DDP), then for ``epochs`` epochs run
the system's steps (the lifecycle in :mod:`commgnn.train.system`), checkpoint after
each (model, optimiser, every worker's system state; resume from the last), evaluate,
and write per-step JSONL. Rank 0 gathers per-epoch records, writes ``epochs.jsonl`` and
``summary.json`` and finally renames the run's staging directory ``<run>.partial`` to
``<run>`` — so a run directory that exists is complete. A finished run being extended
or rerun stays in place until the new one completes and replaces it in one step
(:func:`publish_run`), so a failure never leaves no complete run.

Energy: every step and epoch record has the measured ``energy_j`` (this host, raw time)
and the target-machine model's ``energy_target_j`` (:mod:`commgnn.energy.target`, in
target time: raw / ``time_dilation``).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import json
import logging
import os
import resource
import shutil
import socket
import time
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from torch.distributed import rpc

from commgnn.core.config import ConfigError
from commgnn.core.errors import InputError
from commgnn.core.files import json_text, write_json_atomic
from commgnn.core.spec import RunSpec
from commgnn.core.testbed import (
    CONGESTION_MODEL,
    DILATION_POLICY,
    ENERGY_MODEL,
    EVALUATION_SAMPLE,
    run_provenance,
)
from commgnn.data.store import load_dataset
from commgnn.energy import select_meter
from commgnn.energy.base import EnergyMeter
from commgnn.energy.target import TargetEnergy, TargetPowerModel
from commgnn.models.gnn import build_model
from commgnn.network.netem import (
    ALLREDUCE,
    FETCH,
    SAMPLING,
    LinkStats,
    dilation_of,
    network_from_spec,
)
from commgnn.network.nic import clock_file
from commgnn.partition import load_partition
from commgnn.runtime import heartbeat
from commgnn.runtime.devices import DevicePlan, agree, host_view
from commgnn.runtime.feature_store import FeatureStore, worker_name
from commgnn.runtime.launcher import (
    DistEnv,
    bind_interface,
    external_env,
    launch,
    rendezvous_store,
    rpc_init_method,
    watch_peers,
    worker_threads,
)
from commgnn.sampling.seeds import derive_seed
from commgnn.train.checkpoint import load_checkpoint, save_checkpoint
from commgnn.train.clocks import network_mode
from commgnn.train.context import WorkerContext
from commgnn.train.dilation import resolve_dilation
from commgnn.train.evaluate import evaluate
from commgnn.train.metrics import JsonlWriter, StepRecord
from commgnn.train.plateau import WINDOW, at_plateau
from commgnn.train.summary import (
    NETWORK_CLASSES,
    add_cumulative,
    attempt_record,
    charge_boundary_wait,
    epoch_line,
    epoch_summary,
    run_summary,
    target_model,
    write_tidy_tables,
)
from commgnn.train.system import System
from commgnn.train.walltime import WallClock, breakdown
from commgnn.train.workload import Workload, dataset_shape_of, step_workload

log = logging.getLogger("commgnn.train")

#: Step fields summed into the worker's epoch record.
STEP_TOTALS = ("sample_s", "fetch_wait_s", "compute_s", "step_s", "remote_rpcs",
               "remote_rows", "remote_bytes", "cache_hits", "cache_misses", "local_rows",
               "sampling_rpcs", "sampling_rows", "sampling_bytes", "allreduce_bytes",
               "allreduce_messages", "step_comm_s", "collective_wait_s", "busy_s",
               "moved_messages",
               "moved_bytes", "energy_target_j", "energy_target_gpu_j",
               "energy_target_cpu_j")


@dataclass(frozen=True)
class RunPaths:
    dataset: str
    partition: str
    out: str  # final run directory (exists only once complete)
    checkpoints: str
    inputs: dict[str, str] = field(default_factory=dict)  # pipeline inputs (System.needs)
    dilation: str | None = None  # the workload's probe (the pipeline's dilation step)
    attempt: int = 1  # which attempt at the run (the workflow retries a failed one once)
    failed_attempt: str | None = None  # the previous attempt's one-line error, if retried

    @property
    def staging(self) -> Path:
        out = Path(self.out)
        return out.with_name(out.name + ".partial")


def prepare_staging(spec: RunSpec, paths: RunPaths) -> Path:
    """Create the run's staging directory: fresh, or (when resuming) holding the records of
    an interrupted or finished run with the same configuration.

    A finished run stays in place until the new one completes (:func:`publish_run`):
    extending it works on a copy of its records, or on the staging directory of an
    interrupted extension of it (which holds them all and more).
    """
    out, staging = Path(paths.out), paths.staging
    resume = spec.get("resume") and spec.get("checkpoint")
    if not resume and staging.exists():
        shutil.rmtree(staging)
    elif resume and out.exists() and not _recorded_epochs(out) <= _recorded_epochs(staging):
        _copy_dir(out, staging)
    staging.mkdir(parents=True, exist_ok=True)
    return staging


def _recorded_epochs(run_dir: Path) -> set[int]:
    """The epochs ``run_dir/epochs.jsonl`` has rows for (none if it is absent)."""
    return {row["epoch"] for row in _epoch_rows(run_dir)}


def _copy_dir(src: Path, dst: Path) -> None:
    """Replace ``dst`` by a copy of ``src``, made aside and renamed (never half a copy)."""
    tmp = dst.with_name(f".{dst.name}.copy-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        shutil.copytree(src, tmp)
        if dst.exists():
            shutil.rmtree(dst)
        os.replace(tmp, dst)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directories in one atomic step (Linux ``renameat2``); False if this
    system or file system cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b),
                     RENAME_EXCHANGE) == 0


def publish_run(staging: Path, out: Path) -> None:
    """Put the complete ``staging`` directory at ``out``, replacing a finished run there
    atomically (swapped in one step where the system can, else renamed aside first), so
    ``out`` is at every moment either the old complete run or the new one."""
    if not out.exists():
        os.replace(staging, out)
    elif _exchange(staging, out):
        shutil.rmtree(staging)
    else:
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        os.replace(out, old)
        os.replace(staging, out)
        shutil.rmtree(old)


def run(spec: RunSpec, paths: RunPaths, system_cls: type[System],
        process_started: float | None = None) -> dict:
    """Run ``spec`` on ``spec.workers`` workers with ``system_cls`` (the class of
    ``spec.base_system``: :func:`commgnn.systems.registry.get_system`); return the summary
    (raises WorkerFailed).

    Spawned locally, this process prepares the staging directory and records the worker
    pids; under torchrun/srun every task calls this and rank 0 prepares it instead.
    ``process_started``: when this process started, if it started for this run (the
    summary's ``wall_interpreter_raw_s`` counts from there; else from this call).
    """
    called = time.time()
    if system_cls.external:  # another framework trains it (e.g. distdgl)
        return system_cls.run_external(spec, paths)
    on_start = None
    if external_env() is None:
        staging = prepare_staging(spec, paths)

        def on_start(pids: list[int]) -> None:
            write_json_atomic(staging / "workers.json",
                              {"launcher_pid": os.getpid(), "worker_pids": pids,
                               "host": socket.gethostname()})

    started = (called if process_started is None else process_started, time.time())
    launch(worker_main, (spec.to_json(), system_cls, paths, started), spec.workers,
           master_addr=spec.get("master_addr"), master_port=spec.get("master_port"),
           on_start=on_start)
    return json.loads((Path(paths.out) / "summary.json").read_text())


def _init_groups(env: DistEnv, spec: RunSpec) -> DevicePlan:
    """Agree on the device plan, then join the process group and RPC, all through one
    store, every listener on the rendezvous interface
    (:func:`commgnn.runtime.launcher.rendezvous_store`)."""
    bind_interface(env, spec.get("interface"))
    timeout = spec.get("collective_timeout_s")
    store = rendezvous_store(env, timeout)
    plan = agree(dist.PrefixStore("plan", store),
                 host_view(env.rank, env.local_rank, spec.get("device")), env.world_size)
    device = plan.device(env.rank)
    if env.rank == 0:
        log.info("%s", plan.line())
    # One GPU per worker: NCCL carries the gradients and gloo the small CPU collectives
    # (evaluation sums, gathered records). Shared GPUs and the CPU: gloo carries all.
    dist.init_process_group(plan.backend, store=dist.PrefixStore("pg", store),
                            rank=env.rank, world_size=env.world_size,
                            timeout=timedelta(seconds=timeout),
                            device_id=device if plan.mode == "exclusive" else None)
    init_method = rpc_init_method(dist.PrefixStore("rpc", store))
    # RPC carries host tensors only (feature stores stay in host memory): no device maps.
    options = rpc.TensorPipeRpcBackendOptions(
        init_method=init_method, rpc_timeout=spec.get("rpc_timeout_s"), num_worker_threads=8)
    if spec.get("transport") == "tcp":  # real sockets even on one host (for shaped traffic)
        options = rpc.TensorPipeRpcBackendOptions(
            init_method=init_method, rpc_timeout=spec.get("rpc_timeout_s"),
            num_worker_threads=8, _transports=["uv"], _channels=["basic"])
    rpc.init_rpc(worker_name(env.rank), rank=env.rank, world_size=env.world_size,
                 rpc_backend_options=options)
    watch_peers(env, timeout)
    return plan


def _peak_rss_bytes() -> int:
    """This process's peak resident set (host memory, whatever the device)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)


def _peak_mem_bytes(device: torch.device) -> int:
    """Peak memory of the training device: allocated GPU memory, else the host's RSS."""
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    return _peak_rss_bytes()


def worker_main(env: DistEnv, spec_json: str, system_cls: type[System], paths: RunPaths,
                started: tuple[float, float]) -> None:
    """One worker's run of ``system_cls`` (passed by reference: a spawned worker imports
    its module); ``started``: the launching process's start and launch times."""
    clock = WallClock(started)
    clock.mark("entry")
    spec = RunSpec.from_json(spec_json)
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [worker {env.rank}] %(levelname)s %(message)s")
    torch.set_num_threads(worker_threads(spec.workers))
    system = system_cls(spec.system_options, where=f"systems.{spec.system}")
    missing = sorted(set(system_cls.needs) - set(paths.inputs))
    if missing:
        raise ConfigError(f"system {spec.system!r} needs pipeline inputs {missing} "
                          "(commgnn train --input NAME=PATH)")
    dataset = load_dataset(paths.dataset)
    partition = load_partition(paths.partition, dataset=dataset)  # refuses a stale one
    system.check_partition(partition, env.world_size)
    system.check_inputs(spec, dict(paths.inputs), dataset, partition, env.rank)  # no group yet
    nic_path = (Path(env.scratch_dir) / "nic" if env.scratch_dir else  # removed with it
                clock_file(f"{env.master_addr}-{env.master_port}-{env.rpc_port}"))
    emulator = network_from_spec(spec.network_spec if system_cls.uses_network else "none",
                                 env.world_size, num_epochs=spec.get("epochs"),
                                 nic_path=str(nic_path))
    if env.local_rank == 0 and (beat := heartbeat.current()) is not None:
        beat.scratch.append(nic_path)  # removed even when a peer's failure ends this worker
    clock.mark("loaded")
    plan = _init_groups(env, spec)
    if env.launcher != "spawn":
        if env.rank == 0:
            prepare_staging(spec, paths)
        dist.barrier()
    clock.mark("joined")
    try:
        _train(env, spec, paths, plan, dataset, partition, system, emulator, clock)
    except BaseException as exc:
        heartbeat.record_failure(exc)  # before any cleanup: the time of the failure
        rpc.shutdown(graceful=False)  # peers may be gone: never wait for them
        if env.local_rank == 0:  # this host's clock file (still mapped by its threads)
            with contextlib.suppress(FileNotFoundError):
                nic_path.unlink()
        raise
    if (beat := heartbeat.current()) is not None:
        beat.stop_watching()  # peers finish and leave one by one from here
    rpc.shutdown(graceful=True)  # every worker is done with the clocks after this
    dist.destroy_process_group()
    if env.local_rank == 0:  # each host has its own clock file
        emulator.nic.unlink()


def worker_meter(device: torch.device, gpu_share: int = 1) -> EnergyMeter:
    """The energy meter of a worker training on ``device`` (its own GPU, by index), which
    ``gpu_share`` workers share (NVML's reading of it is split evenly among them)."""
    return select_meter(str(device), gpu_share=gpu_share)


def _train(env, spec, paths, plan: DevicePlan, dataset, partition, system, emulator,
           clock: WallClock) -> None:
    rank, world = env.rank, env.world_size
    device = plan.device(rank)
    book = partition.book
    local_rows = np.ascontiguousarray(dataset.features[book.nodes(rank)])
    store = FeatureStore(rank, book.owner, book.local_id, torch.from_numpy(local_rows),
                         emulator, spec.get("rpc_timeout_s"))
    labels = torch.from_numpy(np.array(dataset.labels, dtype=np.int64)).to(device)
    ctx = WorkerContext(spec=spec, env=env, device=device, dataset=dataset,
                        partition=partition, emulator=emulator, store=store, labels=labels,
                        inputs=dict(paths.inputs), plan=plan)
    power = target_model(spec)  # the target-machine energy model (a bad one fails here)

    model, optimizer = _fresh_model(spec, dataset, device)
    ckpt_dir = Path(paths.checkpoints)
    start_epoch, system_state = 0, None
    if spec.get("checkpoint") and spec.get("resume"):
        restored = load_checkpoint(ckpt_dir, model, optimizer, _resume_key(spec, paths), world)
        if restored and not _recorded(paths.staging, restored.next_epoch):
            log.warning("checkpoint at epoch %d but earlier records are missing; starting over",
                        restored.next_epoch - 1)
            model, optimizer = _fresh_model(spec, dataset, device)
            restored = None
        if restored:
            start_epoch, system_state = restored.next_epoch, restored.system_states[rank]
            log.info("resuming from checkpoint: epoch %d", start_epoch)
    dist.barrier()  # every worker decided before rank 0 rewrites the records
    t_setup = time.perf_counter()
    system.setup(ctx, model, optimizer)
    if system_state is not None:
        system.load_state_dict(system_state)
    setup_s = time.perf_counter() - t_setup
    # Every system reports target times, also one whose network is free (oracle: the
    # compute-only limit in the same units), so the factor comes from the run's spec.
    mode, value = dilation_of(spec.network_spec)
    run_info = (resolve_dilation(ctx, model, paths.dataset, None if value is None
                                 else value * 1e3, _workload_probe(paths))
                if mode == "auto" else {"time_dilation": value,
                                        "time_dilation_source": "fixed"})
    emulator.set_time_dilation(run_info["time_dilation"])
    setups = [None] * world
    dist.all_gather_object(setups, (setup_s, socket.gethostname()))
    run_info["setup_s"] = max(setup for setup, _ in setups)
    run_info["hosts"] = [host for _, host in setups]
    run_info["device_plan"] = plan.describe()
    run_info.update(attempt_record(paths.attempt, paths.failed_attempt,
                                   start_epoch if start_epoch else None))
    run_info["provenance"] = run_provenance(paths.dataset)
    run_info["network_mode"] = network_mode(  # the run's network, whatever the system's
        network_from_spec(spec.network_spec, world, spec.get("epochs")).emulates(),
        run_info["hosts"])
    clock.mark("ready")

    staging = paths.staging
    steps_out = RecordFile(staging / f"steps_w{rank}.jsonl", keep_epochs_below=start_epoch)
    epochs_out = (RecordFile(staging / "epochs.jsonl", keep_epochs_below=start_epoch)
                  if rank == 0 else None)
    # Rank 0's epoch rows so far (kept from an interrupted run when resuming), for the
    # cumulative energies every row carries.
    history = _epoch_rows(staging) if rank == 0 else []
    meter = worker_meter(device, plan.sharers(rank))
    meter.start()
    epochs = spec.get("epochs")
    eval_every = spec.get("eval_every")
    plateau_gain = spec.get("stop_at_plateau")
    evaluated_val = []  # the validation accuracies so far, the same on every worker
    if plateau_gain is not None and start_epoch:  # an interrupted run's, from rank 0's rows
        kept = [[row["val_acc"] for row in history if row.get("val_acc") is not None]]
        dist.broadcast_object_list(kept, src=0)
        evaluated_val = kept[0]
    # A background sampler (GreenDyGNN's Stage 1) may still sample the steps an epoch
    # asked for while the loop evaluates: its traffic between two epochs is the next one's.
    carried = {SAMPLING: emulator.totals(SAMPLING)}
    for epoch in range(start_epoch, epochs):
        torch.manual_seed(derive_seed(spec.seed, "torch", rank, epoch) % 2**63)
        emulator.set_epoch(epoch)
        ctx.set_placement(system.placement(epoch))
        dist.barrier()
        start = time.perf_counter()  # the system's epoch work (cache fills …) is inside
        energy0 = meter.read_joules()
        parts0 = meter.read_parts()
        network0 = {c: carried[c] if c in carried else emulator.totals(c)
                    for c in NETWORK_CLASSES}
        moved_epoch0 = moved_traffic(emulator)
        system.start_epoch(epoch)
        record = _run_epoch(system, epoch, rank, steps_out, emulator, meter, power)
        record.update(system.end_epoch(epoch))  # e.g. waits for background cache builds
        record["time_s"] = time.perf_counter() - start
        clock.epochs_s += record["time_s"]
        record["time_dilation"] = emulator.time_dilation
        record["energy_j"] = meter.read_joules() - energy0
        for part, joules in meter.read_parts().items():  # the meter's parts: cpu, gpu
            record[f"energy_{part}_j"] = joules - parts0.get(part, 0.0)
        moved_epoch = moved_traffic(emulator) - moved_epoch0  # every thread, in steps or not
        record["moved_messages_epoch"] = moved_epoch.initiations
        record["moved_bytes_epoch"] = moved_epoch.bytes
        record.update(_epoch_target_energy(record, power))
        for c in NETWORK_CLASSES:  # modelled seconds and bytes on the links, every thread
            now = emulator.totals(c)
            record[f"network_{c}_s"] = now.charged_s - network0[c].charged_s
            record[f"network_{c}_bytes"] = now.bytes - network0[c].bytes
            if c in carried:
                carried[c] = now
        record["sync_emulated_s"] = record[f"network_{ALLREDUCE}_s"]
        record["peak_mem_bytes"] = _peak_mem_bytes(device)
        record["peak_rss_bytes"] = _peak_rss_bytes()
        record["recent_rtt_s"] = {str(o): rtt for o in range(world)
                                  if (rtt := store.recent_rtt_s(o)) is not None}
        record["parts"] = list(ctx.placement.of(rank))
        last = epoch == epochs - 1
        if last or (eval_every and (epoch + 1) % eval_every == 0):
            t_eval = time.perf_counter()
            record.update(evaluate(ctx, system, model, epoch))
            clock.evaluation_s += time.perf_counter() - t_eval
        records = [None] * world
        dist.all_gather_object(records, record)
        charge_boundary_wait(records, power)
        system.observe_epoch(records)
        states = [None] * world  # after observe_epoch: the state the next epoch starts from
        dist.all_gather_object(states, system.state_dict())
        if rank == 0:
            row = add_cumulative(epoch_summary(epoch, records,
                                               type(system).metric_reductions()), history)
            history.append(row)
            epochs_out.write(json_text(row))
            log.info("%s", epoch_line(row, epochs))
            if spec.get("checkpoint"):
                save_checkpoint(ckpt_dir, epoch, model, optimizer, _resume_key(spec, paths),
                                states)
        dist.barrier()
        if plateau_gain is not None and "val_acc" in records[0]:
            evaluated_val.append(records[0]["val_acc"])  # every worker's records alike
            if at_plateau(evaluated_val, plateau_gain):
                if rank == 0:
                    log.info("validation plateau after epoch %d (the last %d evaluations "
                             "raised the best by ≤ %g): stopping, %d epochs before the "
                             "bound", epoch + 1, WINDOW, plateau_gain, epochs - epoch - 1)
                break
    steps_out.close()
    system.close()
    meter.stop()
    clock.mark("done")
    clocks = [None] * world
    dist.all_gather_object(clocks, clock)
    run_info.update(breakdown(clocks))
    if rank == 0:
        epochs_out.close()
        summary = run_summary(spec, system, _epoch_rows(staging), meter.name, device,
                              env.launcher, run_info)
        write_tidy_tables(staging, world)
        write_json_atomic(staging / "summary.json", summary)
        publish_run(staging, Path(paths.out))
    dist.barrier()


class RecordFile(JsonlWriter):
    """A :class:`JsonlWriter` whose OS errors (a full disk …) name its file."""

    def write(self, line: str) -> None:
        try:
            super().write(line)
        except OSError as exc:
            if exc.filename:
                raise
            raise OSError(exc.errno, exc.strerror, str(self.path)) from exc


def _fresh_model(spec: RunSpec, dataset, device: torch.device):
    """The model (same initial weights on every worker) and its optimiser."""
    torch.manual_seed(derive_seed(spec.seed, "init") % 2**63)
    model = build_model(spec.architecture, dataset.feature_dim, spec.get("hidden"),
                        dataset.num_classes, num_layers=len(spec.get("fanouts")),
                        dropout=spec.get("dropout"), heads=spec.get("heads"),
                        **spec.model_kwargs()).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=spec.get("lr"),
                                 weight_decay=spec.get("weight_decay"))
    return model, optimizer


def _resume_key(spec: RunSpec, paths: RunPaths) -> str:
    """What a checkpoint must match to be resumed from: the run's settings
    (:meth:`RunSpec.resume_key`), the testbed's versions (congestion, dilation, energy,
    evaluation: records of another testbed never continue into this one) and the workload
    probe's step (a re-measured probe gives another f, so the run starts over)."""
    probe = _workload_probe(paths)
    parts = [spec.resume_key(), CONGESTION_MODEL, DILATION_POLICY, ENERGY_MODEL,
             EVALUATION_SAMPLE,
             "" if probe is None else f"{probe.get('workload_key')}:{probe['probe_s']!r}"]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _workload_probe(paths: RunPaths, spec: RunSpec | None = None) -> dict | None:
    """The workload's probe (``commgnn dilation``'s JSON) the run was given, if any; an
    InputError naming the file when it is not one, or (given ``spec``) is another
    workload's."""
    if paths.dilation is None:
        return None
    path = Path(paths.dilation)
    hint = "rerun snakemake (rule dilation)"
    try:
        probe = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a workload probe ({exc}); {hint}") from exc
    step = probe.get("probe_s") if isinstance(probe, dict) else None
    if not isinstance(step, (int, float)) or not step > 0 or \
            not isinstance(probe.get("host"), dict):
        raise InputError(f"{path}: not a workload probe (needs probe_s > 0 and host); {hint}")
    if spec is not None and paths.dataset:

        key = Workload(step_workload(spec, dataset_shape_of(paths.dataset)), spec.workers).key
        if probe.get("workload_key") != key:
            raise InputError(f"{path}: the probe of workload {probe.get('workload_key')}, "
                             f"this run's is {key}; {hint}")
    return probe


def _epoch_rows(staging: Path) -> list[dict]:
    """The epoch rows in the staging directory's ``epochs.jsonl`` (none if absent); an
    InputError naming the file and line if one is not a JSON object."""
    path = staging / "epochs.jsonl"
    if not path.is_file():
        return []
    rows = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line:
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise InputError(f"{path}:{number}: corrupt record ({exc}); delete "
                             f"{staging} to start this run over") from exc
        if not isinstance(row, dict) or "epoch" not in row:
            raise InputError(f"{path}:{number}: not an epoch record; delete {staging} to "
                             "start this run over")
        rows.append(row)
    return rows


def _epoch_target_energy(record: dict, power: TargetPowerModel) -> dict:
    """A worker's epoch under the target-machine model: its steps, plus idle power for the
    epoch's time outside them, plus the CPU cost of the traffic outside them: the
    system's feature and sampling RPCs there (``extra_remote_*``, e.g. cache fills) and
    every other class's messages and bytes the steps did not count (``moved_*_epoch``
    less the steps' ``moved_*``). Target time: raw seconds / f."""
    f = record["time_dilation"]
    steps = TargetEnergy(gpu=record["energy_target_gpu_j"], cpu=record["energy_target_cpu_j"])
    moved_messages = max(0, record.get("moved_messages_epoch", 0) - record["moved_messages"])
    moved_bytes = max(0, record.get("moved_bytes_epoch", 0) - record["moved_bytes"])
    outside = power.energy(max(0.0, record["time_s"] - record["step_s"]) / f, 0.0,
                           record.get("extra_remote_rpcs", 0) + moved_messages,
                           record.get("extra_remote_bytes", 0) + moved_bytes)
    return (steps + outside).as_dict()


def moved_traffic(emulator) -> LinkStats:
    """Messages and bytes this worker's emulator has carried in every class but feature
    fetches and sampling (those are counted as RPCs by the batches and the systems)."""
    moved = emulator.totals()
    for counted in (FETCH, SAMPLING):
        moved = moved - emulator.totals(counted)
    return moved


def _recorded(staging: Path, epochs: int) -> bool:
    """Whether the staging directory holds the epoch records of epochs ``0..epochs-1``."""
    path = staging / "epochs.jsonl"
    if not path.is_file():
        return False
    seen = {json.loads(line)["epoch"] for line in path.read_text().splitlines() if line}
    return set(range(epochs)) <= seen


def _run_epoch(system, epoch, rank, steps_out, emulator, meter,
               power: TargetPowerModel) -> dict:
    totals = {"epoch": epoch, "worker": rank, "steps": 0, "loss_sum": 0.0, "correct": 0,
              "seen": 0, "batch_feature_bytes_max": 0, **dict.fromkeys(STEP_TOTALS, 0)}
    system.train_module.train()
    device = system.ctx.device
    batches = iter(system.batches(epoch))
    while True:
        t0 = time.perf_counter()
        energy0 = meter.read_joules()
        prepared = next(batches, None)
        if prepared is None:
            break
        t1 = time.perf_counter()
        sync0 = emulator.totals(ALLREDUCE)
        moved0 = moved_traffic(emulator)
        mine0 = emulator.thread_waited_s()
        emulator.collectives.take()  # the step's collectives only
        out = system.train_step(prepared)
        if device.type == "cuda":  # the step's kernels are done: its compute time is whole
            torch.cuda.synchronize(device)
        t2 = time.perf_counter()
        sync = emulator.totals(ALLREDUCE)
        wait_s = emulator.collectives.take()
        mine = emulator.thread_waited_s()
        moved = moved_traffic(emulator) - moved0
        counts, sampling = prepared.counts, prepared.sampling
        compute_s, sync_s, step_s = t2 - t1, sync.charged_s - sync0.charged_s, t2 - t0
        # Communication inside the step: every emulated transfer this thread blocked on
        # (activations, migrations, the all-reduce …), plus the all-reduce charged on
        # another thread (an autograd device thread). Busy: the step's compute less that
        # and less the wait for peers in the real collective; the GPU idles through both
        # (and through fetch stalls before the step).
        comm_s = (mine[0] - mine0[0]) + max(0.0, sync_s - (mine[1] - mine0[1]))
        busy_s = max(0.0, compute_s - comm_s - wait_s)
        f = emulator.time_dilation  # target time = raw / f
        target = power.energy(step_s / f, busy_s / f,
                              counts.remote_rpcs + sampling.remote_rpcs + moved.initiations,
                              counts.remote_bytes + sampling.remote_bytes + moved.bytes)
        step = StepRecord(
            epoch=epoch, step=prepared.step, worker=rank, sample_s=prepared.sample_s,
            fetch_wait_s=prepared.fetch_wait_s, compute_s=compute_s, sync_s=sync_s,
            step_s=step_s,
            remote_rpcs=counts.remote_rpcs, remote_rows=counts.remote_rows,
            remote_bytes=counts.remote_bytes, cache_hits=prepared.cache_hits,
            cache_misses=prepared.cache_misses, local_rows=counts.local_rows,
            sampling_rpcs=sampling.remote_rpcs, sampling_rows=sampling.remote_rows,
            sampling_bytes=sampling.remote_bytes,
            allreduce_bytes=sync.bytes - sync0.bytes,
            allreduce_messages=sync.messages - sync0.messages,
            step_comm_s=comm_s, collective_wait_s=wait_s, busy_s=busy_s,
            moved_messages=moved.initiations,
            moved_bytes=moved.bytes, loss=out.loss, acc=out.correct / max(1, out.seen),
            batch_size=out.seen,
            energy_j=meter.read_joules() - energy0, energy_meter=meter.name,
            energy_target_j=target.total, energy_target_gpu_j=target.gpu,
            energy_target_cpu_j=target.cpu,
            extra={**prepared.extra, **out.extra,
                   "fetch_rtt_s": {str(o): rtt for o, rtt in counts.rtt_s.items()}})
        steps_out.write(step.to_json())
        system.observe(step)
        totals["steps"] += 1
        for key in STEP_TOTALS:
            totals[key] += getattr(step, key)
        totals["loss_sum"] += step.loss
        totals["correct"] += out.correct
        totals["seen"] += out.seen
        totals["batch_feature_bytes_max"] = max(  # the step's input rows on the device
            totals["batch_feature_bytes_max"],
            prepared.features.numel() * prepared.features.element_size())
    return totals


def probe_arg(path: Path | None, spec: RunSpec, dataset: Path) -> str | None:
    """``--dilation``: the workload's probe, checked against the run's workload before
    any work (None: none given)."""
    if path is None:
        return None
    _workload_probe(RunPaths(dataset=str(dataset), partition="", out="", checkpoints="",
                             dilation=str(path)), spec)
    return str(path)
