"""The workload side of GreenDyGNN's calibration (Algorithm 1): hit rates, fills and
selection time for every window size and allocation template, measured exactly on the
presampled batches of the real workload.

For each worker ``r``, window ``W`` and template (uniform, or biased toward one remote
owner), the run's step sequence (the first ``epochs`` presampled epochs, windows crossing
epochs as in :mod:`commgnn.systems.greendygnn.system`) is cut into windows of ``W`` steps; each
window's cache is chosen with the system's own :func:`select_window_nodes` (cost weights
1), then every batch of the window is resolved against it. Per owner ``o`` this gives

- ``remote[r][o]``: remote input rows per batch owned by ``o``;
- ``hits[r][w][t][o]``: of those, rows the window's cache holds (per batch);
- ``fill[r][w][t][o]``: rows a window's build pulls from ``o`` (the rows not already in
  the previous window's cache; per window);
- ``select_s[w]``: wall seconds to read a window's batches and choose its rows (the
  builder's work besides the pulls), per window, averaged over workers.

These are exact counts of what the system would fetch, not a fitted curve;
:func:`fit_hit_curve` fits GreenDyGNN's logistic decay (Eq. 2) to them for the report.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy.optimize import OptimizeWarning, curve_fit

from commgnn.sampling.presample import open_presampled, read_presample_meta
from commgnn.systems.greendygnn.controller import BIAS_SHARE, WINDOWS
from commgnn.systems.greendygnn.system import select_window_nodes


def _remote_batches(presample_dir: Path, rank: int, epochs: int) -> list[np.ndarray]:
    out = []
    for epoch in range(epochs):
        with open_presampled(presample_dir, rank, epoch) as reader:
            out.extend(reader.read(s).remote_nodes.astype(np.int64) for s in range(len(reader)))
    return out


def templates(rank: int, world: int) -> list[int | None]:
    """The allocation templates of worker ``rank``: uniform, then a bias toward each
    remote owner (the order of :func:`commgnn.systems.greendygnn.controller.actions`)."""
    return [None, *[o for o in range(world) if o != rank]]


def window_tables(presample_dir: str | Path, owner: np.ndarray, *, capacity: int,
                  epochs: int = 1, windows: Sequence[int] = WINDOWS) -> dict:
    """The tables of the module docstring for every worker of the presample."""
    presample_dir = Path(presample_dir)
    meta = read_presample_meta(presample_dir)
    world = int(meta["num_workers"])
    epochs = min(int(epochs), int(meta["params"]["epochs"]))
    owner = np.asarray(owner, dtype=np.int64)
    remote, hits, fill, select = [], [], [], np.zeros(len(windows))
    for rank in range(world):
        batches = _remote_batches(presample_dir, rank, epochs)
        by_owner = [np.bincount(owner[b], minlength=world) for b in batches]
        remote.append((np.mean(by_owner, axis=0) if by_owner else np.zeros(world)).tolist())
        rank_hits, rank_fill = [], []
        for wi, window in enumerate(windows):
            w_hits, w_fill = [], []
            for bias in templates(rank, world):
                reserved = {} if bias is None else {bias: BIAS_SHARE}
                h, f, seconds = _simulate(batches, owner, world, capacity, window, reserved)
                w_hits.append(h)
                w_fill.append(f)
                if bias is None:
                    select[wi] += seconds / world
            rank_hits.append(w_hits)
            rank_fill.append(w_fill)
        hits.append(rank_hits)
        fill.append(rank_fill)
    return {"workers": world, "epochs": epochs, "capacity": int(capacity),
            "windows": list(windows), "remote_per_batch": remote,
            "hits_per_batch": hits, "fill_rows_per_window": fill,
            "select_s": select.tolist()}


def _simulate(batches: list[np.ndarray], owner: np.ndarray, world: int, capacity: int,
              window: int, reserved: dict[int, float]) -> tuple[list, list, float]:
    """Per-owner cache hits per batch, rows pulled per window, and selection seconds per
    window, for one worker's batch sequence cut into windows of ``window`` steps."""
    hits = np.zeros(world)
    pulled = np.zeros(world)
    previous = np.empty(0, dtype=np.int64)
    seconds, n_windows = 0.0, 0
    for start in range(0, len(batches), window):
        chunk = batches[start:start + window]
        t0 = time.perf_counter()
        cached = select_window_nodes(chunk, owner, capacity, reserved)
        seconds += time.perf_counter() - t0
        n_windows += 1
        new = cached[~np.isin(cached, previous, assume_unique=True)]
        pulled += np.bincount(owner[new], minlength=world)
        for nodes in chunk:
            hit = nodes[np.isin(nodes, cached)]
            hits += np.bincount(owner[hit], minlength=world)
        previous = cached
    n = max(1, len(batches))
    return (hits / n).tolist(), (pulled / max(1, n_windows)).tolist(), \
        seconds / max(1, n_windows)


def hit_rates(tables: dict, rank: int | None = None) -> np.ndarray:
    """Uniform-template hit rate per window (all workers pooled, or worker ``rank``)."""
    ranks = range(tables["workers"]) if rank is None else [rank]
    hit = np.array([[sum(tables["hits_per_batch"][r][wi][0]) for r in ranks]
                    for wi in range(len(tables["windows"]))]).sum(axis=1)
    total = sum(sum(tables["remote_per_batch"][r]) for r in ranks)
    return hit / total if total else np.ones(len(tables["windows"]))


def logistic(log2_window: np.ndarray, h_lo: float, h_hi: float, slope: float,
             centre: float) -> np.ndarray:
    """GreenDyGNN Eq. 2 (reconstructed): ``h(W) = h_lo + (h_hi − h_lo) /
    (1 + exp(slope · (log2 W − centre)))`` — a logistic decay in log2 W."""
    return h_lo + (h_hi - h_lo) / (1.0 + np.exp(slope * (log2_window - centre)))


def fit_hit_curve(windows: Sequence[int], rates: Sequence[float]) -> dict:
    """Least-squares fit of :func:`logistic` to measured hit rates; with its residuals."""

    x = np.log2(np.asarray(windows, dtype=float))
    y = np.asarray(rates, dtype=float)
    p0 = [float(y.min()), float(y.max()), 1.0, float(np.median(x))]
    try:
        with warnings.catch_warnings():
            # no more windows than parameters: the covariance (unused here) is undefined
            warnings.simplefilter("ignore", OptimizeWarning)
            params, _ = curve_fit(logistic, x, y, p0=p0, maxfev=20000)
    except (RuntimeError, ValueError, TypeError):  # too few or flat points: a constant
        params = np.array([y.mean(), y.mean(), 0.0, 0.0])
    pred = logistic(x, *params)
    return {"h_lo": float(params[0]), "h_hi": float(params[1]), "slope": float(params[2]),
            "centre": float(params[3]), "max_abs_error": float(np.max(np.abs(pred - y))),
            "predicted": pred.tolist()}


def fit_power(windows: Sequence[int], seconds: Sequence[float]) -> dict:
    """``T(W) = a · W^b`` by least squares in log space (GreenDyGNN: rebuild time grows
    sublinearly, ``b < 1``); with its relative residuals."""
    x = np.log(np.asarray(windows, dtype=float))
    y = np.asarray(seconds, dtype=float)
    ok = y > 0
    if ok.sum() < 2:
        return {"a": float(y.mean()) if y.size else 0.0, "b": 0.0, "max_rel_error": math.nan}
    b, log_a = np.polyfit(x[ok], np.log(y[ok]), 1)
    pred = np.exp(log_a) * np.exp(b * x)
    return {"a": float(np.exp(log_a)), "b": float(b),
            "max_rel_error": float(np.max(np.abs(pred[ok] - y[ok]) / y[ok]))}
