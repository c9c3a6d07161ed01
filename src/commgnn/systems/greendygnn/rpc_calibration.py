"""GreenDyGNN's RPC cost calibration (§IV-B, Algorithm 1, Eq. 4), on real processes.

Eq. 4 models one feature-fetch round trip carrying ``b = N·F_b`` response bytes under a
congestion delay ``δ``::

    T = α + β·b + κ·δ + γ·b·δ_ms          (target seconds; δ in s, δ_ms in ms)

The paper reports fitting α, β and γ but its copy (``shared/papers/greendygnn.txt``,
§IV-B) leaves their values blank: no value here is the paper's. ``κ`` (``delay_coef``)
is the coefficient on the delay itself, ≈ 1 on our emulator, which pays the injected
one-way delay once per round trip (:mod:`commgnn.network.netem`).

:func:`measure_rpc` measures real round trips: two spawned processes
(:func:`commgnn.runtime.launcher.launch`), TensorPipe RPC, rank 1 owning random float32
feature rows, rank 0 pulling them with :meth:`commgnn.runtime.feature_store.FeatureStore.pull`
— the exact path training fetches take — on the emulated network the training loop
builds (:func:`commgnn.network.netem.network_from_spec`), with each grid delay injected on
the owner's machine (an ``epochs`` congestion schedule whose epoch ``i`` is the ``i``-th
grid point, selected with ``set_epoch``). Every (rows, delay) point gets one untimed
warm-up pull, then ``repeats`` timed pulls; the grid is visited in a seeded random
order so slow drift (thermal, background load) does not correlate with a parameter.
Round trips are recorded in target seconds (wall ÷ time dilation ``f``).

What the emulator charges (see ``NetworkEmulator.request_cost_s``: a TCP flow limited by
its window ``W``, :mod:`commgnn.network.netem`)::

    rtt = f · [α_emu + lat_up + lat_down + δ + (req + resp) / min(bw, W / RTT)],
    RTT = lat_up + lat_down + δ

Eq. 4 is linear in the bytes and the delay; this is not (the link sets the pace below
``RTT = W / bw``, the window above it, where the bytes cost ``b·(RTT₀ + δ)/W``: a
``γ = 1e-3/W`` s/byte/ms). What the model implies for Eq. 4 is therefore the fit of Eq. 4
to the model's own round trips on the same grid (:func:`implied_fit`, noise free, the
same weighting): a calibration recovers α, β, γ and κ when its fit of the measured round
trips matches that one. With no window limit (``tcp_window_bytes: null``) the model is
Eq. 4 exactly, with ``α = α_emu + lat_up + lat_down``, ``β = (1/bw)·(1 + req/resp)`` — the
request carries 8 id bytes per row, i.e. ``req/resp = 8 / row_bytes`` — ``γ = 0`` and
``κ = 1``; with every delay past the crossover, ``β = (RTT₀/W)·(1 + req/resp)``, ``γ =
(1e-3/W)·(1 + req/resp)`` and ``κ = 1``.

Software overhead and time dilation: the real RPC (serialising, TensorPipe, the owner's
``index_select``) takes ~0.3–1 ms of wall time on a CPU host. ``FeatureStore.pull``
issues the RPC *before* it waits for the emulated round trip, so the real RPC runs under
the emulated wait and only what is not hidden shows in the measurement: the issue and
completion bookkeeping around the wait (~0.5 ms wall measured here), plus any part of
the RPC that outlasts the dilated charge. Dividing wall time by ``f`` divides that
residue by ``f`` too, while the emulated costs come out exact: at ``f = 20`` it adds
~0.03 ms (< 1%) to an α of a few ms. The same holds for the host's scheduling noise — a thread
woken late from its wait by a busy CPU (up to a scheduler tick, ~4 ms wall, when other
processes hold the cores) — which :func:`fit_rpc` further suppresses by fitting the
fastest repeat of each grid point. Nothing here corrects for either explicitly.

:func:`fit_rpc` is a weighted linear least-squares fit. Residuals are weighted by
``1/T_measured`` (a relative fit: minimising Σ((pred − meas)/meas)²), because round
trips span an order of magnitude (a few ms clean and small to ~60 ms congested and
large) and an unweighted fit would let the largest ones set α, which only the small
ones resolve; timing noise relative to the round trip is also closer to constant than
absolute noise.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from commgnn.core.files import write_json_atomic
from commgnn.network.netem import network_from_spec
from commgnn.runtime.launcher import bind_interface, launch, rendezvous_store, rpc_init_method

__all__ = ["RpcFit", "calibrate_rpc", "fit_rpc", "implied_fit", "measure_rpc",
           "model_points"]

#: Owner and requester ranks of the calibration pair.
REQUESTER, OWNER = 0, 1
#: Network-spec keys :func:`measure_rpc` replaces or drops (it sets its own congestion and
#: dilation, and puts the two workers on separate machines).
_DROPPED_KEYS = ("congestion", "congested_traffic", "time_dilation", "reference_step_ms",
                 "workers_per_node")
_POINT_KEYS = ("rows", "bytes", "delay_ms", "rtt_s")


@dataclass(frozen=True)
class RpcFit:
    """Eq. 4's parameters, ``T = α + β·b + κ·δ_s + γ·b·δ_ms`` (target seconds)."""

    alpha_s: float  # fixed cost per request (target s)
    beta_s_per_byte: float
    gamma_s_per_byte_ms: float
    delay_coef: float  # κ, on δ in seconds (≈ 1 on our emulator: δ paid once per round trip)
    residual_rel_mean: float  # mean |pred - meas| / meas over the fitted points
    residual_rel_max: float

    def predict(self, response_bytes: Any, delay_ms: Any) -> float | np.ndarray:
        """Round trip (target s) of ``response_bytes`` under ``delay_ms`` (broadcasting)."""
        b = np.asarray(response_bytes, dtype=float)
        d = np.asarray(delay_ms, dtype=float)
        t = (self.alpha_s + self.beta_s_per_byte * b + self.delay_coef * d / 1e3
             + self.gamma_s_per_byte_ms * b * d)
        return float(t) if np.ndim(t) == 0 else t

    def to_dict(self) -> dict[str, float]:
        return {k: float(v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RpcFit:
        return cls(**{f.name: float(d[f.name]) for f in fields(cls)})


def fit_rpc(points: Sequence[Mapping[str, Any]], *, reduce: str = "min") -> RpcFit:
    """Fit Eq. 4 to ``points`` (``{"bytes", "delay_ms", "rtt_s"}``, rtt in target s).

    ``reduce`` first combines the repeats of each (bytes, delay) point: ``"min"``
    (default), ``"median"``, ``"mean"``, or ``"none"`` (fit every pull). The minimum is
    the default because the noise of a round trip on a shared CPU is one-sided: the
    emulator's waits never end early, while a busy host wakes the waiting thread late —
    by a scheduler tick (~4 ms wall) when other processes hold both cores — so the
    fastest repeat is the one least contaminated by the host (see the module doc).

    Then relative least squares (each residual weighted by ``1/rtt``, see the module doc)
    over ``[1, b, δ_s, b·δ_ms]``, with the columns scaled to unit size before ``lstsq``
    (they span ~10 orders of magnitude). The residuals reported are those of the fitted
    (reduced) points. Raises :class:`ValueError` with fewer than 4 distinct (bytes,
    delay) points, when they do not determine all four parameters (e.g. a single delay or
    a single payload size), or on a non-positive round trip.
    """
    reducers = {"min": np.min, "median": np.median, "mean": np.mean, "none": None}
    if reduce not in reducers:
        raise ValueError(f"fit_rpc: reduce must be one of {sorted(reducers)}, got {reduce!r}")
    if not points:
        raise ValueError("fit_rpc: no points")
    groups: dict[tuple[float, float], list[float]] = {}
    for p in points:
        groups.setdefault((float(p["bytes"]), float(p["delay_ms"])), []).append(float(p["rtt_s"]))
    if len(groups) < 4:
        raise ValueError(f"fit_rpc needs >= 4 distinct (bytes, delay) points, got {len(groups)}")
    red = reducers[reduce]
    rows = [(b, d, t) for (b, d), ts in groups.items()
            for t in (ts if red is None else [float(red(ts))])]
    b, d_ms, t = (np.array(col, dtype=float) for col in zip(*rows, strict=True))
    if not (np.all(np.isfinite(t)) and np.all(t > 0)):
        raise ValueError("fit_rpc: round trips must be finite and > 0")
    X = np.column_stack([np.ones_like(b), b, d_ms / 1e3, b * d_ms])
    scale = np.abs(X).max(axis=0)
    scale[scale == 0] = 1.0
    w = 1.0 / t
    A = X / scale * w[:, None]
    if np.linalg.matrix_rank(A) < 4:
        raise ValueError("fit_rpc: the points do not determine α, β, κ and γ (need at "
                         "least two payload sizes and two delays, crossed)")
    coef, *_ = np.linalg.lstsq(A, t * w, rcond=None)
    alpha, beta, kappa, gamma = (coef / scale).tolist()
    rel = np.abs(X @ (coef / scale) - t) / t
    return RpcFit(alpha_s=alpha, beta_s_per_byte=beta, gamma_s_per_byte_ms=gamma,
                  delay_coef=kappa, residual_rel_mean=float(rel.mean()),
                  residual_rel_max=float(rel.max()))


def _network_spec(network: str | Mapping[str, Any] | None,
                  delays_ms: Sequence[float]) -> dict[str, Any]:
    """``network`` for the calibration pair: its links (per-link overrides between
    workers 0 and 1 only), one worker per machine, and an ``epochs`` congestion schedule
    whose epoch ``i`` delays the owner's machine by ``delays_ms[i]`` (all traffic)."""
    if network is None:
        network = "none"
    spec: dict[str, Any] = ({"preset": network} if isinstance(network, str)
                            else {k: v for k, v in network.items() if k not in _DROPPED_KEYS})
    if spec.get("links"):
        spec["links"] = [lk for lk in spec["links"]
                         if int(lk["src"]) < 2 and int(lk["dst"]) < 2]
    spec["congestion"] = {"kind": "epochs", "applies_to": "all",
                          "table": {i: {OWNER: float(d)} for i, d in enumerate(delays_ms)}}
    return spec


def _rpc_worker(env: Any, job_json: str, out_path: str) -> None:
    """One calibration worker (module level: spawned processes unpickle it by name)."""
    import torch  # deferred: imports torch
    from torch.distributed import rpc  # deferred: imports torch

    # deferred: imports torch
    from commgnn.runtime.feature_store import ID_BYTES, FeatureStore, worker_name

    job = json.loads(job_json)
    torch.set_num_threads(1)
    delays = [float(x) for x in job["delays_ms"]]
    emulator = network_from_spec(job["spec"], env.world_size)
    emulator.set_time_dilation(job["time_dilation"])
    f = emulator.time_dilation
    total = max(int(r) for r in job["rows_grid"])
    dim = int(job["feature_dim"])
    gen = torch.Generator().manual_seed(int(job["seed"]))
    rows = (torch.rand((total, dim), generator=gen) if env.rank == OWNER
            else torch.empty((0, dim)))
    owner = np.full(total, OWNER, dtype=np.int64)
    store = FeatureStore(env.rank, owner, np.arange(total, dtype=np.int64), rows, emulator,
                         float(job["rpc_timeout_s"]), table="rpc_calibration")
    # RPC rendezvouses through the run's store, served on master_addr only, and TensorPipe
    # listens on the interface that holds it.
    bind_interface(env, None)
    c10d_store = rendezvous_store(env, float(job["rpc_timeout_s"]))
    options = rpc.TensorPipeRpcBackendOptions(
        init_method=rpc_init_method(c10d_store),
        rpc_timeout=float(job["rpc_timeout_s"]), num_worker_threads=4)
    rpc.init_rpc(worker_name(env.rank), rank=env.rank, world_size=env.world_size,
                 rpc_backend_options=options)
    try:
        if env.rank == REQUESTER:
            points = []
            rng = np.random.default_rng(int(job["seed"]))
            for order, (n, epoch) in enumerate(job["order"]):
                emulator.set_epoch(epoch)
                for rep in range(int(job["repeats"]) + 1):
                    nodes = torch.from_numpy(rng.choice(total, size=n, replace=False))
                    got, counts = store.pull({OWNER: nodes})
                    if got[OWNER].shape != (n, dim):
                        raise RuntimeError(f"pulled {tuple(got[OWNER].shape)}, want {(n, dim)}")
                    if rep == 0:
                        continue  # warm-up
                    wall = counts.rtt_s[OWNER]
                    points.append({"rows": n, "bytes": counts.remote_bytes,
                                   "request_bytes": n * ID_BYTES, "delay_ms": delays[epoch],
                                   "rtt_s": wall / f, "wall_s": wall, "order": order,
                                   "repeat": rep - 1})
            write_json_atomic(Path(out_path), {"points": points,
                                               "network": emulator.describe()})
    except BaseException:
        rpc.shutdown(graceful=False)
        raise
    rpc.shutdown(graceful=True)  # the owner serves until the requester is done


def measure_rpc(network: str | Mapping[str, Any] | None, *, rows_grid: Sequence[int],
                delays_ms: Sequence[float], repeats: int, feature_dim: int,
                time_dilation: float = 1.0, seed: int = 0,
                rpc_timeout_s: float = 60.0) -> list[dict]:
    """Real round trips over ``rows_grid × delays_ms`` (see the module doc).

    Returns one point per timed pull: ``rows``, ``bytes`` (response), ``request_bytes``,
    ``delay_ms``, ``rtt_s`` (target s), ``wall_s``, ``order`` (visit index of the grid
    point) and ``repeat``. ``network`` is a preset name or a ``network_from_spec``
    mapping; its congestion, dilation and ``workers_per_node`` are replaced.
    """

    rows_grid = [int(r) for r in rows_grid]
    delays = [float(d) for d in delays_ms]
    if not rows_grid or min(rows_grid) < 1:
        raise ValueError(f"rows_grid must be positive row counts, got {rows_grid}")
    if not delays or min(delays) < 0 or not all(map(math.isfinite, delays)):
        raise ValueError(f"delays_ms must be finite and >= 0, got {delays}")
    if int(repeats) < 1 or int(feature_dim) < 1:
        raise ValueError("repeats and feature_dim must be >= 1")
    grid = [(n, e) for n in rows_grid for e in range(len(delays))]
    perm = np.random.default_rng(seed).permutation(len(grid))
    job = {"spec": _network_spec(network, delays), "rows_grid": rows_grid,
           "delays_ms": delays, "order": [list(grid[i]) for i in perm],
           "repeats": int(repeats), "feature_dim": int(feature_dim),
           "time_dilation": float(time_dilation), "seed": int(seed),
           "rpc_timeout_s": float(rpc_timeout_s)}
    with tempfile.TemporaryDirectory(prefix="commgnn-rpc-cal-") as tmp:
        out = os.path.join(tmp, "points.json")
        launch(_rpc_worker, (json.dumps(job), out), 2)
        return json.loads(Path(out).read_text())["points"]


def model_points(network: str | Mapping[str, Any] | None, *, rows_grid: Sequence[int],
                 delays_ms: Sequence[float], feature_dim: int,
                 **_ignored: Any) -> list[dict]:
    """The round trips (target s) the emulator's model charges on idle links for the
    grid :func:`measure_rpc` visits: one point per (rows, delay), computed, not timed.
    Other keyword arguments of :func:`measure_rpc` (repeats, dilation, seed) are
    accepted and ignored: the model's target seconds do not depend on them."""
    from commgnn.runtime.feature_store import ID_BYTES  # deferred: imports torch

    delays = [float(d) for d in delays_ms]
    emulator = network_from_spec(_network_spec(network, delays), 2)
    row_bytes = 4 * int(feature_dim)  # float32 rows, as measure_rpc's
    return [{"rows": int(n), "bytes": int(n) * row_bytes, "delay_ms": d,
             "rtt_s": emulator.request_cost_s(REQUESTER, OWNER, int(n) * ID_BYTES,
                                              int(n) * row_bytes, epoch=i)}
            for n in rows_grid for i, d in enumerate(delays)]


def implied_fit(network: str | Mapping[str, Any] | None, **grid: Any) -> RpcFit:
    """Eq. 4 fitted to :func:`model_points`: the α, β, γ, κ the link model implies on
    this grid (see the module doc), what a calibration should recover."""
    return fit_rpc(model_points(network, **grid), reduce="none")


def calibrate_rpc(network: str | Mapping[str, Any] | None, *, reduce: str = "min",
                  **grid: Any) -> dict:
    """:func:`measure_rpc` then :func:`fit_rpc`: ``{"fit", "implied", "points",
    "network", "grid", "reduce"}`` (``implied``: :func:`implied_fit` on the same grid;
    ``grid``: the keyword arguments given to :func:`measure_rpc`; ``reduce``: how
    :func:`fit_rpc` combined the repeats)."""
    points = measure_rpc(network, **grid)
    fit = fit_rpc(points, reduce=reduce)
    net = network if isinstance(network, str) or network is None else dict(network)
    return {"fit": fit.to_dict(), "implied": implied_fit(network, **grid).to_dict(),
            "points": points, "network": net, "grid": dict(grid), "reduce": reduce}
