"""GreenDyGNN's cost model (§IV-A, Eqs. 1–4), evaluated from a calibration file.

The paper's Eq. 1 splits a step into compute + all-reduce, the exposed part of the
rebuild, and the misses' fetch time; its Eq. 4 prices one request under a delay ``δ``.
Here the clean part is *measured* and the congestion part is *analytic*:

- **Clean step** ``s_W``: the mean slowest-worker step of a real clean calibration run
  with window ``W`` (target seconds), interpolated in log2 W between measured windows.
  A biased template changes the worker's miss rows by ``Δrows`` (exact, from the
  presample tables of :mod:`commgnn.systems.greendygnn.workload`); it costs ``row_cost_s · Δrows``,
  the per-row slope of the clean step time across the measured windows.
- **Delay** (Eq. 3/4): worker ``r``'s request to owner ``o`` pays
  ``κ·δ_ro + γ·m_ro·F_b·δ_ro[ms]`` more than clean, ``δ_ro = max(d_r, d_o)`` (a message
  pays the larger of its two machines' delays, as the emulator does), ``m_ro`` the
  worker's miss rows from ``o`` per batch; the resolver makes the owners' requests one
  after another, so the extras add. The resolver runs ahead of the trainer: the part of
  the extra that fits in the clean step's idle resolver time (``slack``: the step minus
  the batch's summed round trips, measured) is hidden.
- **Rebuild**: a window's build (measured clean, per window) gains the same delay terms
  for its bulk pulls; what exceeds the window's duration is a swap wait, spread over the
  window's steps (beyond the clean run's own, already in ``s_W``).
- **Barrier**: the step is the slowest worker's. The controlled worker uses the action's
  template; the others run the same window with the uniform template.
- **Energy**: the target-machine model (:class:`~commgnn.energy.target.TargetPowerModel`)
  summed over workers: idle power over the step, busy GPU power over the measured compute,
  and CPU per request and payload byte (misses, plus the fill spread over the window).

Actions are indexed as :func:`commgnn.systems.greendygnn.controller.actions` orders them: window
major, then the template (uniform, then a bias toward each remote owner in rank order).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from commgnn.core.errors import InputError, StaleInputError
from commgnn.core.files import finite_or_null
from commgnn.core.provenance import digest, hinted, rebuild_hint
from commgnn.energy.target import TargetPowerModel
from commgnn.systems.greendygnn.controller import WINDOWS

CALIBRATION_VERSION = 1
#: The inputs every calibration records the fingerprints of (``calibration["inputs"]``).
CALIBRATION_INPUTS = ("dataset", "partition", "presample")


class Calibration(dict):
    """A calibration read from a file: the JSON object, with the file's ``path``."""

    path: Path | None = None


def calibration_fingerprint(calibration: dict[str, Any]) -> str:
    """The fingerprint of a calibration: a digest of its content as written (NaN as
    ``null``), what a policy trained on it records."""
    return digest(finite_or_null(dict(calibration)))


def calibration_name(calibration: dict[str, Any]) -> str:
    """The calibration's file, or its workload when it was not read from one."""
    path = getattr(calibration, "path", None)
    return str(path) if path else f"calibration of {calibration.get('workload')}"


def read_calibration(path: str | Path) -> Calibration:
    """A calibration file (``commgnn calibrate``), checked for the keys the model reads
    and for the input fingerprints it must record (one made before commgnn recorded
    them is a :class:`StaleInputError`); errors name it and how to rebuild it."""
    path = Path(path)
    with hinted(path.parent, "calibration"):
        data = _read_calibration(path)
    if not all(isinstance(data.get("inputs"), dict) and data["inputs"].get(name)
               for name in CALIBRATION_INPUTS):
        raise StaleInputError(f"{path}: records no input fingerprints (made before commgnn "
                              f"recorded provenance); "
                              f"{rebuild_hint(path.parent, 'calibration')}")
    calibration = Calibration(data)
    calibration.path = path
    return calibration


def _read_calibration(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable calibration file ({exc})") from None
    if not isinstance(data, dict) or data.get("version") != CALIBRATION_VERSION:
        raise InputError(f"{path}: not a calibration file of version {CALIBRATION_VERSION}")
    for key in ("workload", "rpc", "tables", "runs", "fits", "power"):
        if key not in data:
            raise InputError(f"{path}: calibration lacks {key!r}")
    try:
        CostModel(data)
    except KeyError as exc:
        raise InputError(f"{path}: calibration lacks {exc}") from None
    except (TypeError, ValueError) as exc:
        raise InputError(f"{path}: malformed calibration ({exc})") from None
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
    return data


@dataclass
class StepCosts:
    """Per action ``a`` (and worker): target step seconds, joules summed over workers,
    and the observation parts a controller sees."""

    step_s: np.ndarray  # [A]
    energy_j: np.ndarray  # [A]
    agent_fetch_extra_s: np.ndarray  # [A, P] extra round trip per owner (agent)
    agent_rebuild_s: np.ndarray  # [A]


class CostModel:
    """Step time and energy per action for a node-delay vector; see the module doc."""

    def __init__(self, calibration: dict[str, Any]) -> None:
        self.calibration = calibration
        tables, runs, rpc, fits = (calibration[k] for k in ("tables", "runs", "rpc", "fits"))
        self.world = int(tables["workers"])
        self.windows = [int(w) for w in tables["windows"]]
        if self.windows != list(WINDOWS):
            raise InputError(f"calibration tables cover windows {self.windows}; the action "
                             f"space needs {list(WINDOWS)}")
        work = calibration["workload"]
        self.steps = int(work["steps_per_epoch"])
        self.row_bytes = float(work["row_bytes"])
        fit = rpc["fit"]
        self.kappa = float(fit["delay_coef"])
        self.gamma = float(fit["gamma_s_per_byte_ms"])
        self.power = TargetPowerModel.from_config(
            {k: v for k, v in calibration["power"].items() if k not in ("meter", "modelled")})
        P = self.world
        remote = np.asarray(tables["remote_per_batch"], dtype=float)  # [P, P]
        hits = np.asarray(tables["hits_per_batch"], dtype=float)  # [P, W, T, P]
        self.fill = np.asarray(tables["fill_rows_per_window"], dtype=float)  # [P, W, T, P]
        self.remote = remote
        self.miss = np.clip(remote[:, None, None, :] - hits, 0.0, None)  # [P, W, T, P]
        for r in range(P):
            self.miss[r, :, :, r] = 0.0
            self.fill[r, :, :, r] = 0.0
        self.hit_rate = np.where(remote[:, None, None, :] > 0,
                                 hits / np.maximum(remote[:, None, None, :], 1e-12), 1.0)
        # measured clean runs, interpolated in log2 W over the measured windows
        measured = np.log2(np.asarray(runs["windows"], dtype=float))
        grid = np.log2(np.asarray(self.windows, dtype=float))

        def interp(values: Any) -> np.ndarray:
            return np.interp(grid, measured, np.asarray(values, dtype=float))

        self.clean_step = interp(runs["step_s"])  # [W]
        # the GPU computing (calibrations before busy_s was recorded: their compute)
        self.busy_s = float(np.mean(runs.get("busy_s", runs["compute_s"])))
        # CPU of the traffic every window moves alike (gradients …), per worker step
        self.moved_cpu_j = self.power.core_w * (
            float(np.mean(runs.get("moved_messages_per_step", [0.0]))) * self.power.rpc_cpu_s
            + float(np.mean(runs.get("moved_bytes_per_step", [0.0])))
            / self.power.copy_bytes_per_s)
        self.slack = np.stack([interp(np.asarray(runs["slack_s"])[:, i])
                               for i in range(P)], axis=1)  # [W, P]
        self.rebuild = interp(runs["rebuild_s"])  # [W] per window
        self.base_rtt = np.stack([[interp(np.asarray(runs["base_rtt_s"])[:, r, o])
                                   for o in range(P)] for r in range(P)])  # [P, P, W]
        self.row_cost = max(0.0, float(fits["row_cost_s"]))
        self.uniform_miss = self.miss[:, :, :1, :].sum(axis=3)  # [P, W, 1]
        self.window_arr = np.asarray(self.windows, dtype=float)

    # -- per action -----------------------------------------------------------------------
    def n_templates(self) -> int:
        return self.world

    def action(self, window_index: int, template: int) -> int:
        return window_index * self.world + template

    def costs(self, delays_s: np.ndarray, agent: int) -> StepCosts:
        """Costs of every action of worker ``agent`` under node delays ``delays_s`` [P]
        (target seconds), every other worker using the same window, uniform."""
        P, T = self.world, self.world
        d = np.asarray(delays_s, dtype=float)
        pair = np.maximum(d[:, None], d[None, :])  # [P(r), P(o)]
        np.fill_diagonal(pair, 0.0)
        Wn = self.window_arr  # [W]
        # extra round trip per (worker, window, template, owner)
        miss, fill = self.miss, self.fill
        extra = np.where(miss > 0, self.kappa * pair[:, None, None, :]
                         + self.gamma * miss * self.row_bytes * pair[:, None, None, :] * 1e3,
                         0.0)
        fill_extra = np.where(fill > 0, self.kappa * pair[:, None, None, :]
                              + self.gamma * fill * self.row_bytes * pair[:, None, None, :]
                              * 1e3, 0.0)
        rows_delta = miss.sum(axis=3) - self.uniform_miss  # [P, W, T]
        base = self.clean_step[None, :, None] + self.row_cost * rows_delta  # [P, W, T]
        hidden = self.slack.T[:, :, None]  # [P, W, 1]
        t = base + np.maximum(0.0, extra.sum(axis=3) - hidden)
        rebuild_clean = self.rebuild[None, :, None]
        rebuild = rebuild_clean + fill_extra.sum(axis=3)
        wait = (np.maximum(0.0, rebuild - Wn[None, :, None] * t)
                - np.maximum(0.0, rebuild_clean - Wn[None, :, None] * base))
        t = t + np.maximum(0.0, wait) / Wn[None, :, None]  # [P, W, T]
        # the agent's actions; the others uniform
        others = [r for r in range(P) if r != agent]
        step = t[agent]  # [W, T]
        if others:
            step = np.maximum(step, t[others, :, 0].max(axis=0)[:, None])
        # energy over all workers, each with its own template choice
        rpcs = (miss > 0).sum(axis=3) + (fill > 0).sum(axis=3) / Wn[None, :, None]
        nbytes = (miss.sum(axis=3) + fill.sum(axis=3) / Wn[None, :, None]) * self.row_bytes
        comm = self.power.core_w * (rpcs * self.power.rpc_cpu_s
                                    + nbytes / self.power.copy_bytes_per_s)  # [P, W, T]
        per_worker_comm = comm[agent] + (comm[others, :, 0].sum(axis=0)[:, None]
                                         if others else 0.0)
        idle = (self.power.gpu_idle_w + self.power.cpu_idle_w) * step * P
        busy = (self.power.gpu_busy_w - self.power.gpu_idle_w) * np.minimum(self.busy_s,
                                                                            step) * P
        energy = idle + busy + per_worker_comm + self.moved_cpu_j * P
        return StepCosts(step_s=step.reshape(-1), energy_j=energy.reshape(-1),
                         agent_fetch_extra_s=extra[agent].reshape(len(Wn) * T, P),
                         agent_rebuild_s=rebuild[agent].reshape(-1))
