"""GreenDyGNN Figure 7 / §VI-D: how the window controller reacts to congestion — the mean
window per epoch of the ``heuristic`` and ``dqn`` GreenDyGNN runs (top, congested epochs
shaded, the injected delay on a twin axis) and their cache hit rate per epoch with any
RapidGNN run of the same dataset and network (bottom).

Inputs: run directories (``summary.json``, ``epochs.jsonl``). The summaries keep no
per-epoch congestion table, so it is rebuilt from ``network_spec`` with the run's machine
and epoch counts, as ``commgnn.train.summary.congestion_label`` does. Delays are one-way
milliseconds of target time (the emulator dilates them with the run's time dilation).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import pandas as pd

from commgnn.network.congestion import congestion_from_spec
from commgnn.report.figures.plotting import save_figure

COLUMNS = ["run", "system", "network", "epoch", "mean_window", "hit_rate", "max_delay_ms"]
#: The controllers whose windows change during a run (``static`` keeps one W).
CONTROLLERS = ("dqn", "heuristic")


def epoch_node_delays_ms(summary: dict) -> list[dict[int, float]] | None:
    """The injected one-way delay (ms) of each delayed machine, per configured epoch of the
    run's network (``{}``: a clean epoch); None for time-based schedules (no per-epoch
    table)."""
    network = summary.get("network_spec") or {}
    spec = network.get("congestion") if isinstance(network, dict) else None
    epochs = int((summary.get("training") or {}).get("epochs") or summary.get("epochs") or 0)
    if isinstance(spec, dict) and spec.get("kind") == "time":
        return None
    machines = max(1, int(summary.get("workers", 1)) // int(network.get("workers_per_node", 1)))
    table = congestion_from_spec(spec, machines, epochs).epoch_table_ms(epochs)
    return [{n: d for n, d in delays.items() if d > 0} for delays in table]


def epoch_delays_ms(summary: dict) -> list[float]:
    """The largest injected one-way delay (ms) per configured epoch of the run's network;
    NaN for time-based schedules (no per-epoch table)."""
    table = epoch_node_delays_ms(summary)
    if table is None:
        epochs = int((summary.get("training") or {}).get("epochs") or summary.get("epochs")
                     or 0)
        return [math.nan] * epochs
    return [max(delays.values(), default=0.0) for delays in table]


def _kind(summary: dict) -> str | None:
    """``controller`` for a dqn/heuristic GreenDyGNN run, ``rapidgnn``, or None."""
    if summary.get("base_system") == "rapidgnn":
        return "rapidgnn"
    controller = (summary.get("system_options") or {}).get("controller")
    if summary.get("base_system") == "greendygnn" and controller in CONTROLLERS:
        return str(controller)
    return None


def load(inputs: list[Path]) -> pd.DataFrame:
    """One row per epoch of every dqn/heuristic GreenDyGNN run, and of every RapidGNN run
    with the dataset and network of one of them (directories without a summary skipped)."""
    runs = []
    for directory in map(Path, inputs):
        path = directory / "summary.json"
        if not path.is_file() or not (directory / "epochs.jsonl").is_file():
            continue
        summary = json.loads(path.read_text())
        kind = _kind(summary)
        if kind is not None:
            runs.append((directory, summary, kind))
    cells = {(s.get("dataset"), s.get("network")) for _, s, k in runs if k != "rapidgnn"}
    rows = []
    for directory, summary, kind in runs:
        if kind == "rapidgnn" and (summary.get("dataset"), summary.get("network")) not in cells:
            continue
        delays = epoch_delays_ms(summary)
        for line in (directory / "epochs.jsonl").read_text().splitlines():
            epoch = json.loads(line)
            e = int(epoch["epoch"])
            hits, misses = epoch.get("cache_hits", 0), epoch.get("cache_misses", 0)
            rows.append({
                "run": "/".join(directory.parts[-4:]), "system": summary.get("system"),
                "network": summary.get("network"), "epoch": e,
                "mean_window": epoch.get("mean_window", math.nan),
                "hit_rate": hits / (hits + misses) if hits + misses else math.nan,
                "max_delay_ms": delays[e] if e < len(delays) else math.nan,
                "_kind": kind, "_seed": summary.get("seed"),
                "_dataset": summary.get("dataset")})
    return pd.DataFrame(rows, columns=[*COLUMNS, "_kind", "_seed", "_dataset"])


def _label(curve: pd.DataFrame) -> str:
    first = curve.iloc[0]
    return f"{first['system']} ({first['_dataset']}, {first['network']}, s{first['_seed']})"


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    rows = load(inputs)
    if rows.empty:
        fig, ax = plt.subplots(figsize=(6, 3))
        ax.axis("off")
        ax.text(0.5, 0.5, "no data: no GreenDyGNN dqn/heuristic runs", ha="center",
                va="center", transform=ax.transAxes)
        ax.set_title("Window controller under congestion (target time)")
        save_figure(fig, out_png)
        return pd.DataFrame(columns=COLUMNS)
    rows = rows.sort_values(["_kind", "run", "epoch"], kind="stable")
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
    controlled = rows[rows["_kind"] != "rapidgnn"]
    for _run, curve in controlled.groupby("run", sort=False):
        top.plot(curve["epoch"], curve["mean_window"], marker=".", label=_label(curve))
    top.set_yscale("log", base=2)
    top.set_ylabel("mean window W")
    top.set_title("Mean window per epoch (shaded: congested epochs)", fontsize=9)
    # The congestion of each network the runs used (one line per distinct table).
    delays = controlled.drop_duplicates(["network", "epoch"])[["network", "epoch",
                                                              "max_delay_ms"]]
    twin = top.twinx()
    for network, table in delays.groupby("network", sort=True):
        twin.step(table["epoch"], table["max_delay_ms"], where="mid", linestyle="--",
                  color="grey", alpha=0.8, label=f"delay ({network})")
        for e in table.loc[table["max_delay_ms"] > 0, "epoch"]:
            top.axvspan(e - 0.5, e + 0.5, color="tab:red", alpha=0.08, linewidth=0)
    twin.set_ylabel("max one-way delay, ms (target)")
    twin.set_ylim(bottom=0)
    handles = [h for ax in (top, twin) for h in ax.get_legend_handles_labels()[0]]
    labels = [lab for ax in (top, twin) for lab in ax.get_legend_handles_labels()[1]]
    top.legend(handles, labels, fontsize="x-small")
    for _run, curve in rows.groupby("run", sort=False):
        bottom.plot(curve["epoch"], curve["hit_rate"], marker=".", label=_label(curve))
    bottom.set_xlabel("epoch")
    bottom.set_ylabel("cache hit rate")
    bottom.set_ylim(-0.02, 1.02)
    bottom.set_title("Cache hit rate per epoch", fontsize=9)
    bottom.legend(fontsize="x-small")
    fig.tight_layout()
    save_figure(fig, out_png)
    return rows[COLUMNS].reset_index(drop=True)
