"""``rapidgnn``: deterministic presampling, a double-buffered steady cache and a prefetcher
(RapidGNN §3-4, Algorithm 1).

- The batches are read from the presampled metadata blocks (``commgnn presample``), which
  reproduce the online sampler exactly for the same seeds.
- Steady cache ``C_s``: the ``n_hot`` remote nodes this worker accesses most often in the
  epoch (ties broken by node id), filled with one bulk pull per owner (VectorPull). The
  secondary cache ``C_sec`` for epoch ``e+1`` is built on a background thread during epoch
  ``e`` and swapped in at the boundary; epoch ``e+1``'s batches never see ``C_sec`` before.
  ``C_sec`` copies the rows it shares with ``C_s`` and pulls only the nodes new to the hot
  set (its traffic is counted in epoch ``e``).
- Prefetcher (:class:`~commgnn.runtime.prefetch.Prefetcher`): a thread keeps up to
  ``Q = prefetch_depth`` upcoming batches staged, in step order, serving remote rows from
  ``C_s`` and pulling the misses (SyncPull, one request per owner) off the critical path.
  A trainer that outruns it waits for the staged batch (the wait is the step's
  ``fetch_wait_s``), so what each step fetches never depends on timing. With ``Q = 0``
  there is no prefetcher: every step is a *fallback*, fetched by the trainer on the
  default path (every remote row on demand, no cache).
- Device memory: both cache buffers plus at most ``Q`` staged batches, bounded by
  ``Mem <= 2 n_hot d + Q m_max d`` (rows of the feature dtype); the run reports both.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from commgnn.core.batch import PreparedBatch
from commgnn.core.counts import FetchCounts
from commgnn.runtime.devices import carry_device
from commgnn.runtime.prefetch import Prefetcher
from commgnn.sampling.blockio import BlockReader, PresampledBatch
from commgnn.sampling.presample import (
    check_presample,
    check_run_presample,
    frequencies,
    open_presampled,
)
from commgnn.systems.rapidgnn import DESCRIPTION
from commgnn.train.system import System


@dataclass
class SteadyCache:
    """Feature rows of a fixed set of remote nodes, looked up by global id."""

    epoch: int
    ids: torch.Tensor  # int64 global ids, in slot order
    rows: torch.Tensor  # (len(ids), d) on the training device
    slot: torch.Tensor  # int64 (num_nodes,): slot of a node, -1 if not cached
    fill: FetchCounts

    @property
    def nbytes(self) -> int:
        return self.rows.numel() * self.rows.element_size()


def hot_nodes(ids: np.ndarray, counts: np.ndarray, n_hot: int) -> np.ndarray:
    """The ``n_hot`` most frequently accessed ids (ties: smaller id first), sorted by id."""
    if n_hot <= 0 or ids.size == 0:
        return np.empty(0, dtype=np.int64)
    order = np.lexsort((ids, -counts))[:n_hot]
    return np.sort(ids[order])


class RapidGNNSystem(System):
    description = DESCRIPTION
    device_state = ("cache_bytes_max", "staged_bytes_max")  # held on the training device
    reductions = {"prefetch_fallbacks": "sum", "cache_bytes_max": "max",
                  "staged_bytes_max": "max", "memory_bound_bytes": "max",
                  "fill_initial_rows": "sum", "fill_refill_rows": "sum",
                  "presample_sampling_rpcs": "sum", "presample_sampling_bytes": "sum"}

    def check_inputs(self, spec, inputs, dataset, partition, rank) -> None:
        check_run_presample(spec, inputs, dataset, partition, rank)

    def setup(self, ctx, model, optimizer) -> None:
        super().setup(ctx, model, optimizer)
        self.presample_dir = ctx.inputs["presample"]
        self.n_hot = int(self.options["n_hot"])
        self.depth = int(self.options["prefetch_depth"])
        meta = check_presample(self.presample_dir, fanouts=ctx.spec.get("fanouts"),
                               batch_size=ctx.spec.batch_size, base_seed=ctx.spec.seed,
                               epochs=ctx.spec.get("epochs"), steps=ctx.steps)
        self.steps = int(meta["steps_per_epoch"])
        # the neighbour-list traffic distributed sampling costs, paid offline by presample
        self.presample_stats = meta["workers"][str(ctx.rank)]
        self.m_max = max(max(w["max_input_nodes"]) for w in meta["workers"].values())
        self.feature_dim = ctx.store.feature_dim
        self.row_bytes = ctx.store.row_bytes
        self.num_nodes = ctx.dataset.num_nodes
        self.cache: SteadyCache | None = None
        self._next_cache: SteadyCache | None = None
        self._next_thread: threading.Thread | None = None
        self._next_error: BaseException | None = None
        self._prefetcher: Prefetcher[PreparedBatch] | None = None
        self._reader: BlockReader | None = None
        self._epoch_stats: dict = {}
        self.max_cache_bytes = 0
        self.max_staged_bytes = 0

    # -- caches ------------------------------------------------------------------------
    def _build_cache(self, epoch: int, previous: SteadyCache | None = None) -> SteadyCache:
        """VectorPull: one bulk request per owner for the epoch's top-``n_hot`` nodes.

        Rows already in ``previous`` (the cache being replaced) are copied from it, so only
        nodes new to the hot set cross the network.
        """
        ctx = self.ctx
        ids, counts = frequencies(self.presample_dir, ctx.rank, epoch)
        hot = torch.from_numpy(hot_nodes(ids, counts, self.n_hot))
        rows = torch.empty((hot.numel(), self.feature_dim), dtype=ctx.store.local_features.dtype,
                           device=ctx.device)
        missing = torch.ones(hot.numel(), dtype=torch.bool)
        if previous is not None:
            old_slot = previous.slot[hot]
            missing = old_slot < 0
            kept = torch.nonzero(~missing).flatten()
            rows[kept] = previous.rows[old_slot[kept].to(previous.rows.device)]
        pull_pos = torch.nonzero(missing).flatten()
        pulled, fill = ctx.store.fetch_remote(hot[pull_pos])
        rows[pull_pos] = pulled.to(ctx.device)
        slot = torch.full((self.num_nodes,), -1, dtype=torch.int64)
        slot[hot] = torch.arange(hot.numel(), dtype=torch.int64)
        return SteadyCache(epoch=epoch, ids=hot, rows=rows, slot=slot, fill=fill)

    def _build_next(self, epoch: int, previous: SteadyCache) -> None:
        try:
            self._next_cache = self._build_cache(epoch, previous)
        except BaseException as exc:  # surfaced on the training thread at the swap
            self._next_error = exc

    def start_epoch(self, epoch: int) -> None:
        fill = FetchCounts()
        if self._next_thread is not None:  # swap C_sec in at the boundary
            self._next_thread.join()
            self._next_thread = None
            if self._next_error is not None:
                raise RuntimeError("building the secondary cache failed") from self._next_error
            self.cache, self._next_cache = self._next_cache, None
        if self.cache is None or self.cache.epoch != epoch:  # first epoch, or resumed
            self.cache = self._build_cache(epoch)
            fill.add(self.cache.fill)
        if epoch + 1 < self.ctx.spec.get("epochs"):
            self._next_thread = threading.Thread(target=carry_device(self._build_next),
                                                 args=(epoch + 1, self.cache),
                                                 name="rapidgnn-csec", daemon=True)
            self._next_thread.start()
        self._epoch_stats = {"fill": fill, "fallbacks": 0}
        self._reader = open_presampled(self.presample_dir, self.ctx.rank, epoch)
        if self.depth > 0:
            reader, cache = self._reader, self.cache
            self._prefetcher = Prefetcher(
                lambda step: self._assemble(reader.read(step), cache), self.steps,
                self.depth, name=f"rapidgnn-prefetch-e{epoch}",
                size_of=lambda p: p.features.numel() * p.features.element_size())

    # -- staging -----------------------------------------------------------------------
    def _assemble(self, presampled: PresampledBatch, cache: SteadyCache) -> PreparedBatch:
        """Cache-first features of a presampled batch; misses pulled, one RPC per owner."""
        ctx = self.ctx
        features, counts, hits, misses = ctx.store.fetch_cached(
            presampled.batch.input_nodes, torch.from_numpy(presampled.local_mask),
            lambda nodes: cache.slot[nodes], cache.rows, ctx.device)
        batch = presampled.batch
        return PreparedBatch(step=presampled.step, batch=batch.to(ctx.device),
                             features=features, labels=ctx.labels_of(batch.seeds),
                             counts=counts, cache_hits=hits, cache_misses=misses,
                             extra={"prefetch_fallback": 0, "cache_epoch": cache.epoch})

    def _fallback(self, step: int) -> PreparedBatch:
        """The default path: every remote input row fetched on demand, no cache."""
        ctx = self.ctx
        t0 = time.perf_counter()
        presampled = self._reader.read(step)
        t1 = time.perf_counter()
        features, counts = ctx.store.fetch(presampled.batch.input_nodes)
        batch = presampled.batch
        return PreparedBatch(step=step, batch=batch.to(ctx.device),
                             features=features.to(ctx.device),
                             labels=ctx.labels_of(batch.seeds), sample_s=t1 - t0,
                             fetch_wait_s=time.perf_counter() - t1, counts=counts,
                             cache_hits=0, cache_misses=counts.remote_rows,
                             extra={"prefetch_fallback": 1, "cache_epoch": -1})

    def batches(self, epoch: int) -> Iterator[PreparedBatch]:
        assert self._reader is not None, "start_epoch() not called"
        for step in range(self.steps):
            if self._prefetcher is not None:
                prepared, waited = self._prefetcher.get()
                prepared.fetch_wait_s = waited
            else:
                prepared = self._fallback(step)
                self._epoch_stats["fallbacks"] += 1
            self._track_memory()
            yield prepared

    def _track_memory(self) -> None:
        cache_bytes = self.cache.nbytes if self.cache else 0
        if self._next_cache is not None:
            cache_bytes += self._next_cache.nbytes
        self.max_cache_bytes = max(self.max_cache_bytes, cache_bytes)

    def _stop_epoch(self) -> None:
        if self._prefetcher is not None:
            self._prefetcher.close()
            self.max_staged_bytes = max(self.max_staged_bytes,
                                        self._prefetcher.max_staged_bytes)
            self._prefetcher = None
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def end_epoch(self, epoch: int) -> dict:
        self._stop_epoch()
        self._track_memory()
        fill = FetchCounts()
        fill.add(self._epoch_stats["fill"])
        refill = 0
        if self._next_thread is not None:  # C_sec's pull belongs to this epoch's traffic
            self._next_thread.join()
            if self._next_cache is not None:
                fill.add(self._next_cache.fill)
                refill = self._next_cache.fill.remote_rows
            self._track_memory()
        return {
            "prefetch_fallbacks": self._epoch_stats["fallbacks"],
            "fill_initial_rows": self._epoch_stats["fill"].remote_rows,
            "fill_refill_rows": refill,
            "presample_sampling_rpcs": self.presample_stats["sampling_rpcs"][epoch],
            "presample_sampling_bytes": self.presample_stats["sampling_bytes"][epoch],
            "extra_remote_rpcs": fill.remote_rpcs,
            "extra_remote_rows": fill.remote_rows,
            "extra_remote_bytes": fill.remote_bytes,
            "cache_bytes_max": self.max_cache_bytes,
            "staged_bytes_max": self.max_staged_bytes,
            "memory_bound_bytes": (2 * self.n_hot + self.depth * self.m_max) * self.row_bytes,
        }

    def close(self) -> None:
        self._stop_epoch()
        if self._next_thread is not None:
            self._next_thread.join()
