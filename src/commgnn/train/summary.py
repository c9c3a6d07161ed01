"""Aggregate per-worker epoch records into epoch rows and the run's ``summary.json``.

Synchronous training: an epoch lasts as long as its slowest worker, so epoch time is the
max over workers; communication counts and energy are sums over workers. A system's own
metrics are combined as its class declares (``System.reductions``).

Energy: ``energy_j`` is measured on this host (raw time, the named meter);
``energy_target_j`` (parts ``_gpu_j``, ``_cpu_j``) is the target-machine model
(:mod:`commgnn.energy.target`, named ``"target-model"``) in target time. Epoch rows carry
both cumulatively too (``energy_cum_j``, ``energy_target_cum_j``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import mean

import pandas as pd
import torch

from commgnn.core.declarations import reduce_values
from commgnn.core.files import write_csv
from commgnn.core.spec import RunSpec
from commgnn.energy.target import TargetPowerModel
from commgnn.network.congestion import congestion_from_spec, reach_label
from commgnn.network.netem import (
    ACTIVATION,
    ACTIVATION_GRAD,
    ALLREDUCE,
    FETCH,
    GRAPH,
    MIGRATION,
    SAMPLING,
    SHUFFLE,
)
from commgnn.train import walltime
from commgnn.train.clocks import run_clock
from commgnn.train.plateau import at_plateau, gain_of_last
from commgnn.train.system import System

#: Traffic classes whose modelled link seconds and bytes each epoch record carries
#: (``network_<class>_s``, ``network_<class>_bytes``; every thread, steps and outside).
NETWORK_CLASSES = (FETCH, SAMPLING, ALLREDUCE, SHUFFLE, MIGRATION, GRAPH, ACTIVATION,
                   ACTIVATION_GRAD)
#: Bytes per step by kind (``<kind>_bytes_per_step`` in the summary: the class's bytes on
#: the links, every thread, over every worker's steps): what each system sends instead of
#: features — computation graphs, activations and their gradients, models, gradients.
STEP_BYTE_KINDS = {"features": FETCH, "sampling": SAMPLING, "graph": GRAPH,
                   "activations": ACTIVATION, "activation_grads": ACTIVATION_GRAD,
                   "gradients": ALLREDUCE, "migration": MIGRATION, "shuffle": SHUFFLE}
SUMMED = ("remote_rpcs", "remote_rows", "remote_bytes", "cache_hits", "cache_misses",
          "local_rows", "energy_j", "steps", "sampling_rpcs", "sampling_rows", "sampling_bytes",
          "allreduce_bytes", "allreduce_messages", "network_fetch_s", "network_sampling_s",
          "network_allreduce_s", "fetch_wait_s", "network_shuffle_s", "network_migration_s",
          "network_graph_s", "network_activation_s", "network_activation_grad_s",
          *(f"network_{c}_bytes" for c in NETWORK_CLASSES), "energy_target_j",
          "energy_target_gpu_j", "energy_target_cpu_j")
#: Each step's time split (raw seconds, summed over workers; trainers outside the loop have
#: none): the device computing, and idling in real collectives for its peers; and what
#: every class but fetch and sampling moved, in steps and over the epoch (every thread).
SPLIT = ("busy_s", "step_comm_s", "collective_wait_s", "moved_messages", "moved_bytes",
         "moved_messages_epoch", "moved_bytes_epoch")
#: Cumulative values every epoch row carries: key → the per-epoch value it accumulates.
CUMULATIVE = {"energy_cum_j": "energy_j", "energy_target_cum_j": "energy_target_j"}
#: Traffic a system sends outside its steps (e.g. cache fills): summed over workers and
#: added to the epoch's remote totals.
OUTSIDE_STEPS = ("extra_remote_rpcs", "extra_remote_rows", "extra_remote_bytes")
#: Peak memory per worker beside ``peak_mem_bytes`` (the device's): the process's host RSS
#: and the largest step's input feature rows on the device (max over workers and epochs;
#: NaN where a trainer does not measure them).
MEMORY = ("peak_rss_bytes", "batch_feature_bytes_max")
TIMES = ("sample_s", "fetch_wait_s", "compute_s", "sync_emulated_s")
#: What a run records of its time dilation (train/dilation.py; null where none was probed).
DILATION_KEYS = ("time_dilation_source", "workload", "workload_key", "compute_step_probe_s",
                 "run_compute_step_probe_s", "time_dilation_run", "time_dilation_distance",
                 "reference_step_s", "reference_step_source", "reference_step_rule",
                 "reference_step_device")
#: How the run came to be: which attempt (the workflow retries a failed training job once),
#: the epoch it resumed from (its checkpoint; null: from the start) and the previous
#: attempt's one-line error (null on a first attempt).
ATTEMPT_KEYS = ("attempt", "resumed_from_epoch", "failed_attempt")
#: Model selection by validation accuracy over the evaluated epochs (:func:`selection`).
SELECTION_KEYS = ("best_val_acc", "best_val_epoch", "test_acc_at_best_val", "val_gain_last3")


def attempt_record(attempt: int = 1, failed_attempt: str | None = None,
                   resumed_from_epoch: int | None = None) -> dict:
    """The :data:`ATTEMPT_KEYS` of a run's summary."""
    return {"attempt": int(attempt), "resumed_from_epoch": resumed_from_epoch,
            "failed_attempt": failed_attempt}


#: The keys every run summary has, whatever its system (tables start with these).
COMMON_KEYS = (
    "system", "base_system", "dataset", "partitioning", "model", "layers", "batch_size",
    "network", "congestion", "congestion_reach",
    "seed", "workers", "epochs", "time_dilation", "time_dilation_source", "workload",
    "workload_key", "compute_step_probe_s", "run_compute_step_probe_s", "time_dilation_run",
    "time_dilation_distance", "reference_step_s", "reference_step_source",
    "reference_step_rule", "reference_step_device", "mean_epoch_time_s",
    "mean_epoch_time_raw_s", "setup_s", "total_time_s", "fetch_mb_per_step",
    "network_s_per_step", "network_all_s_per_step", "traffic_mb_per_step",
    "fetch_wait_s_per_step", "busy_s_per_step", "collective_wait_s_per_step", "hit_rate",
    "remote_rpcs_per_epoch",
    "remote_rows_per_epoch", "remote_bytes_per_epoch", "step_remote_rows_per_epoch",
    "step_remote_bytes_per_epoch", "local_rows_per_epoch",
    "extra_remote_rpcs_per_epoch", "extra_remote_rows_per_epoch",
    "extra_remote_bytes_per_epoch", "cache_hits_per_epoch", "cache_misses_per_epoch",
    "sampling_rpcs_per_epoch", "sampling_bytes_per_epoch", "allreduce_messages_per_epoch",
    "allreduce_bytes_per_epoch", "shuffle_bytes_per_epoch", "migration_bytes_per_epoch",
    *(f"{kind}_bytes_per_step" for kind in STEP_BYTE_KINDS),
    "test_acc", "val_acc", *SELECTION_KEYS, "stopped_at_plateau",
    "final_train_loss", "energy_j", "energy_meter", "peak_mem_bytes", "peak_rss_bytes",
    "batch_feature_bytes_max", "steps_per_epoch",
    "energy_per_epoch_j", "energy_target_j", "energy_target_gpu_j", "energy_target_cpu_j",
    "energy_target_per_epoch_j", *walltime.KEYS, "device", "device_mode", "clock",
    "energy_gpu_attribution", "testbed", "commit", *ATTEMPT_KEYS,
)


def selection(evaluated: list[dict]) -> dict:
    """Model selection over the evaluated epochs' rows (in epoch order): the highest
    validation accuracy (the first epoch on a tie), its epoch and that epoch's test accuracy;
    ``val_gain_last3``, how much the last 3 evaluations raised the best validation accuracy
    over the ones before (a plateau: a gain near 0; NaN with 3 or fewer evaluations). All
    NaN without evaluations."""
    if not evaluated:
        return dict.fromkeys(SELECTION_KEYS, math.nan)
    best = max(evaluated, key=lambda e: e["val_acc"])  # max keeps the first maximum
    return {"best_val_acc": best["val_acc"], "best_val_epoch": best["epoch"],
            "test_acc_at_best_val": best["test_acc"],
            "val_gain_last3": gain_of_last([e["val_acc"] for e in evaluated])}


def stopped_at_plateau(gain: float | None, evaluated: list[dict]) -> bool | None:
    """Whether a run under ``training.stop_at_plateau: gain`` ended at its validation
    plateau (its trainer stops at the first evaluation that meets the rule, so a run that
    met it ended there; one that did not ran to its ``epochs`` bound). None when the rule
    was off."""
    if gain is None:
        return None
    return at_plateau([e["val_acc"] for e in evaluated], gain)


def cpu_plan(workers: int) -> dict:
    """The device plan of a run whose trainer records none (every worker on the CPU)."""
    return {"setting": "cpu", "mode": "cpu", "backend": "gloo", "p2p": "direct",
            "devices": ["cpu"] * workers, "gpus": [""] * workers,
            "gpu_names": [""] * workers, "hosts": [], "sharers": [1] * workers,
            "gpus_used": 0, "reason": ""}


def gpu_attribution(meter: str, plan: dict) -> str:
    """How the run's GPU energy is attributed to its workers, in words."""
    if plan["mode"] == "cpu":
        return "none: no GPU"
    if "nvml" not in meter:
        return "modelled: each worker's GPU at its idle floor (no NVML)"
    shared = max(plan["sharers"])
    if shared > 1:
        return (f"metered (NVML): each GPU's energy split evenly among the workers sharing "
                f"it (up to {shared})")
    return "metered (NVML): each worker's own GPU"


def target_model(spec: RunSpec) -> TargetPowerModel:
    """The run's target-machine energy model: the defaults, overridden by the training
    config's ``energy_model`` (read from ``spec.training`` directly: it has no entry in
    ``TRAINING_DEFAULTS``, so runs that do not set it keep their spec and checkpoints)."""
    return TargetPowerModel.from_config(spec.training.get("energy_model"))


def congestion_label(network_spec, workers: int, epochs: int) -> str:
    """The network's congestion schedule in a word: ``none`` (also for a schedule that
    delays nothing in the run's epochs, e.g. the ``clean`` scenario), its kind, or
    ``<kind>:<name>`` for a named preset (``scenario:single-link``; figures tell clean
    runs from congested ones by it)."""
    spec = network_spec.get("congestion") if isinstance(network_spec, dict) else None
    if not spec or spec.get("kind", "none") == "none":
        return "none"
    kind = spec["kind"]
    if kind != "time":
        machines = workers // int(network_spec.get("workers_per_node", 1))
        table = congestion_from_spec(spec, machines, epochs).epoch_table_ms(epochs)
        if not any(table):
            return "none"
    return f"{kind}:{spec['name']}" if "name" in spec else str(kind)  # a named preset


def congestion_reach(network_spec, workers: int, epochs: int) -> str:
    """Which traffic the run's congestion delayed: ``none`` for a run without congestion
    (:func:`congestion_label` is ``none``), else the spec's reach
    (:func:`commgnn.network.congestion.reach_label`: ``all``, or the classes joined by ``+``,
    e.g. ``fetch+sampling``, the paper's default for the ``scenario`` and ``greendygnn``
    kinds) — the emulator's ``congested_traffic``."""
    if congestion_label(network_spec, workers, epochs) == "none":
        return "none"
    return reach_label(network_spec.get("congestion"))


def max_known(values) -> float:
    """The largest value that is known (not ``None`` or NaN), else NaN."""
    known = [v for v in values if v is not None and not math.isnan(v)]
    return max(known) if known else math.nan


def charge_boundary_wait(workers: list[dict], power: TargetPowerModel) -> None:
    """Charge each worker's record (in place) the idle power of its wait at the epoch's
    end: the epoch lasts as long as its slowest worker (``time_s`` of the epoch row is the
    largest), and a worker that finishes first — e.g. while a peer's background cache
    build still fetches from a congested machine — idles until it can start the next
    epoch's first all-reduce. ``boundary_wait_s`` (raw) is that gap; its target energy,
    ``power.energy(boundary_wait_s / f)`` (GPU and CPU idle floors), is added to the
    record's ``energy_target_*``. Target energy v3 (:data:`commgnn.core.testbed.ENERGY_MODEL`);
    v2 records lack it (``commgnn reprice`` adds it from their own times)."""
    end = max(w["time_s"] for w in workers)
    for w in workers:
        wait = end - w["time_s"]
        idle = power.energy(wait / w["time_dilation"])
        w["boundary_wait_s"] = wait
        w["energy_target_gpu_j"] += idle.gpu
        w["energy_target_cpu_j"] += idle.cpu
        w["energy_target_j"] = w["energy_target_gpu_j"] + w["energy_target_cpu_j"]


def epoch_summary(epoch: int, workers: list[dict], reductions: dict[str, str]) -> dict:
    """One epoch's record: aggregates plus the per-worker records. ``reductions`` are the
    system's declared metrics (``System.metric_reductions()``)."""
    seen = sum(w["seen"] for w in workers)
    row = {
        "epoch": epoch,
        "time_s": max(w["time_s"] for w in workers),
        "time_dilation": workers[0]["time_dilation"],
        "train_loss": sum(w["loss_sum"] for w in workers) / max(1, sum(w["steps"]
                                                                       for w in workers)),
        "train_acc": sum(w["correct"] for w in workers) / max(1, seen),
        "peak_mem_bytes": max(w["peak_mem_bytes"] for w in workers),
        **{key: max_known(w.get(key) for w in workers) for key in MEMORY},
        "steps_max": max(w["steps"] for w in workers),
        "boundary_wait_s": sum(w.get("boundary_wait_s", 0.0) for w in workers),
        "workers": workers,
    }
    for key in SUMMED:
        row[key] = sum(w[key] for w in workers)
    for key in (*OUTSIDE_STEPS, *SPLIT):
        row[key] = sum(w.get(key, 0) for w in workers)
    for part in ("cpu", "gpu"):  # the meter's parts (a CPU-only host has no GPU part)
        if all(f"energy_{part}_j" in w for w in workers):
            row[f"energy_{part}_j"] = sum(w[f"energy_{part}_j"] for w in workers)
    for kind in ("rpcs", "rows", "bytes"):
        row[f"step_remote_{kind}"] = row[f"remote_{kind}"]
        row[f"remote_{kind}"] += row[f"extra_remote_{kind}"]
    for key, how in reductions.items():
        values = [w[key] for w in workers if key in w]
        if values:
            row[key] = reduce_values(how, values)
    for key in TIMES:
        row[f"{key}_max"] = max(w[key] for w in workers)
    for key in ("val_acc", "test_acc"):
        if key in workers[0]:
            row[key] = workers[0][key]
    return row


def epoch_line(row: dict, epochs: int) -> str:
    """The one log line of an epoch: its time raw and in target seconds, loss, accuracies
    and the bytes it fetched (all workers, fills included)."""
    f = row["time_dilation"]
    accuracy = "".join(f"  {key[:-4]} {row[key]:.3f}" for key in ("val_acc", "test_acc")
                       if row.get(key) is not None)
    return (f"epoch {row['epoch'] + 1}/{epochs}: {row['time_s']:.2f} s raw "
            f"({row['time_s'] / f:.3f} s target, f = {f:.3g})  loss {row['train_loss']:.4f}"
            f"  train acc {row['train_acc']:.3f}{accuracy}"
            f"  fetched {row['remote_bytes'] / 1e6:.1f} MB")


def add_cumulative(row: dict, previous: list[dict]) -> dict:
    """``row`` with :data:`CUMULATIVE` values: its own plus every previous epoch row's
    (``previous``: the run's rows before it, also those kept from an interrupted run; a row
    without the value, written before it existed, makes the sum NaN)."""
    for cum, key in CUMULATIVE.items():
        row[cum] = sum(r.get(key, math.nan) for r in previous) + row[key]
    return row


def system_summary(reductions: dict[str, str], epochs: list[dict]) -> dict:
    """The run-level values of a system's declared metrics (see ``REDUCTIONS``); an epoch
    whose value is ``None`` (a NaN written to ``epochs.jsonl`` as ``null``: not applicable
    that epoch) does not count."""
    out = {}
    for key, how in sorted(reductions.items()):
        values = [e[key] for e in epochs if e.get(key) is not None]
        if not values:
            continue
        if how in ("sum", "slowest"):
            out[f"{key}_per_epoch"] = mean(values)
        else:
            out[key] = reduce_values(how, values)
    return out


def run_summary(spec: RunSpec, system: System, epochs: list[dict], meter: str,
                device: torch.device, launcher: str, run_info: dict) -> dict:
    """The run's summary: :data:`COMMON_KEYS`, the system's declared metrics (listed in
    ``system_metrics``), then the run's settings. ``congestion`` names the schedule
    (:func:`congestion_label`), ``congestion_reach`` which traffic it delayed
    (:func:`congestion_reach`: ``none``, ``all``, ``fetch+sampling``…).

    Times: ``*_raw_s`` are wall seconds here; every other time is a target time, the raw
    time divided by ``time_dilation`` (identical when it is 1). Energy: ``energy_j`` is
    measured here over raw time, ``energy_target_j`` the target-machine model over target
    time (``energy_target_model``: its constants); both over the epochs (not setup or
    evaluation), summed over workers. Per-step figures are
    means over every worker's steps; ``network_s_per_step`` is the modelled link time
    of the feature and neighbour-list traffic (every thread), ``fetch_wait_s_per_step``
    the part the trainer waited for (the critical path)."""
    plan = run_info.get("device_plan") or cpu_plan(spec.workers)
    provenance = run_info.get("provenance") or {}
    last_eval = [e for e in epochs if "test_acc" in e]
    per_epoch = {key: mean(e[key] for e in epochs) for key in
                 ("remote_rpcs", "remote_rows", "remote_bytes", "cache_hits", "cache_misses",
                  "local_rows", "step_remote_rows", "step_remote_bytes", "sampling_rpcs",
                  "sampling_bytes",
                  "allreduce_messages", "allreduce_bytes", *OUTSIDE_STEPS)}
    metrics = system_summary(type(system).metric_reductions(), epochs)
    f = float(run_info["time_dilation"])
    worker_steps = max(1, sum(e["steps"] for e in epochs))
    raw_epoch = mean(e["time_s"] for e in epochs)
    hits, misses = (sum(e[k] for e in epochs) for k in ("cache_hits", "cache_misses"))
    return {
        "system": spec.system,
        "base_system": system.name,
        "dataset": spec.dataset,
        "partitioning": spec.partitioning,
        "model": spec.model,
        "layers": len(spec.get("fanouts")),
        "batch_size": spec.batch_size,
        "network": spec.network,
        "congestion": congestion_label(spec.network_spec, spec.workers, spec.get("epochs")),
        "congestion_reach": congestion_reach(spec.network_spec, spec.workers,
                                             spec.get("epochs")),
        "seed": spec.seed,
        "workers": spec.workers,
        "epochs": len(epochs),
        "time_dilation": f,
        "mean_epoch_time_s": raw_epoch / f,
        "mean_epoch_time_raw_s": raw_epoch,
        "setup_s": run_info["setup_s"] / f,
        "total_time_s": (run_info["setup_s"] + sum(e["time_s"] for e in epochs)) / f,
        "fetch_mb_per_step": sum(e["step_remote_bytes"] for e in epochs) / worker_steps / 1e6,
        "network_s_per_step": sum(e["network_fetch_s"] + e["network_sampling_s"]
                                  for e in epochs) / worker_steps / f,
        "network_all_s_per_step": sum(e.get(f"network_{c}_s", 0.0) for e in epochs
                                      for c in NETWORK_CLASSES) / worker_steps / f,
        "traffic_mb_per_step": sum(e.get(f"network_{c}_bytes", 0) for e in epochs
                                   for c in NETWORK_CLASSES) / worker_steps / 1e6,
        "fetch_wait_s_per_step": sum(e["fetch_wait_s"] for e in epochs) / worker_steps / f,
        # target seconds per worker step: the device computing; idling for peers in the
        # real all-reduce (target energy prices both, commgnn.energy.target)
        "busy_s_per_step": sum(e.get("busy_s", 0.0) for e in epochs) / worker_steps / f,
        "collective_wait_s_per_step": sum(e.get("collective_wait_s", 0.0) for e in epochs)
        / worker_steps / f,
        "hit_rate": hits / (hits + misses) if hits + misses else math.nan,
        "remote_rpcs_per_epoch": per_epoch["remote_rpcs"],
        "remote_rows_per_epoch": per_epoch["remote_rows"],
        "remote_bytes_per_epoch": per_epoch["remote_bytes"],
        "step_remote_rows_per_epoch": per_epoch["step_remote_rows"],
        "step_remote_bytes_per_epoch": per_epoch["step_remote_bytes"],
        "local_rows_per_epoch": per_epoch["local_rows"],
        **{f"{key}_per_epoch": per_epoch[key] for key in OUTSIDE_STEPS},
        **{f"{key}_per_epoch": per_epoch[key] for key in
           ("sampling_rpcs", "sampling_bytes", "allreduce_messages", "allreduce_bytes")},
        "shuffle_bytes_per_epoch": mean(e.get("network_shuffle_bytes", 0) for e in epochs),
        "migration_bytes_per_epoch": mean(e.get("network_migration_bytes", 0)
                                          for e in epochs),
        **{f"{kind}_bytes_per_step": sum(e.get(f"network_{traffic}_bytes", 0) for e in epochs)
           / worker_steps for kind, traffic in STEP_BYTE_KINDS.items()},
        "cache_hits_per_epoch": per_epoch["cache_hits"],
        "cache_misses_per_epoch": per_epoch["cache_misses"],
        "test_acc": last_eval[-1]["test_acc"] if last_eval else math.nan,
        "val_acc": last_eval[-1]["val_acc"] if last_eval else math.nan,
        **selection(last_eval),
        "stopped_at_plateau": stopped_at_plateau(spec.get("stop_at_plateau"), last_eval),
        "final_train_loss": epochs[-1]["train_loss"],
        "energy_j": sum(e["energy_j"] for e in epochs),
        "energy_meter": meter,
        "energy_per_epoch_j": mean(e["energy_j"] for e in epochs),
        **{f"energy_target{part}_j": sum(e.get(f"energy_target{part}_j", math.nan)
                                         for e in epochs) for part in ("", "_gpu", "_cpu")},
        "energy_target_per_epoch_j": mean(e.get("energy_target_j", math.nan)
                                          for e in epochs),
        "energy_target_model": target_model(spec).describe(),
        "peak_mem_bytes": max(e["peak_mem_bytes"] for e in epochs),
        **{key: max_known(e.get(key) for e in epochs) for key in MEMORY},
        "steps_per_epoch": max(e["steps_max"] for e in epochs),
        "epoch_times_s": [e["time_s"] / f for e in epochs],
        "epoch_times_raw_s": [e["time_s"] for e in epochs],
        **dict.fromkeys(walltime.KEYS, math.nan),  # a trainer that does not break it down
        **dict.fromkeys(DILATION_KEYS),  # where no probe ran (fixed f, external trainers)
        **attempt_record(),  # a first attempt from the start, unless run_info says otherwise
        **{k: v for k, v in run_info.items()
           if k not in ("time_dilation", "setup_s", "device_plan", "provenance")},
        "provenance": provenance,  # what made it (commgnn.core.testbed)
        "testbed": provenance.get("testbed", "unrecorded"),
        "commit": provenance.get("commit", "unrecorded"),
        **metrics,
        "system_metrics": sorted(metrics),
        "device": str(device),
        "device_mode": plan["mode"],  # cpu | shared | exclusive (commgnn.runtime.devices)
        "device_plan": plan,
        "clock": run_clock(f, str(device), run_info.get("network_mode")),
        "energy_gpu_attribution": gpu_attribution(meter, plan),
        "memory_on": {**{key: "host" for key in ("peak_rss_bytes",)},
                      **{key: str(device) for key in
                         ("peak_mem_bytes", "batch_feature_bytes_max",
                          *type(system).device_state)}},
        "launcher": launcher,  # how the workers were started: spawn, torchrun or srun
        "world_size": spec.workers,  # `hosts` (from run_info): each worker's host name
        "network_spec": spec.network_spec,
        "training": spec.training,
        "system_options": {**system.options, "system": system.name},
    }


def write_tidy_tables(run_dir: Path, workers: int) -> None:
    """``steps.csv`` (one row per worker and step) and ``epochs.csv`` (one row per worker
    and epoch) beside the JSONL records, for pandas."""
    steps = pd.concat([pd.read_json(run_dir / f"steps_w{w}.jsonl", lines=True)
                       for w in range(workers)], ignore_index=True)
    write_csv(steps.sort_values(["epoch", "step", "worker"]), run_dir / "steps.csv")
    rows = []
    for line in (run_dir / "epochs.jsonl").read_text().splitlines():
        epoch = json.loads(line)
        for worker in epoch["workers"]:
            rows.append({**worker, **{f"run_{k}": v for k, v in epoch.items()
                                      if k in ("val_acc", "test_acc", "time_s",
                                               *CUMULATIVE)}})
    write_csv(pd.DataFrame(rows), run_dir / "epochs.csv")
