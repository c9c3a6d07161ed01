"""GreenDyGNN Algorithm 1: the calibration's fits against its measurements — the RPC round
trip against payload per injected delay (points: measured, lines: the Eq. 4 fit; the title
also gives the α, β, γ the emulator's link model implies on the same grid, which the fit
should recover — calibrations made before the window model record none), the
uniform-template hit rate against the window (points: exact counts on the presample,
line: the Eq. 2 logistic) and the clean calibration runs' step and rebuild times per
window. Times are target seconds (raw ÷ time dilation).

Inputs: GreenDyGNN control directories; those named ``calibration`` are read
(``calibration.json``, written by ``commgnn calibrate``). One row of panels per workload.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from commgnn.report.figures.plotting import save_figure
from commgnn.systems.greendygnn.figures.greendygnn_runs import control_records
from commgnn.systems.greendygnn.rpc_calibration import RpcFit
from commgnn.systems.greendygnn.workload import hit_rates, logistic

COLUMNS = ["workload", "kind", "x", "delay_ms", "measured", "fitted"]


def rows(workload: str, cal: dict) -> list[dict]:
    """Measured and fitted values: ``rpc`` (x = bytes, seconds), ``hit`` (x = W, rate),
    ``step`` and ``rebuild`` (x = W, seconds; no fit)."""
    out = []
    fit = RpcFit.from_dict(cal["rpc"]["fit"])
    for p in cal["rpc"]["points"]:
        out.append({"workload": workload, "kind": "rpc", "x": p["bytes"],
                    "delay_ms": p["delay_ms"], "measured": p["rtt_s"],
                    "fitted": float(fit.predict(p["bytes"], p["delay_ms"]))})
    tables, curve = cal["tables"], cal["fits"]["hit_curve"]
    params = [curve[k] for k in ("h_lo", "h_hi", "slope", "centre")]
    for w, h in zip(tables["windows"], hit_rates(tables), strict=True):
        out.append({"workload": workload, "kind": "hit", "x": w, "delay_ms": 0.0,
                    "measured": float(h),
                    "fitted": float(logistic(np.log2(float(w)), *params))})
    for kind in ("step", "rebuild"):
        for w, v in zip(cal["runs"]["windows"], cal["runs"][f"{kind}_s"], strict=True):
            out.append({"workload": workload, "kind": kind, "x": w, "delay_ms": 0.0,
                        "measured": v, "fitted": np.nan})
    return out


def _parameters(what: str, fit: dict) -> str:
    return (f"{what}: α {fit['alpha_s'] * 1e3:.2f} ms, β {fit['beta_s_per_byte']:.2e} s/B, "
            f"γ {fit['gamma_s_per_byte_ms']:.1e} s/B/ms")


def make(inputs: list[Path], out: Path) -> pd.DataFrame:
    records = control_records(inputs, "calibration", "calibration.json")
    n = max(1, len(records))
    fig, axes = plt.subplots(n, 3, figsize=(14, 4 * n), squeeze=False)
    data = []
    if not records:
        for ax in axes[0]:
            ax.text(0.5, 0.5, "no data: no calibration", ha="center", va="center",
                    transform=ax.transAxes)
            ax.axis("off")
    for row, (directory, cal) in zip(axes, records, strict=False):
        workload = "/".join(directory.parts[-4:-1])
        frame = pd.DataFrame(rows(workload, cal), columns=COLUMNS)
        data.append(frame)
        rpc = frame[frame["kind"] == "rpc"]
        for delay, group in rpc.groupby("delay_ms"):
            group = group.sort_values("x")
            line = row[0].plot(group["x"] / 1e6, group["fitted"] * 1e3, "-")[0]
            row[0].plot(group["x"] / 1e6, group["measured"] * 1e3, "s",
                        color=line.get_color(), label=f"δ = {delay:g} ms")
        fit = cal["rpc"]["fit"]
        title = (f"{workload}: RPC, Eq. 4 fit (lines)\n{_parameters('fit', fit)}")
        if cal["rpc"].get("implied"):
            title += "\n" + _parameters("link model implies", cal["rpc"]["implied"])
        row[0].set(xlabel="response payload, MB", ylabel="round trip, ms (target)",
                   title=title)
        row[0].legend(fontsize=7)
        hit = frame[frame["kind"] == "hit"]
        row[1].plot(hit["x"], hit["fitted"], "-", label="logistic (Eq. 2)")
        row[1].plot(hit["x"], hit["measured"], "s", label="exact (presample)")
        row[1].set(xscale="log", xlabel="window W", ylabel="hit rate (uniform template)",
                   title="hit rate h(W)")
        row[1].legend(fontsize=7)
        for kind, marker in (("step", "o-"), ("rebuild", "s--")):
            part = frame[frame["kind"] == kind]
            row[2].plot(part["x"], part["measured"] * 1e3, marker,
                        label="step" if kind == "step" else "rebuild per window")
        row[2].set(xscale="log", xlabel="window W", ylabel="ms (target)",
                   title="clean calibration runs")
        row[2].legend(fontsize=7)
    fig.suptitle("GreenDyGNN calibration (Algorithm 1): fits vs measurements, target time")
    fig.tight_layout()
    save_figure(fig, out, dpi=120)
    return pd.concat(data, ignore_index=True) if data else pd.DataFrame(columns=COLUMNS)
