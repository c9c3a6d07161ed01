"""GreenDyGNN's one-time calibration (Algorithm 1) and the simulator's validation
(Figure 8), both measured with real training runs of the real workload.

:func:`calibrate` writes ``calibration.json``:

- ``rpc``: round trips over a payload × injected-delay grid between two real processes
  on the run's emulated network, and the Eq. 4 fit
  (:mod:`commgnn.systems.greendygnn.rpc_calibration`);
- ``tables``: exact per-window hit and fill tables from the presample
  (:mod:`commgnn.systems.greendygnn.workload`);
- ``runs``: one clean ``greendygnn`` static run per calibration window (``epochs`` epochs
  each): the slowest worker's step, compute, all-reduce, busy time (compute less the
  emulated and the straggler wait), the messages and bytes of every class but feature
  fetches per worker step (gradients …), per-owner round trips, the
  resolver's slack, rebuild seconds per window, miss rows — all in target seconds;
- ``fits``: the hit-rate logistic (Eq. 2), the rebuild-time power law, and the per-row
  slope of the clean step time (used for templates the runs did not measure);
- ``power``: the target-machine energy model per phase (no power meter here: the model of
  :mod:`commgnn.energy.target`, the same one the runs report);
- ``inputs``: the fingerprints of the dataset, partition and presample it was measured
  on (:func:`input_fingerprints`, :mod:`commgnn.core.provenance`). :func:`validate` refuses a
  calibration made from other inputs than the ones it is given
  (:class:`~commgnn.core.errors.StaleInputError`, naming how to rebuild it), and a policy
  trained on it records them (:mod:`commgnn.systems.greendygnn.policy`).

:func:`validate` runs ``greendygnn`` static over a window × delay grid (every
non-coordinator machine delayed from the first epoch) and compares each run's mean step
time with the simulator's prediction for it: ``validation.json``.

The runs are the pipeline's own (``train.loop.run``), staged under the output directory
(``runs/``), so every number in the file can be traced to its step records.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

import numpy as np

from commgnn.core.config import defaults
from commgnn.core.files import write_json_atomic
from commgnn.core.provenance import check_inputs, rebuild_hint
from commgnn.core.spec import RunSpec
from commgnn.data.store import dataset_fingerprint, read_meta
from commgnn.energy.target import TargetPowerModel
from commgnn.partition.io import load_partition, partition_fingerprint, read_partition_meta
from commgnn.sampling.presample import presample_fingerprint, read_presample_meta
from commgnn.systems.greendygnn.controller import WINDOWS, StaticController
from commgnn.systems.greendygnn.costmodel import (
    CALIBRATION_VERSION,
    CostModel,
    calibration_name,
)
from commgnn.systems.greendygnn.rpc_calibration import calibrate_rpc
from commgnn.systems.greendygnn.system import GreenDyGNNSystem
from commgnn.systems.greendygnn.workload import (
    fit_hit_curve,
    fit_power,
    hit_rates,
    window_tables,
)

log = logging.getLogger(__name__)

#: Defaults of the ``control.calibration`` config section (from the config schema).
CALIBRATION_DEFAULTS: dict[str, Any] = defaults("control_calibration")
#: Defaults of the ``control.validation`` config section (from the config schema).
VALIDATION_DEFAULTS: dict[str, Any] = defaults("control_validation")


def input_fingerprints(paths: dict[str, str]) -> dict[str, str]:
    """The fingerprints of the ``dataset``, ``partition`` and ``presample`` directories of
    ``paths``, from their ``meta.json`` (nothing is rehashed), refusing a partition or
    presample made from other inputs than these (StaleInputError)."""
    dataset = dataset_fingerprint(read_meta(paths["dataset"])["files"])
    part_meta = read_partition_meta(paths["partition"])
    partition = partition_fingerprint(part_meta)
    pre_meta = read_presample_meta(paths["presample"])
    check_inputs(paths["partition"], "partition",
                 {"dataset": part_meta["dataset"].get("fingerprint")},
                 {"dataset": (dataset, paths["dataset"])})
    check_inputs(paths["presample"], "presample",
                 {key: (pre_meta.get(key) or {}).get("fingerprint")
                  for key in ("dataset", "partition")},
                 {"dataset": (dataset, paths["dataset"]),
                  "partition": (partition, paths["partition"])})
    return {"dataset": dataset, "partition": partition,
            "presample": presample_fingerprint(pre_meta)}


def check_calibration_inputs(calibration: dict, paths: dict[str, str]) -> None:
    """StaleInputError unless ``calibration`` was measured on the directories of
    ``paths`` (their fingerprints now)."""
    name = calibration_name(calibration)
    path = getattr(calibration, "path", None)
    hint = rebuild_hint(path.parent if path else "the calibration directory", "calibration")
    now = input_fingerprints(paths)
    check_inputs(name, "calibration", calibration.get("inputs"),
                 {key: (now[key], paths[key]) for key in now}, hint=hint)


def _run_spec(template: RunSpec, *, window: int, epochs: int, delay_ms: float = 0.0,
              name: str) -> RunSpec:
    """``template`` as a greendygnn static run of ``window`` for ``epochs`` epochs, every
    non-coordinator machine's feature fetches delayed ``delay_ms`` from the first epoch
    (clean at 0; gradient traffic never, as the paper injects delay on the RPC port only
    and the simulator models fetches)."""
    network = {k: v for k, v in template.network_spec.items()
               if k not in ("congestion", "congested_traffic")}
    if delay_ms > 0:
        delays = {str(n): float(delay_ms) for n in range(1, template.workers)}
        network["congestion"] = {"kind": "epochs", "table": {"0": delays}, "period": 1,
                                 "applies_to": ["fetch"]}
    options = {**template.system_options, "system": GreenDyGNNSystem.name,
               "controller": StaticController.name,
               "window": int(window)}
    training = {**template.training, "epochs": int(epochs), "checkpoint": False,
                "resume": False, "eval_every": 0,
                "stop_at_plateau": None}  # a measurement runs every epoch it is given
    return dataclasses.replace(template, system=name, network=name, network_spec=network,
                               system_options=options, training=training)


def _train(spec: RunSpec, paths: dict[str, str], out: Path) -> Path:
    from commgnn.train.loop import RunPaths, run  # deferred: imports pandas

    if not (out / "summary.json").exists():
        run(spec, RunPaths(dataset=paths["dataset"], partition=paths["partition"],
                           out=str(out), checkpoints=str(out.with_name(out.name + ".ckpt")),
                           inputs={"presample": paths["presample"]},
                           dilation=paths.get("dilation")), GreenDyGNNSystem)
    return out


def measure_run(run_dir: Path) -> dict[str, Any]:
    """A run's step-level averages in target seconds (see the module docstring)."""
    summary = json.loads((run_dir / "summary.json").read_text())
    f = float(summary["time_dilation"])
    workers = int(summary.get("workers", len(list(run_dir.glob("steps_w*.jsonl")))))
    records = [[json.loads(line) for line in (run_dir / f"steps_w{r}.jsonl").open()]
               for r in range(workers)]
    steps = min(len(r) for r in records)
    step = np.array([[rec[i]["step_s"] for rec in records] for i in range(steps)]) / f
    misses = np.array([[rec[i]["cache_misses"] for rec in records] for i in range(steps)])
    rtt = np.zeros((workers, workers))
    slack = np.zeros(workers)
    for r, recs in enumerate(records):
        sums = []
        for o in range(workers):
            vals = [rec["fetch_rtt_s"].get(str(o)) for rec in recs[:steps]]
            vals = [v for v in vals if v is not None]
            rtt[r, o] = float(np.mean(vals)) / f if vals else 0.0
        sums = [sum(rec["fetch_rtt_s"].values()) / f for rec in recs[:steps]]
        slack[r] = max(0.0, float(np.mean(step[:, r]) - np.mean(sums)))
    epochs = [json.loads(line) for line in (run_dir / "epochs.jsonl").open()]
    built = sum(e.get("windows_built", 0) for e in epochs)
    rebuild = sum(e.get("rebuild_s", 0.0) for e in epochs) / f / max(1, built)
    every = [rec for recs in records for rec in recs]
    compute = np.mean([rec["compute_s"] for rec in every]) / f
    sync = np.mean([rec["sync_s"] for rec in every]) / f
    busy = np.mean([rec.get("busy_s", max(0.0, rec["compute_s"] - rec["sync_s"]))
                    for rec in every]) / f
    return {"step_s": float(step.max(axis=1).mean()), "compute_s": float(compute),
            "sync_s": float(sync), "busy_s": float(busy),
            "moved_messages_per_step": float(np.mean([rec.get("moved_messages", 0)
                                                      for rec in every])),
            "moved_bytes_per_step": float(np.mean([rec.get("moved_bytes", 0)
                                                   for rec in every])),
            "base_rtt_s": rtt.tolist(), "slack_s": slack.tolist(),
            "rebuild_s": float(rebuild), "miss_rows": float(misses.max(axis=1).mean()),
            "energy_target_j_per_step": float(summary["energy_target_j"])
            / max(1, steps),
            "time_dilation": f, "steps": steps}


def calibrate(template: RunSpec, paths: dict[str, str], out_dir: str | Path,
              settings: dict[str, Any] | None = None) -> dict:
    """Measure and fit everything the simulator needs; write ``calibration.json`` in
    ``out_dir`` and return it. ``paths``: dataset, partition, presample directories."""

    s = {**CALIBRATION_DEFAULTS, **(settings or {})}
    inputs = input_fingerprints(paths)
    out = Path(out_dir)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    windows = sorted({int(w) for w in s["windows"]})
    if not windows or any(w not in WINDOWS for w in windows):
        raise ValueError(f"control.calibration.windows: {windows} must be in {list(WINDOWS)}")
    runs = []
    for i, w in enumerate(windows):
        log.info("calibration run %d/%d: W=%d", i + 1, len(windows), w)
        spec = _run_spec(template, window=w, epochs=s["epochs"], name=f"calibrate-w{w}")
        runs.append(measure_run(_train(spec, paths, out / "runs" / f"w{w}")))
    f = runs[0]["time_dilation"]
    partition = load_partition(paths["partition"])
    owner = np.asarray(partition.book.owner, dtype=np.int64)
    capacity = int(template.system_options.get("cache_rows", 100000))
    tables = window_tables(paths["presample"], owner, capacity=capacity,
                           epochs=s["table_epochs"])
    tables["select_s"] = [x / f for x in tables["select_s"]]
    dim = _feature_dim(paths["dataset"])
    network = {k: v for k, v in template.network_spec.items()
               if k not in ("congestion", "congested_traffic", "time_dilation")}
    log.info("RPC calibration over %s rows x %s ms", s["rpc_rows"], s["rpc_delays_ms"])
    rpc = calibrate_rpc(network, rows_grid=s["rpc_rows"], delays_ms=s["rpc_delays_ms"],
                        repeats=int(s["rpc_repeats"]), feature_dim=dim, time_dilation=f,
                        seed=template.seed)
    if rpc["fit"]["delay_coef"] <= 0:
        log.warning("RPC calibration fitted κ = %.3g <= 0 (a delay shortening a round "
                    "trip): the host's timing noise outweighs the delays; raise "
                    "control.calibration.rpc_repeats or the largest rpc_delays_ms",
                    rpc["fit"]["delay_coef"])
    miss = [r["miss_rows"] for r in runs]
    step = [r["step_s"] for r in runs]
    row_cost = float(np.polyfit(miss, step, 1)[0]) if len(set(miss)) > 1 else 0.0
    steps_per_epoch = json.loads((out / "runs" / f"w{windows[0]}" / "summary.json")
                                 .read_text())["steps_per_epoch"]
    calibration = {
        "version": CALIBRATION_VERSION,
        "workload": {"dataset": template.dataset, "partitioning": template.partitioning,
                     "model": template.model, "batch_size": template.batch_size,
                     "network": template.network, "seed": template.seed,
                     "workers": template.workers, "steps_per_epoch": int(steps_per_epoch),
                     "row_bytes": dim * 4, "capacity": capacity, "time_dilation": f},
        "settings": s,
        "rpc": rpc,
        "tables": tables,
        "runs": {"windows": windows, **{k: [r[k] for r in runs] for k in runs[0]}},
        "fits": {"hit_curve": fit_hit_curve(tables["windows"], hit_rates(tables).tolist()),
                 "select": fit_power(tables["windows"], tables["select_s"]),
                 "rebuild": fit_power(windows, [r["rebuild_s"] for r in runs]),
                 "row_cost_s": row_cost,
                 "step_vs_miss_intercept_s": float(np.polyfit(miss, step, 1)[1])
                 if len(set(miss)) > 1 else float(np.mean(step))},
        "power": TargetPowerModel.from_config(template.get("energy_model")
                                              if "energy_model" in template.training
                                              else None).describe(),
        "inputs": inputs,
    }
    CostModel(calibration)  # refuse a file the simulator cannot read
    write_json_atomic(out / "calibration.json", calibration)
    return calibration


def _feature_dim(dataset_dir: str) -> int:
    meta = json.loads((Path(dataset_dir) / "meta.json").read_text())
    for key in ("num_features", "feature_dim"):
        if key in meta:
            return int(meta[key])
    return int(np.load(Path(dataset_dir) / "features.npy", mmap_mode="r").shape[1])


def predict_step_s(model: CostModel, window: int, delay_ms: float, workers: int) -> float:
    """The simulator's mean step (target s) for static ``window``, uniform, with every
    non-coordinator machine delayed ``delay_ms``, averaged over the controlled worker."""
    delays = np.array([0.0] + [delay_ms * 1e-3] * (workers - 1))
    a = model.action(WINDOWS.index(window), 0)
    return float(np.mean([model.costs(delays, r).step_s[a] for r in range(workers)]))


def validate(template: RunSpec, paths: dict[str, str], calibration: dict, out_dir: str | Path,
             settings: dict[str, Any] | None = None) -> dict:
    """Held-out runs over ``windows × delays_ms``: measured vs predicted step time;
    writes ``validation.json`` in ``out_dir``."""
    s = {**VALIDATION_DEFAULTS, **(settings or {})}
    check_calibration_inputs(calibration, paths)
    out = Path(out_dir)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    model = CostModel(calibration)
    points = []
    for w in s["windows"]:
        for d in s["delays_ms"]:
            name = f"validate-w{w}-d{_tag(d)}"
            spec = _run_spec(template, window=int(w), epochs=s["epochs"], delay_ms=float(d),
                             name=name)
            measured = measure_run(_train(spec, paths, out / "runs" / name))
            predicted = predict_step_s(model, int(w), float(d), template.workers)
            points.append({"window": int(w), "delay_ms": float(d),
                           "measured_s": measured["step_s"], "predicted_s": predicted,
                           "error": abs(predicted - measured["step_s"]) / measured["step_s"]})
    errors = [p["error"] for p in points]
    result = {"points": points, "mean_error": float(np.mean(errors)),
              "max_error": float(np.max(errors)), "settings": s,
              "workload": calibration["workload"]}
    write_json_atomic(out / "validation.json", result)
    return result


def _tag(delay_ms: float) -> str:
    return f"{delay_ms:g}".replace(".", "p")

