"""``greendygnn``: window-based cache rebuilds under congestion, with per-owner cost
weights (GreenDyGNN §IV–V).

The run's steps form one sequence across epochs (global step ``g = epoch · steps +
step``) cut into *windows*: window ``k`` covers ``W_k`` steps starting where window
``k − 1`` ended, so windows cross epoch boundaries. Each window has its own cache of at
most ``K = cache_rows`` remote feature rows, chosen from exactly the window's batches
(as Stage 1 produced them, below):

- every remote input node of the window's batches is counted once per batch, and its
  count weighted by its owner's cost weight ``w_owner`` (the decision's; 1 without);
- the top ``K`` by weighted count are cached (ties by node id) — under the *biased*
  template, 60 % of ``K`` is first reserved for the designated owner's most accessed
  nodes (as many as it has) and the rest filled by weighted count; the *uniform*
  template reserves nothing (the paper's "uniform cache allocation instead of per-owner
  cost weighting" is the uniform template with every weight 1: the window's plain top K);
- rows already in the previous window's cache are copied from it, the others pulled with
  one bulk request per owner (:meth:`FeatureStore.fetch_remote`).

Three stages run beside the trainer (§V-A):

- **Stage 1, the background sampler** (option ``sampler``). ``online`` (the paper's, the
  default): one dedicated thread (:class:`SampleBuffer`) samples every batch with
  distributed sampling exactly as ``default`` does
  (:func:`~commgnn.runtime.remote_sampler.counted_sampler`, ``distributed``; seeds from the
  system's epoch schedule, ``batch_seed(s0, w, e, i)``), so the neighbour-list RPCs cross
  the emulated network as ``sampling`` traffic, into a buffer keyed by global step. Each
  step is sampled exactly once, in step order, and held until both the resolver has taken
  it and the cache builder has read it; the thread runs ``loader_depth`` steps ahead of
  the resolver and as far as the builder asks (the end of the window being built, asked
  when its build starts: windows cross epoch boundaries), never beyond the run's last
  step. At ``end_epoch`` it is told to hold once it has produced what the epoch asked for
  (the window being built may reach epochs ahead): it finishes those steps in the
  background — the loop does not wait for them, as §V-A's sampler never stalls training —
  and holds until the next ``start_epoch`` asks for more. (Until 2026-12-04 ``end_epoch``
  waited for them: under congestion that put up to a window of sampling on every epoch's
  critical path, 5.6–35 % of GreenDyGNN's congested epoch time in the evaluations.) So what
  is sampled and which step records it never depend on timing (its RPCs are counted in
  the epoch whose emulated link they crossed, which can be the next one); the batches are bit for
  bit the presampled ones (:mod:`commgnn.sampling.presample` calls the same functions),
  so a ``static`` run's caches, fetches and losses are the same under either
  ``sampler``. ``presample`` (the measured alternative; the pipeline's presample is then
  a required input): a :class:`~commgnn.runtime.prefetch.Prefetcher` reads RapidGNN's
  presampled blocks ``loader_depth`` ahead and the builder reads the window's batches
  from the block files.
- the **cache builder** (:class:`WindowBuffers`: one thread builds the *pending* buffer
  while the *active* one serves; a swap waits for the build to finish, so a half-built
  buffer is never served);
- the **resolver** (a second prefetcher, ``prefetch_depth`` batches ahead, that assembles
  each batch from the active buffer and fetches the misses, one request per owner,
  recording each owner's round trip for the congestion estimator).

When the resolver reaches the first step of window ``k`` it swaps window ``k``'s buffer
in, asks the controller (:mod:`commgnn.systems.greendygnn.controller`: ``static``, ``heuristic`` or
``dqn``, a policy trained in the calibrated simulator) for window ``k + 1`` — its size
and template, from the 23-float state — and starts building it. What a run fetches
therefore depends only on the configuration, the seed and the controller's decisions;
with ``static`` it is a function of the configuration alone. Every step record names its
window (``window``, ``window_index``, ``bias_owner``) and the inferred delay; each window's
build is counted in the epoch whose resolver swapped it in (``extra_remote_*``).

Resume: the checkpoint holds the active and the pending window's decisions, the
estimator and the controller (Stage 1's state is the schedule: nothing to save); the
first epoch after a resume rebuilds those two buffers (the active one's fill is then
counted a second time, in that epoch; under ``online`` the active window's batches from
before the resumed epoch are sampled again for it, and their sampling traffic is recorded
on the resumed epoch's first step).

Accounting: a window's build usually runs during the previous window, possibly in the
previous epoch (or while that epoch evaluates); its rows, RPCs and CPU energy are counted
(``extra_remote_*``, ``fill_rows``) in the epoch that swaps it in, while its link seconds
and bytes (``network_fetch_*``, from the emulator) fall in the epoch in which they were
sent. Under ``online`` each batch's neighbour-list traffic (a ``FetchCounts``) is recorded
on the step that trains on it (``PreparedBatch.sampling``: the step records'
``sampling_*``, their target energy and the summary's ``sampling_*_per_epoch``), and its
link seconds and bytes (``network_sampling_*``) fall in the epoch in which the sampler
sent it (always inside an epoch, a deterministic one), possibly the one before the
step's; ``sample_s`` is the sampler thread's seconds for the batch. Under
``presample`` the sampling was paid offline by ``presample``: the steps record none, and
the epochs report what it cost as ``presample_sampling_*`` (as ``rapidgnn`` does); under
``online`` those two metrics are absent (nothing was presampled) and
``sampler_held_max`` reports the most batches Stage 1 held at once.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

import numpy as np
import torch

from commgnn.core.batch import PreparedBatch
from commgnn.core.blocks import MiniBatch
from commgnn.core.config import ConfigError
from commgnn.core.counts import FetchCounts
from commgnn.core.errors import InputError
from commgnn.runtime.devices import carry_device
from commgnn.runtime.prefetch import Prefetcher, PrefetchError, describe_error
from commgnn.runtime.remote_sampler import counted_sampler
from commgnn.sampling.blockio import BlockReader, PresampledBatch
from commgnn.sampling.presample import check_presample, check_run_presample, open_presampled
from commgnn.sampling.seeds import batch_seed
from commgnn.systems.greendygnn import DESCRIPTION
from commgnn.systems.greendygnn.controller import (
    WINDOWS,
    ControllerState,
    WindowDecision,
    make_controller,
)
from commgnn.systems.greendygnn.dqn import load_policy
from commgnn.systems.greendygnn.estimator import CongestionEstimator
from commgnn.systems.greendygnn.policy import check_pipeline_policy
from commgnn.train.system import System

T = TypeVar("T")


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
class SampledBatch:
    """One step sampled online by Stage 1: the batch as the sampler returned it, which of
    its input nodes the worker owns, and what sampling it cost."""

    step: int  # within its epoch
    batch: MiniBatch  # int64 CPU tensors
    local_mask: np.ndarray  # bool, (len(batch.input_nodes),): owned by the worker
    sampling: FetchCounts  # the neighbour-list RPCs (exact counts)
    sample_s: float = 0.0  # the sampler thread's seconds for it

    @property
    def remote_nodes(self) -> np.ndarray:
        """Global ids of the input nodes owned by other workers (in input order)."""
        return self.batch.input_nodes.numpy()[~self.local_mask]


class SampleBuffer(Generic[T]):
    """Stage 1's shared buffer: ``produce(g)`` for the global steps ``g = first, first + 1,
    … total − 1`` on one background thread, each exactly once and in order.

    Two consumers, each in step order: the loader :meth:`take` s steps from
    ``consume_from`` on (earlier ones only the builder reads: the windows a resume
    rebuilds), and the cache builder :meth:`read` s whole windows (contiguous, from
    ``first``). An item is dropped once both are past it. Production runs ``depth`` steps
    ahead of the loader and as far as the builder has asked (:meth:`want`, or the end of
    the window it reads), so at most about a window plus ``depth`` items are held, and
    which items are produced never depends on timing. A consumer waiting for a step whose
    production failed gets a :class:`~commgnn.runtime.prefetch.PrefetchError` whose cause is
    the producer's exception. :meth:`pause` (between epochs) lets the thread finish what has
    been asked for in the background, then holds it, so which steps are sampled before the
    next epoch's steps are asked for is decided by what the epoch asked for, not by timing,
    and the loop never waits for it; :meth:`resume` goes on; :meth:`close` stops and joins
    it (a waiting consumer then gets a ``PrefetchError``).
    """

    def __init__(self, produce: Callable[[int], T], *, first: int, consume_from: int,
                 total: int, depth: int, name: str = "greendygnn-sampler") -> None:
        if depth < 1:
            raise ValueError(f"sampler depth must be >= 1, got {depth}")
        if not 0 <= first <= consume_from:
            raise ValueError(f"need 0 <= first ({first}) <= consume_from ({consume_from})")
        self.name = name
        self._produce = produce
        self._total = int(total)
        self._depth = int(depth)
        self._cond = threading.Condition()
        self._items: dict[int, T] = {}
        self._next = first  # the next step to produce
        self._taken = consume_from  # the next step the loader takes
        self._read = first  # the builder has read every step below
        self._wanted = first  # the builder asked for every step below
        self._low = first  # every step below is dropped
        self._paused = self._stop = False
        self._hold = first  # paused: produce every step below, then hold
        self._error: tuple[int, BaseException] | None = None
        self.produced = 0
        self.max_held = 0
        self._thread = threading.Thread(target=carry_device(self._run), name=name, daemon=True)
        self._thread.start()

    def _limit(self) -> int:
        return min(self._total, max(self._taken + self._depth, self._wanted))

    def _run(self) -> None:
        while True:
            with self._cond:
                while not (self._stop or self._next >= self._total) and \
                        ((self._paused and self._next >= self._hold)
                         or self._next >= self._limit()):
                    self._cond.wait()
                if self._stop or self._next >= self._total:
                    return
                g = self._next
            try:
                item = self._produce(g)
            except BaseException as exc:  # re-raised to whoever waits for step g or later
                with self._cond:
                    self._error = (g, exc)
                    self._cond.notify_all()
                return
            with self._cond:
                self._items[g] = item
                self._next = g + 1
                self.produced += 1
                self.max_held = max(self.max_held, len(self._items))
                self._cond.notify_all()

    def _wait_for(self, g: int) -> T:
        """Item ``g`` (the lock held), once produced."""
        while g not in self._items:
            if g < self._low or g >= self._total:
                raise IndexError(f"{self.name}: step {g} is not held (dropped below "
                                 f"{self._low}, run ends at {self._total})")
            if self._error is not None and self._error[0] <= g:
                index, exc = self._error
                raise PrefetchError(f"{self.name}: producing step {index} failed: "
                                    f"{describe_error(exc)}") from exc
            if self._stop:
                raise PrefetchError(f"{self.name}: closed")
            self._cond.wait()
        return self._items[g]

    def _drop(self) -> None:
        below = min(self._taken, self._read)
        while self._low < below:
            self._items.pop(self._low, None)
            self._low += 1
        self._cond.notify_all()

    def take(self, g: int) -> T:
        """The loader's next step ``g`` (steps are taken in order), once produced."""
        with self._cond:
            if g != self._taken:
                raise RuntimeError(f"{self.name}: the loader takes step {self._taken} next, "
                                   f"not {g}")
            item = self._wait_for(g)
            self._taken = g + 1
            self._drop()
        return item

    def want(self, end: int) -> None:
        """The builder will read every step below ``end``: produce up to there."""
        with self._cond:
            self._wanted = max(self._wanted, min(end, self._total))
            self._cond.notify_all()

    def read(self, start: int, end: int) -> list[T]:
        """The builder's window: the items of steps ``start … end − 1`` (at most up to the
        run's end), in order; windows are read in order, each starting where the last
        ended."""
        end = min(end, self._total)
        with self._cond:
            if start != self._read:
                raise RuntimeError(f"{self.name}: the builder reads from step {self._read} "
                                   f"next, not {start}")
            self._wanted = max(self._wanted, end)
            self._cond.notify_all()
        out: list[T] = []
        for g in range(start, end):
            with self._cond:
                out.append(self._wait_for(g))
                self._read = g + 1
                self._drop()
        return out

    def pause(self) -> None:
        """Hold production once every step asked for so far (``depth`` past the loader,
        the builder's windows) is produced, without waiting for it: the thread finishes
        them in the background (§V-A's sampler runs ahead of the loop and never stalls
        it) and then holds until :meth:`resume`. A production error that has already
        happened is raised here."""
        with self._cond:
            self._hold = self._limit()
            self._paused = True
            self._cond.notify_all()
            if self._error is not None:
                index, exc = self._error
                raise PrefetchError(f"{self.name}: producing step {index} failed: "
                                    f"{describe_error(exc)}") from exc

    def resume(self) -> None:
        with self._cond:
            self._paused = False
            self._cond.notify_all()

    @property
    def held(self) -> int:
        with self._cond:
            return len(self._items)

    def close(self) -> None:
        """Stop producing and join the thread (an item in production completes)."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._thread.join()
        with self._cond:
            self._items.clear()


@dataclass
class _WindowStats:
    """What happened since the last boundary (the controller's observation)."""

    hits: dict[int, int] = field(default_factory=dict)
    remote: dict[int, int] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)


class GreenDyGNNSystem(System):
    description = DESCRIPTION

    @classmethod
    def wants(cls, options: dict) -> tuple[str, ...]:
        """The presample for ``sampler: presample``; a ``dqn`` run without its own
        ``policy`` also gets the pipeline's policy."""
        wanted: tuple[str, ...] = cls.needs
        if options.get("sampler", cls.options["sampler"]["default"]) == "presample":
            wanted = (*wanted, "presample")
        if options.get("controller") == "dqn" and not options.get("policy"):
            wanted = (*wanted, "policy")
        return wanted
    device_state = ("cache_bytes_max",)  # window buffers: on the training device
    reductions = {"windows_built": "sum", "mean_window": "mean", "fill_rows": "sum",
                  "copied_rows": "sum", "rebuild_s": "sum", "swap_wait_s": "slowest",
                  "delay_est_ms": "max", "biased_windows": "sum", "cache_bytes_max": "max",
                  "presample_sampling_rpcs": "sum", "presample_sampling_bytes": "sum",
                  "sampler_held_max": "max", "policy_fallback": "max"}

    # -- declarations --------------------------------------------------------------------
    @classmethod
    def run_problems(cls, spec, shape=None) -> list[str]:
        """Options the cell makes meaningless: a ``policy`` no controller but ``dqn``
        reads, or one trained for another number of workers or windows; for the
        heuristic and dqn controllers, a warm-up longer than the run (the congestion
        baseline is never set, so they never see congestion) and a first window as long
        as the whole run (they never decide one). A policy file that does not exist is a
        path problem (:meth:`path_problems`)."""
        options = cls.with_defaults(spec.system_options)
        controller, policy = options["controller"], options["policy"]
        problems = []
        if policy and controller != "dqn":
            problems.append(cls.option_problem(
                spec, "policy", f"only the dqn controller reads a policy (controller: "
                f"{controller})"))
        if policy and controller == "dqn":
            problems += cls._policy_problems(spec, policy)
        if controller in ("heuristic", "dqn"):
            epochs = int(spec.get("epochs"))
            if options["warmup_epochs"] > epochs:
                problems.append(cls.option_problem(
                    spec, "warmup_epochs", f"more than the run's {epochs} epochs: the "
                    f"congestion baseline is never set, the {controller} controller never "
                    "sees congestion"))
            steps = cls.max_steps_per_epoch(spec, shape)
            if steps is not None and options["window"] >= steps * epochs:
                problems.append(cls.option_problem(
                    spec, "window", f"not shorter than the run (at most {steps * epochs} "
                    f"steps: {epochs} epochs of at most {steps}): the first window lasts "
                    f"to its end, the {controller} controller never decides one"))
        return problems

    @classmethod
    def _policy_problems(cls, spec, policy: str) -> list[str]:
        """An existing policy file (or directory) unreadable, or trained for another
        number of workers or set of windows than the run's."""

        path = Path(policy) / "policy.pt" if Path(policy).is_dir() else Path(policy)
        if not path.is_file():
            return []  # a path problem
        try:
            _, metadata = load_policy(path)
        except InputError as exc:
            return [cls.option_problem(spec, "policy", str(exc))]
        problems = []
        world = metadata.get("world")
        if world is not None and int(world) != spec.workers:
            problems.append(cls.option_problem(
                spec, "policy", f"trained for {world} workers, the run has {spec.workers}"))
        windows = metadata.get("windows")
        if windows is not None and list(windows) != list(WINDOWS):
            problems.append(cls.option_problem(
                spec, "policy", f"trained for windows {list(windows)}, the controller's are "
                f"{list(WINDOWS)}"))
        return problems

    @classmethod
    def path_problems(cls, where: str, options: dict) -> list[str]:
        """The dqn controller's ``policy``: a file, or a directory holding ``policy.pt``."""
        options = cls.with_defaults(options)
        policy = options["policy"]
        if not policy or options["controller"] != "dqn":
            return []
        path = Path(policy)
        if path.is_dir():
            if not (path / "policy.pt").is_file():
                return [f"{where}.policy: {policy!r}: a directory without policy.pt"]
        elif not path.is_file():
            return [f"{where}.policy: {policy!r}: no such file"]
        return []

    @property
    def presampled(self) -> bool:
        """Stage 1 reads the presample (``sampler: presample``) instead of sampling."""
        return self.options["sampler"] == "presample"

    def check_inputs(self, spec, inputs, dataset, partition, rank) -> None:
        """With ``sampler: presample`` the presample (required); the pipeline's policy (not
        one the ``policy`` option names): readable and made for this dataset and
        partition. A presample given to an ``online`` run is not read."""
        if self.presampled:
            if "presample" not in inputs:
                raise ConfigError(f"system {spec.system!r} with sampler: presample needs "
                                  "pipeline inputs ['presample'] (commgnn train --input "
                                  "NAME=PATH)")
            check_run_presample(spec, inputs, dataset, partition, rank)
        if self.options["controller"] == "dqn" and not self.options.get("policy") \
                and inputs.get("policy"):
            check_pipeline_policy(inputs["policy"], dataset, partition)

    def setup(self, ctx, model, optimizer) -> None:
        super().setup(ctx, model, optimizer)
        self.epochs = int(ctx.spec.get("epochs"))
        if self.presampled:
            self.presample_dir = ctx.inputs["presample"]
            meta = check_presample(self.presample_dir, fanouts=ctx.spec.get("fanouts"),
                                   batch_size=ctx.spec.batch_size, base_seed=ctx.spec.seed,
                                   epochs=self.epochs, steps=ctx.steps)
            self.presample_stats = meta["workers"][str(ctx.rank)]
        else:  # Stage 1 samples online, as `default` does (distributed sampling)
            self._sample_seeded = counted_sampler(
                ctx.sampler, "distributed", ctx.partition.book.owner, ctx.rank, ctx.emulator,
                ctx.spec.get("rpc_timeout_s"))
        self._sampler: SampleBuffer[SampledBatch] | None = None
        self._seeds: dict[int, list[np.ndarray]] = {}
        self._consume_from = 0  # the first step the sampler's loader takes
        self._orphans = FetchCounts()  # sampling of steps before it (a resume's rebuild)
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
            named = (f"{self.where}.policy: {policy!r}" if self.options.get("policy")
                     else f"{policy} (the pipeline's policy)")
            raise ConfigError(f"{named}: trained for {trained_for} workers, the run has "
                              f"{ctx.world_size}")
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

    # -- Stage 1 (online) ----------------------------------------------------------------
    def _sample_step(self, g: int) -> SampledBatch:
        """Global step ``g`` sampled with distributed sampling (on the sampler thread)."""
        epoch, step = divmod(g, self.steps)
        seeds = self._seeds.get(epoch)
        if seeds is None:
            seeds = self.epoch_seeds(epoch)  # the schedule (placement: every worker its own)
            if len(seeds) != self.steps:
                raise RuntimeError(f"epoch {epoch}: {len(seeds)} batches scheduled, the run "
                                   f"has {self.steps} steps per epoch")
            self._seeds = {epoch: seeds}
        t0 = time.perf_counter()
        batch, sampling = self._sample_seeded(
            seeds[step], batch_seed(self.ctx.spec.seed, self.ctx.rank, epoch, step))
        sample_s = time.perf_counter() - t0
        if g < self._consume_from:  # only the builder reads it: recorded on the first step
            self._orphans.add(sampling)
        local = self.owner[batch.input_nodes.numpy()] == self.ctx.rank
        return SampledBatch(step=step, batch=batch, local_mask=local, sampling=sampling,
                            sample_s=sample_s)

    def _start_sampler(self, epoch: int) -> SampleBuffer[SampledBatch]:
        """The sampler at the first epoch this process trains: from the window a resume
        rebuilds (or the epoch's first step), the loader from the epoch's first step."""
        first_step = epoch * self.steps
        first = first_step
        if self._restore is not None:
            first = min(first, int(self._restore["active"]["start"]))
        self._consume_from = first_step
        return SampleBuffer(self._sample_step, first=first, consume_from=first_step,
                            total=self.total_steps, depth=int(self.options["loader_depth"]))

    # -- the builder ---------------------------------------------------------------------
    def _window_batches(self, start: int, window: int) -> list[np.ndarray]:
        """Remote input nodes of the batches of steps ``start …`` (``window`` of them,
        fewer at the end of the run): from Stage 1's buffer (``online``), else read from
        the block files."""
        if not self.presampled:
            assert self._sampler is not None
            return [item.remote_nodes for item in self._sampler.read(start, start + window)]
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
        if self._sampler is not None:  # asked now, by the resolver: never a matter of timing
            self._sampler.want(start + decision.window)
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
    def _resolve(self, epoch: int, presampled: PresampledBatch | SampledBatch
                 ) -> PreparedBatch:
        ctx = self.ctx
        store = ctx.store
        g = epoch * self.steps + presampled.step
        sampled: dict = {}  # online: the batch's sampling traffic and time
        if isinstance(presampled, SampledBatch):
            sampling = presampled.sampling
            if g == self._consume_from and self._orphans.remote_rpcs:
                sampling = FetchCounts()
                for part in (self._orphans, presampled.sampling):
                    sampling.add(part)
            sampled = {"sampling": sampling, "sample_s": presampled.sample_s}
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
                   "delay_est_ms": estimate.delay_s * 1e3},
            **sampled)

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
        if self.presampled:
            self._reader = reader = open_presampled(self.presample_dir, self.ctx.rank, epoch)
            self._loader = Prefetcher(reader.read, self.steps,
                                      int(self.options["loader_depth"]),
                                      name=f"greendygnn-loader-e{epoch}")
            loader = self._loader

            def produce(_i: int) -> PreparedBatch:
                return self._resolve(epoch, loader.get()[0])
        else:
            if self._sampler is None:
                self._sampler = self._start_sampler(epoch)
            else:
                self._sampler.resume()
            sampler, base = self._sampler, epoch * self.steps

            def produce(i: int) -> PreparedBatch:
                return self._resolve(epoch, sampler.take(base + i))
        self._resolver = Prefetcher(produce, self.steps, int(self.options["prefetch_depth"]),
                                    name=f"greendygnn-resolver-e{epoch}")

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
        if self._sampler is not None:  # no sampling between epochs (evaluation …)
            self._sampler.pause()

    def end_epoch(self, epoch: int) -> dict:
        self._stop_epoch()
        stats = self._epoch
        fill = stats["fill"]
        windows = stats["windows"]
        if self.presampled:
            stage1 = {"presample_sampling_rpcs": self.presample_stats["sampling_rpcs"][epoch],
                      "presample_sampling_bytes": self.presample_stats["sampling_bytes"][epoch]}
        else:
            stage1 = {"sampler_held_max": self._sampler.max_held if self._sampler else 0}
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
            **stage1,
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
        if self._sampler is not None:  # first: it may hold up the resolver or a build
            self._sampler.close()
            self._sampler = None
        self._stop_epoch()
        self.buffers.close()
