"""``greendygnn``: window-based cache rebuilds under congestion, with per-owner cost
weights (GreenDyGNN §IV–V).

The run's steps form one sequence across epochs (global step ``g = epoch · steps +
step``) cut into *windows*: window ``k`` covers ``W_k`` steps starting where window
``k − 1`` ended, so windows cross epoch boundaries. Each window has its own cache of at
most ``K = cache_rows`` remote feature rows, chosen from the presampled blocks (the ones
``rapidgnn`` reads, ``needs: presample``) of exactly the window's batches:

- every remote input node of the window's batches is counted once per batch, and its
  count weighted by its owner's cost weight ``w_owner`` (the decision's; 1 without);
- the top ``K`` by weighted count are cached (ties by node id) — under the *biased*
  template, 60 % of ``K`` is first reserved for the designated owner's most accessed
  nodes (as many as it has) and the rest filled by weighted count; the *uniform*
  template reserves nothing (the paper's "uniform cache allocation instead of per-owner
  cost weighting" is the uniform template with every weight 1: the window's plain top K);
- rows already in the previous window's cache are copied from it, the others pulled with
  one bulk request per owner (:meth:`FeatureStore.fetch_remote`).

Three stages run beside the trainer (§V-A): a **loader** (a
:class:`~commgnn.dist.prefetch.Prefetcher` reading the presampled batches ahead), the
**cache builder** (:class:`WindowBuffers`: one thread builds the *pending* buffer while
the *active* one serves; a swap waits for the build to finish, so a half-built buffer is
never served) and the **resolver** (a second prefetcher, ``prefetch_depth`` batches
ahead, that assembles each batch from the active buffer and fetches the misses, one
request per owner, recording each owner's round trip for the congestion estimator).

When the resolver reaches the first step of window ``k`` it swaps window ``k``'s buffer
in, asks the controller (:mod:`commgnn.control.controller`: ``static``, ``heuristic`` or
``dqn``, a policy trained in the calibrated simulator) for window ``k + 1`` — its size
and template, from the 23-float state — and starts building it. What a run fetches
therefore depends only on the configuration, the seed and the controller's decisions;
with ``static`` it is a function of the configuration alone. Every step record names its
window (``window``, ``window_index``, ``bias_owner``) and the inferred delay; each
window's build is counted in the epoch whose resolver swapped it in
(``extra_remote_*``).

Resume: the checkpoint holds the active and the pending window's decisions, the
estimator and the controller; the first epoch after a resume rebuilds those two buffers
(the active one's fill is then counted a second time, in that epoch).

Accounting: a window's build usually runs during the previous window, possibly in the
previous epoch (or while that epoch evaluates); its rows, RPCs and CPU energy are counted
(``extra_remote_*``, ``fill_rows``) in the epoch that swaps it in, while its link seconds
and bytes (``network_fetch_*``, from the emulator) fall in the epoch in which they were
sent. The neighbour-list traffic of sampling was paid by ``presample`` and is reported as
``presample_sampling_*`` (as ``rapidgnn`` does), not in the steps' energy.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from commgnn.config import ConfigError
from commgnn.control.controller import (
    WINDOWS,
    ControllerState,
    WindowDecision,
    make_controller,
)
from commgnn.control.estimator import CongestionEstimator
from commgnn.control.policy import check_pipeline_policy
from commgnn.dist.feature_store import FetchCounts
from commgnn.dist.placement import carry_device
from commgnn.dist.prefetch import Prefetcher
from commgnn.sampling.blockio import BlockReader, PresampledBatch
from commgnn.sampling.presample import check_presample, check_run_presample, open_presampled
from commgnn.systems.base import PreparedBatch, System


def select_window_nodes(remote_ids: list[np.ndarray], owner: np.ndarray, capacity: int,
                        reserved: dict[int, float] | None = None,
                        weights: dict[int, float] | None = None) -> np.ndarray:
    """The cache content of one window: at most ``capacity`` node ids, sorted.

    ``remote_ids`` are the remote input nodes of each of the window's batches (each node
    once per batch); ``reserved`` the share of ``capacity`` set aside per owner for its
    most accessed nodes (:meth:`WindowDecision.reserved`: the biased template's 60 %);
    ``weights`` the per-owner cost weights (default 1) the rest is ranked by. See the
    module docstring.
    """
    if capacity <= 0 or not remote_ids:
        return np.empty(0, dtype=np.int64)
    ids, counts = np.unique(np.concatenate(remote_ids).astype(np.int64), return_counts=True)
    if ids.size <= capacity:
        return ids
    owners = owner[ids]
    taken = np.zeros(ids.size, dtype=bool)
    for o, share in sorted((reserved or {}).items()):
        pos = np.flatnonzero(owners == o)
        quota = math.floor(share * capacity + 1e-9)
        if pos.size and quota:
            taken[pos[np.lexsort((ids[pos], -counts[pos]))[:quota]]] = True
    left = capacity - int(taken.sum())
    if left > 0:
        rest = np.flatnonzero(~taken)
        w = weights or {}
        score = counts[rest] * np.array([w.get(int(o), 1.0) for o in owners[rest]])
        taken[rest[np.lexsort((ids[rest], -score))[:left]]] = True
    return ids[taken]


def lookup(ids: torch.Tensor, nodes: torch.Tensor) -> torch.Tensor:
    """Slot of each of ``nodes`` in the sorted ``ids`` (-1 where absent)."""
    if ids.numel() == 0:
        return torch.full_like(nodes, -1)
    pos = torch.searchsorted(ids, nodes).clamp_(max=ids.numel() - 1)
    return torch.where(ids[pos] == nodes, pos, torch.full_like(pos, -1))


@dataclass
class WindowCache:
    """One window's buffer: the rows of ``ids`` (sorted; slot = position) and its
    decision."""

    index: int
    start: int  # first global step
    decision: WindowDecision
    ids: torch.Tensor
    rows: torch.Tensor
    fill: FetchCounts = field(default_factory=FetchCounts)
    copied_rows: int = 0
    build_s: float = 0.0

    @property
    def end(self) -> int:
        return self.start + self.decision.window

    def slots(self, nodes: torch.Tensor) -> torch.Tensor:
        """Slot of each of ``nodes`` (-1 where not cached)."""
        return lookup(self.ids, nodes)

    @property
    def nbytes(self) -> int:
        return self.rows.numel() * self.rows.element_size()


class WindowBuffers:
    """Active and pending buffers; the pending one is built on a background thread.

    :meth:`swap` waits for the build (never serves a half-built buffer) and re-raises a
    builder error on the caller's thread."""

    def __init__(self) -> None:
        self.active: WindowCache | None = None
        self._pending: WindowCache | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self.waited_s = 0.0  # time swaps spent waiting for a build

    @property
    def building(self) -> bool:
        return self._thread is not None

    def build_async(self, build: Callable[[], WindowCache]) -> None:
        if self._thread is not None:
            raise RuntimeError("a pending buffer is already being built")

        def run() -> None:
            try:
                self._pending = build()
            except BaseException as exc:  # re-raised by swap()
                self._error = exc

        self._pending, self._error = None, None
        self._thread = threading.Thread(target=carry_device(run), name="greendygnn-builder",
                                        daemon=True)
        self._thread.start()

    def swap(self) -> WindowCache:
        """Make the pending buffer active once its build has finished; return it."""
        if self._thread is None:
            raise RuntimeError("no pending buffer to swap in")
        start = time.perf_counter()
        self._thread.join()
        self.waited_s += time.perf_counter() - start
        self._thread = None
        if self._error is not None:
            raise RuntimeError("building the pending cache buffer failed") from self._error
        assert self._pending is not None
        self.active, self._pending = self._pending, None
        return self.active

    def close(self) -> None:
        """Wait for a build under way (its result, or error, is dropped: nothing will
        be served from it)."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None


@dataclass
class _WindowStats:
    """What happened since the last boundary (the controller's observation)."""

    hits: dict[int, int] = field(default_factory=dict)
    remote: dict[int, int] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)


class GreenDyGNNSystem(System):
    name = "greendygnn"
    colour = "#44AA99"
    figure_labels = "GreenDyGNN"
    options = {
        "controller": {"enum": ["static", "heuristic", "dqn"], "default": "static",
                       "description": "who picks each window: static (fixed W, uniform), "
                                      "heuristic (the paper's threshold rule, Eq. 7) or dqn "
                                      "(a trained policy; the heuristic without one)"},
        "policy": {"type": ["string", "null"], "default": None,
                   "description": "dqn: a policy.pt file (default: the pipeline's "
                                  "train_policy output for this run's workload)"},
        "window": {"enum": list(WINDOWS), "default": 16,
                   "description": "W for static, the nominal W_0 for heuristic"},
        "cache_rows": {"type": "integer", "minimum": 0, "default": 100000,
                       "description": "K, rows per window cache"},
        "cost_weights": {"type": "boolean", "default": True,
                         "description": "per-owner cost weights and biased templates "
                                        "(false: the paper's 'w/o Cost Weights')"},
        "delay_threshold_ms": {"type": "number", "exclusiveMinimum": 0, "default": 4.0,
                               "description": "heuristic: inferred delay that halves W"},
        "warmup_epochs": {"type": "integer", "minimum": 1, "default": 2,
                          "description": "epochs that set the congestion baseline"},
        "recent_rtts": {"type": "integer", "minimum": 1, "default": 30,
                        "description": "round trips per owner in the estimator's median"},
        "prefetch_depth": {"type": "integer", "minimum": 1, "maximum": 1024, "default": 4,
                           "description": "resolver queue: batches assembled ahead"},
        "loader_depth": {"type": "integer", "minimum": 1, "maximum": 4096, "default": 8,
                         "description": "loader queue: presampled batches read ahead"},
    }
    needs = ("presample",)

    @classmethod
    def wants(cls, options: dict) -> tuple[str, ...]:
        """A ``dqn`` run without its own ``policy`` also gets the pipeline's policy."""
        if options.get("controller") == "dqn" and not options.get("policy"):
            return (*cls.needs, "policy")
        return cls.needs
    figures = {
        "greendygnn_fig2": ("runs",),
        "greendygnn_fig4": ("runs",),
        "greendygnn_fig5": ("runs",),
        "greendygnn_fig9": ("run_dirs",),
        "greendygnn_table1": ("runs",),
        "greendygnn_fig7": ("run_dirs",),
        "greendygnn_fig8": ("validation",),
        "greendygnn_calibration": ("control",),
        "greendygnn_policy": ("control",),
        "greendygnn_table2": ("runs",),
    }
    device_state = ("cache_bytes_max",)  # window buffers: on the training device
    reductions = {"windows_built": "sum", "mean_window": "mean", "fill_rows": "sum",
                  "copied_rows": "sum", "rebuild_s": "sum", "swap_wait_s": "slowest",
                  "delay_est_ms": "max", "biased_windows": "sum", "cache_bytes_max": "max",
                  "presample_sampling_rpcs": "sum", "presample_sampling_bytes": "sum",
                  "policy_fallback": "max"}

    def check_inputs(self, spec, inputs, dataset, partition, rank) -> None:
        """The presample, and the pipeline's policy (not one the ``policy`` option names):
        readable and trained for this dataset and partition."""
        check_run_presample(spec, inputs, dataset, partition, rank)
        if self.options["controller"] == "dqn" and not self.options.get("policy") \
                and inputs.get("policy"):
            check_pipeline_policy(inputs["policy"], dataset, partition)

    def setup(self, ctx, model, optimizer) -> None:
        super().setup(ctx, model, optimizer)
        self.presample_dir = ctx.inputs["presample"]
        self.epochs = int(ctx.spec.get("epochs"))
        meta = check_presample(self.presample_dir, fanouts=ctx.spec.get("fanouts"),
                               batch_size=ctx.spec.batch_size, base_seed=ctx.spec.seed,
                               epochs=self.epochs, steps=ctx.steps)
        self.presample_stats = meta["workers"][str(ctx.rank)]
        self.steps = ctx.steps
        self.total_steps = self.steps * self.epochs
        self.capacity = int(self.options["cache_rows"])
        self.owner = np.asarray(ctx.partition.book.owner, dtype=np.int64)
        self.remote_owners = [o for o in range(ctx.world_size) if o != ctx.rank]
        policy = self.options.get("policy") or ctx.inputs.get("policy")
        if policy and Path(policy).is_dir():
            policy = str(Path(policy) / "policy.pt")
        self.controller = make_controller(
            self.options["controller"], int(self.options["window"]),
            {"cost_weights": self.options["cost_weights"],
             "delay_threshold_ms": self.options["delay_threshold_ms"], "policy": policy})
        self.policy_fallback = int(getattr(self.controller, "fallback", None) is not None)
        trained_for = getattr(self.controller, "metadata", {}).get("world")
        if trained_for is not None and int(trained_for) != ctx.world_size:
            raise ConfigError(f"{policy}: policy trained for {trained_for} workers, the run "
                              f"has {ctx.world_size}")
        self.estimator = CongestionEstimator(
            self.remote_owners, warmup_epochs=int(self.options["warmup_epochs"]),
            recent=int(self.options["recent_rtts"]),
            gamma_s_per_byte_ms=ctx.emulator.window_gamma_s_per_byte_ms)
        self.buffers = WindowBuffers()
        self._restore: dict | None = None
        self._pending_decision: tuple[int, int, WindowDecision] | None = None
        self._stats = _WindowStats()
        self._observed = {"wait": 0.0, "step": 0.0}
        self._lock = threading.Lock()
        self._last_build_s = 0.0
        self._last_window_s = 0.0
        self._epoch: dict = {}
        self._epoch_no = 0
        self._loader: Prefetcher[PresampledBatch] | None = None
        self._resolver: Prefetcher[PreparedBatch] | None = None
        self._reader: BlockReader | None = None
        self.max_cache_bytes = 0

    # -- the builder ---------------------------------------------------------------------
    def _window_batches(self, start: int, window: int) -> list[np.ndarray]:
        """Remote input nodes of the presampled batches of steps ``start …`` (``window``
        of them, fewer at the end of the run), read from the block files."""
        out: list[np.ndarray] = []
        end = min(start + window, self.total_steps)
        g = start
        while g < end:
            epoch, step = divmod(g, self.steps)
            upto = min(end, (epoch + 1) * self.steps)
            with open_presampled(self.presample_dir, self.ctx.rank, epoch) as reader:
                for s in range(step, step + upto - g):
                    out.append(reader.read(s).remote_nodes)
            g = upto
        return out

    def _build(self, index: int, start: int, decision: WindowDecision,
               previous: WindowCache | None) -> WindowCache:
        t0 = time.perf_counter()
        ctx = self.ctx
        store = ctx.store
        nodes = select_window_nodes(self._window_batches(start, decision.window), self.owner,
                                    self.capacity, decision.reserved(self.remote_owners),
                                    decision.weight_of())
        ids = torch.from_numpy(nodes)
        rows = torch.empty((ids.numel(), store.feature_dim), dtype=store.local_features.dtype,
                           device=ctx.device)
        missing = torch.ones(ids.numel(), dtype=torch.bool)
        if previous is not None and ids.numel():
            old_slot = previous.slots(ids)
            missing = old_slot < 0
            kept = torch.nonzero(~missing).flatten()
            rows[kept] = previous.rows[old_slot[kept].to(previous.rows.device)]
        pull = torch.nonzero(missing).flatten()
        pulled, fill = store.fetch_remote(ids[pull])
        rows[pull] = pulled.to(ctx.device)
        return WindowCache(index=index, start=start, decision=decision, ids=ids, rows=rows,
                           fill=fill, copied_rows=int(ids.numel() - pull.numel()),
                           build_s=time.perf_counter() - t0)

    def _start_build(self, index: int, start: int, decision: WindowDecision) -> None:
        previous = self.buffers.active
        self._pending_decision = (index, start, decision)
        self.buffers.build_async(lambda: self._build(index, start, decision, previous))

    # -- boundaries ----------------------------------------------------------------------
    def _controller_state(self, epoch: int, step: int) -> ControllerState:
        estimate = self.estimator.estimate()
        world = self.ctx.world_size
        stats = self._stats
        hits, remote = sum(stats.hits.values()), sum(stats.remote.values())
        with self._lock:
            wait, spent = self._observed["wait"], self._observed["step"]
            self._observed = {"wait": 0.0, "step": 0.0}
        rates = [1.0 if o == self.ctx.rank else
                 (stats.hits.get(o, 0) / stats.remote[o] if stats.remote.get(o) else 1.0)
                 for o in range(world)]
        return ControllerState(
            rank=self.ctx.rank,
            multipliers=[estimate.multipliers.get(o, 1.0) for o in range(world)],
            owner_hit_rates=rates,
            global_hit_rate=hits / remote if remote else 1.0,
            stall_fraction=wait / spent if spent > 0 else 0.0,
            rebuild_fraction=(self._last_build_s / self._last_window_s
                              if self._last_window_s > 0 else 0.0),
            miss_fraction=(remote - hits) / remote if remote else 0.0,
            delay_s=estimate.delay_s,
            remaining_fraction=(self.steps - step) / self.steps,
            previous=self.buffers.active.decision,
            delays_s=[estimate.delays_s.get(o, 0.0) for o in range(world)])

    def _enter_window(self, epoch: int, step: int) -> None:
        """At the first step of the next window: swap it in, decide and start the one
        after it."""
        active = self.buffers.swap()
        now = time.perf_counter()
        self._last_window_s = now - self._stats.started
        self._last_build_s = active.build_s
        self._account(active)
        decision = self.controller.decide(self._controller_state(epoch, step))
        self._stats = _WindowStats(started=now)
        if active.end < self.total_steps:
            self._start_build(active.index + 1, active.end, decision)

    def _account(self, cache: WindowCache) -> None:
        stats = self._epoch
        stats["windows_built"] += 1
        stats["fill"].add(cache.fill)
        stats["copied_rows"] += cache.copied_rows
        stats["rebuild_s"] += cache.build_s
        stats["biased_windows"] += int(cache.decision.bias_owner is not None)
        self.max_cache_bytes = max(self.max_cache_bytes, cache.nbytes)

    def _begin(self, g: int) -> None:
        """Build the window containing ``g`` (and decide/start the next) synchronously:
        at the run's first step, or after a resume."""
        if self._restore is not None:
            active = WindowDecision.from_dict(self._restore["active"]["decision"])
            index, start = self._restore["active"]["index"], self._restore["active"]["start"]
        else:
            active, index, start = self.controller.initial(), 0, g
        self.buffers.build_async(lambda: self._build(index, start, active, None))
        self._pending_decision = (index, start, active)
        self.buffers.swap()
        self._account(self.buffers.active)
        pending = self._restore.get("pending") if self._restore else None
        self._restore = None
        if pending is not None:
            self._start_build(pending["index"], pending["start"],
                              WindowDecision.from_dict(pending["decision"]))
        elif self.buffers.active.end < self.total_steps:
            decision = self.controller.decide(self._controller_state(g // self.steps,
                                                                     g % self.steps))
            self._start_build(index + 1, self.buffers.active.end, decision)
        self._stats = _WindowStats()

    # -- the resolver --------------------------------------------------------------------
    def _resolve(self, epoch: int, presampled: PresampledBatch) -> PreparedBatch:
        ctx = self.ctx
        store = ctx.store
        g = epoch * self.steps + presampled.step
        if self.buffers.active is None:
            self._begin(g)
        while g >= self.buffers.active.end:
            self._enter_window(epoch, presampled.step)
        cache = self.buffers.active
        nodes = presampled.batch.input_nodes
        local = torch.from_numpy(presampled.local_mask)
        features, counts, hits, misses = store.fetch_cached(nodes, local, cache.slots,
                                                            cache.rows, ctx.device)
        self._observe_fetch(epoch, nodes[~local], cache.slots(nodes[~local]) >= 0, counts)
        estimate = self.estimator.estimate()
        batch = presampled.batch
        return PreparedBatch(
            step=presampled.step, batch=batch.to(ctx.device), features=features,
            labels=ctx.labels_of(batch.seeds), counts=counts, cache_hits=hits,
            cache_misses=misses,
            extra={"window": cache.decision.window, "window_index": cache.index,
                   "bias_owner": -1 if cache.decision.bias_owner is None
                   else cache.decision.bias_owner,
                   "delay_est_ms": estimate.delay_s * 1e3})

    def _observe_fetch(self, epoch: int, remote: torch.Tensor, hit: torch.Tensor,
                       counts: FetchCounts) -> None:
        owners = torch.from_numpy(self.owner)[remote]
        stats = self._stats
        for o in self.remote_owners:
            mine = owners == o
            stats.remote[o] = stats.remote.get(o, 0) + int(mine.sum())
            stats.hits[o] = stats.hits.get(o, 0) + int((mine & hit).sum())
        f = self.ctx.emulator.time_dilation
        for o, rtt in counts.rtt_s.items():
            self.estimator.record(epoch, o, rtt / f, counts.per_owner_rows[o] *
                                  self.ctx.store.row_bytes)

    # -- the epoch -----------------------------------------------------------------------
    def start_epoch(self, epoch: int) -> None:
        self._epoch_no = epoch
        self._epoch = {"windows_built": 0, "fill": FetchCounts(), "copied_rows": 0,
                       "rebuild_s": 0.0, "biased_windows": 0, "windows": []}
        self.buffers.waited_s = 0.0
        self._reader = reader = open_presampled(self.presample_dir, self.ctx.rank, epoch)
        self._loader = Prefetcher(reader.read, self.steps, int(self.options["loader_depth"]),
                                  name=f"greendygnn-loader-e{epoch}")
        loader = self._loader
        self._resolver = Prefetcher(
            lambda _i: self._resolve(epoch, loader.get()[0]), self.steps,
            int(self.options["prefetch_depth"]), name=f"greendygnn-resolver-e{epoch}")

    def batches(self, epoch: int) -> Iterator[PreparedBatch]:
        assert self._resolver is not None, "start_epoch() not called"
        windows = []
        for _ in range(self.steps):
            prepared, waited = self._resolver.get()
            prepared.fetch_wait_s = waited
            windows.append(prepared.extra["window"])
            yield prepared
        self._epoch["windows"] = windows

    def observe(self, record) -> None:
        with self._lock:
            self._observed["wait"] += record.fetch_wait_s
            self._observed["step"] += record.step_s

    def _stop_epoch(self) -> None:
        for stage in (self._resolver, self._loader):
            if stage is not None:
                stage.close()
        self._resolver = self._loader = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def end_epoch(self, epoch: int) -> dict:
        self._stop_epoch()
        stats = self._epoch
        fill = stats["fill"]
        windows = stats["windows"]
        return {
            "windows_built": stats["windows_built"],
            "mean_window": float(np.mean(windows)) if windows else math.nan,
            "fill_rows": fill.remote_rows,
            "copied_rows": stats["copied_rows"],
            "rebuild_s": stats["rebuild_s"],
            "swap_wait_s": self.buffers.waited_s,
            "delay_est_ms": self.estimator.estimate().delay_s * 1e3,
            "biased_windows": stats["biased_windows"],
            "cache_bytes_max": self.max_cache_bytes,
            "policy_fallback": self.policy_fallback,
            "presample_sampling_rpcs": self.presample_stats["sampling_rpcs"][epoch],
            "presample_sampling_bytes": self.presample_stats["sampling_bytes"][epoch],
            "extra_remote_rpcs": fill.remote_rpcs,
            "extra_remote_rows": fill.remote_rows,
            "extra_remote_bytes": fill.remote_bytes,
        }

    # -- checkpoints ---------------------------------------------------------------------
    def state_dict(self) -> dict:
        active = self.buffers.active
        state: dict = {"estimator": self.estimator.state_dict(),
                       "controller": self.controller.state_dict(),
                       "active": None, "pending": None}
        if active is not None:
            state["active"] = {"index": active.index, "start": active.start,
                               "decision": active.decision.to_dict()}
        if self.buffers.building and self._pending_decision is not None:
            index, start, decision = self._pending_decision
            state["pending"] = {"index": index, "start": start,
                                "decision": decision.to_dict()}
        return state

    def load_state_dict(self, state: dict) -> None:
        self.estimator.load_state_dict(state["estimator"])
        self.controller.load_state_dict(state["controller"])
        self._restore = state if state.get("active") else None

    def close(self) -> None:
        self._stop_epoch()
        self.buffers.close()
