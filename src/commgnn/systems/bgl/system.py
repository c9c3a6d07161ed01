"""``bgl``: the BGL-style baseline of GreenDyGNN (§VI-A, "GPU-efficient I/O with
prefetch-during-sampling overlap"): ``default``'s batches, sampled and fetched by a
background producer while the trainer computes earlier steps, with no feature cache (the
paper's BGL) or, as an option, a FIFO cache of remote features.

What it is here:

- Batches: exactly ``default``'s (inherited ``epoch_seeds`` and ``sample``, with its
  ``schedule`` and ``sampling`` options), so training matches ``default`` step for step.
- Pipelining: a :class:`~commgnn.runtime.prefetch.Prefetcher` thread samples step ``i``'s
  batch (over RPC with ``sampling: distributed``) and resolves its features, up to
  ``prefetch_depth`` steps ahead of the trainer, strictly in step order. The trainer's
  wait for a staged step is its ``fetch_wait_s``; ``sample_s`` is the producer's sampling
  time, off the trainer's critical path.
- Cache: none by default (``cache_rows: 0``), as GreenDyGNN's BGL — its Fig. 7 shows BGL
  at a 0 % hit rate — so every remote input row is pulled for its step: ``default`` with a
  prefetcher. The measured option is a FIFO cache (:class:`FifoFeatureCache`) of
  ``cache_rows`` remote feature rows (figures and the claims ledger name it: ``BGL (FIFO
  20,000 rows)`` against ``BGL (no cache)``): a remote input row in the cache is a hit;
  the misses are pulled with ``FeatureStore.fetch_remote`` (one request per owner) and
  inserted in the order they were requested, evicting the oldest inserted rows first. A
  hit does not refresh an entry (FIFO, not LRU); nothing is presampled, ranked or
  counted. The cache persists across epochs and is checkpointed as its node ids in FIFO
  order (a resumed run pulls those rows again at its first epoch, reported as
  ``extra_remote_*``). Because the producer is one thread working in step order, hits,
  misses and fetched rows are a deterministic function of the batch sequence, never of
  timing.

What it is not: BGL's multi-tier GPU/CPU/SSD feature cache hierarchy, its
proximity-aware ordering of training nodes, its graph partitioning and its
resource-isolated preprocessing pipeline are not modelled; this is GreenDyGNN's reading of
BGL: prefetch-during-sampling overlap (its related work describes BGL's multi-tier cache,
its figures show none at work), with a FIFO feature cache as an option. Evaluation fetches on
demand (``System.fetch``) and does not touch the cache.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np
import torch

from commgnn.core.batch import PreparedBatch
from commgnn.core.counts import FetchCounts
from commgnn.runtime.prefetch import Prefetcher
from commgnn.systems.bgl import DESCRIPTION
from commgnn.systems.default.system import DefaultSystem


class FifoFeatureCache:
    """Feature rows of up to ``capacity`` nodes, evicted first-in first-out.

    A ring of ``capacity`` slots: the ``k``-th row ever stored goes to slot
    ``k mod capacity``, so once the ring is full each insertion overwrites the oldest
    stored row. ``slot_of[node]`` is a node's slot (``-1``: not cached); ``node_at[slot]``
    the node a slot holds. Lookups never change the order (a hit does not refresh).
    ``slot_of`` lives on the CPU (it is indexed by global ids), ``rows`` on ``device``.
    """

    def __init__(self, num_nodes: int, capacity: int, feature_dim: int,
                 dtype: torch.dtype = torch.float32,
                 device: torch.device | str = "cpu") -> None:
        if capacity < 0:
            raise ValueError(f"cache capacity must be >= 0, got {capacity}")
        self.capacity = int(capacity)
        self.slot_of = torch.full((int(num_nodes),), -1, dtype=torch.int64)
        self.node_at = torch.full((self.capacity,), -1, dtype=torch.int64)
        self.rows = torch.empty((self.capacity, int(feature_dim)), dtype=dtype, device=device)
        self.stored = 0  # rows ever stored; the next one goes to slot stored % capacity
        self.evictions = 0  # stored rows overwritten so far

    @property
    def size(self) -> int:
        """Rows held now."""
        return min(self.stored, self.capacity)

    @property
    def nbytes(self) -> int:
        """Bytes of the rows held now."""
        return self.size * self.rows.shape[1] * self.rows.element_size()

    def lookup(self, nodes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The slots of ``nodes`` (global ids) and which of them are cached (``slot >= 0``)."""
        slots = self.slot_of[nodes.to(torch.int64)]
        return slots, slots >= 0

    def gather(self, slots: torch.Tensor) -> torch.Tensor:
        """The rows in ``slots`` (hits from :meth:`lookup`), on the cache's device."""
        return self.rows.index_select(0, slots.to(self.rows.device))

    def insert(self, nodes: torch.Tensor, rows: torch.Tensor) -> int:
        """Store ``rows`` of ``nodes`` (distinct, none cached), in order; returns how many
        stored rows were evicted to make room (oldest first).

        When more nodes than ``capacity`` arrive at once, only the last ``capacity`` are
        stored (the earlier ones would be evicted by the same call before any lookup)."""
        nodes = nodes.to(torch.int64)
        if nodes.numel() != rows.shape[0]:
            raise ValueError(f"{nodes.numel()} nodes but {rows.shape[0]} rows")
        if nodes.numel() == 0 or self.capacity == 0:
            return 0
        if bool((self.slot_of[nodes] >= 0).any()):
            raise ValueError("insert: some nodes are already cached")
        if torch.unique(nodes).numel() != nodes.numel():
            raise ValueError("insert: nodes are not distinct")
        if nodes.numel() > self.capacity:
            nodes, rows = nodes[-self.capacity:], rows[-self.capacity:]
        n = nodes.numel()
        slots = (self.stored + torch.arange(n, dtype=torch.int64)) % self.capacity
        old = self.node_at[slots]
        old = old[old >= 0]
        self.slot_of[old] = -1
        self.slot_of[nodes] = slots
        self.node_at[slots] = nodes
        self.rows[slots.to(self.rows.device)] = rows.to(self.rows.device, self.rows.dtype)
        self.stored += n
        self.evictions += int(old.numel())
        return int(old.numel())

    def fifo_order(self) -> torch.Tensor:
        """The cached node ids, oldest first (re-inserting them in this order into an
        empty cache of the same capacity reproduces every later hit and eviction)."""
        if self.stored <= self.capacity:
            return self.node_at[:self.stored].clone()
        start = self.stored % self.capacity
        return torch.cat([self.node_at[start:], self.node_at[:start]])


class BGLSystem(DefaultSystem):
    description = DESCRIPTION
    device_state = ("cache_bytes_max", "staged_bytes_max")  # held on the training device
    reductions = {"fifo_evictions": "sum", "cache_rows_held": "max", "cache_bytes_max": "max",
                  "staged_bytes_max": "max", "fill_resume_rows": "sum"}

    def setup(self, ctx, model, optimizer) -> None:
        super().setup(ctx, model, optimizer)
        self.depth = int(self.options["prefetch_depth"])
        store = ctx.store
        # more rows than this worker has remote nodes can never be held: same behaviour
        remote = int((np.asarray(ctx.partition.book.owner) != ctx.rank).sum())
        self.cache = FifoFeatureCache(ctx.dataset.num_nodes,
                                      min(int(self.options["cache_rows"]), remote),
                                      store.feature_dim, store.local_features.dtype,
                                      ctx.device)
        self._prefetcher: Prefetcher[PreparedBatch] | None = None
        self._restore: torch.Tensor | None = None
        self._fill = FetchCounts()
        self._evictions_before = 0
        self.max_cache_bytes = 0
        self.max_staged_bytes = 0

    def start_epoch(self, epoch: int) -> None:
        self._fill = FetchCounts()
        if self._restore is not None:  # resumed: pull the checkpointed cache back in
            nodes, self._restore = self._restore, None
            rows, self._fill = self.ctx.store.fetch_remote(nodes)
            self.cache.insert(nodes, rows)
        self._evictions_before = self.cache.evictions
        self.max_cache_bytes = max(self.max_cache_bytes, self.cache.nbytes)
        seeds = self.epoch_seeds(epoch)
        self._prefetcher = Prefetcher(
            lambda step: self._prepare(epoch, step, seeds[step]), len(seeds), self.depth,
            name=f"bgl-prefetch-e{epoch}",
            size_of=lambda p: p.features.numel() * p.features.element_size())

    # -- the producer (background thread) ------------------------------------------------
    def _prepare(self, epoch: int, step: int, seeds: np.ndarray) -> PreparedBatch:
        """Sample step ``step`` and resolve its features: local rows read, remote rows from
        the FIFO cache, misses pulled (one request per owner) and inserted."""
        ctx = self.ctx
        t0 = time.perf_counter()
        batch, sampling = self.sample(epoch, step, seeds)
        t1 = time.perf_counter()
        nodes = batch.input_nodes.to(torch.int64)
        out, local = ctx.store.local_part(nodes)
        features = out.to(ctx.device)
        remote_pos = torch.nonzero(~local).flatten()
        slots, hit = self.cache.lookup(nodes[remote_pos])
        hit_pos = remote_pos[hit]
        if hit_pos.numel():
            features[hit_pos.to(features.device)] = self.cache.gather(slots[hit])
        miss_pos = remote_pos[~hit]
        rows, counts = ctx.store.fetch_remote(nodes[miss_pos])
        rows = rows.to(ctx.device)
        features[miss_pos.to(features.device)] = rows
        evicted = self.cache.insert(nodes[miss_pos], rows)
        counts.local_rows = int(local.sum())
        self.max_cache_bytes = max(self.max_cache_bytes, self.cache.nbytes)
        return PreparedBatch(step=step, batch=batch.to(ctx.device), features=features,
                             labels=ctx.labels_of(batch.seeds), sample_s=t1 - t0,
                             counts=counts, sampling=sampling,
                             cache_hits=int(hit_pos.numel()),
                             cache_misses=int(miss_pos.numel()),
                             extra={"fifo_evictions": evicted,
                                    "producer_fetch_s": time.perf_counter() - t1})

    # -- the trainer -----------------------------------------------------------------------
    def batches(self, epoch: int) -> Iterator[PreparedBatch]:
        assert self._prefetcher is not None, "start_epoch() not called"
        for _ in range(self._prefetcher.count):
            prepared, waited = self._prefetcher.get()
            prepared.fetch_wait_s = waited
            yield prepared

    def _stop_epoch(self) -> None:
        if self._prefetcher is not None:
            self._prefetcher.close()
            self.max_staged_bytes = max(self.max_staged_bytes,
                                        self._prefetcher.max_staged_bytes)
            self._prefetcher = None

    def end_epoch(self, epoch: int) -> dict:
        self._stop_epoch()
        fill = self._fill
        return {
            "fifo_evictions": self.cache.evictions - self._evictions_before,
            "cache_rows_held": self.cache.size,
            "cache_bytes_max": self.max_cache_bytes,
            "staged_bytes_max": self.max_staged_bytes,
            "fill_resume_rows": fill.remote_rows,
            "extra_remote_rpcs": fill.remote_rpcs,
            "extra_remote_rows": fill.remote_rows,
            "extra_remote_bytes": fill.remote_bytes,
        }

    def state_dict(self) -> dict:
        """The cached node ids in FIFO order (the rows are pulled again on resume)."""
        return {"fifo_nodes": self.cache.fifo_order()}

    def load_state_dict(self, state: dict) -> None:
        nodes = state.get("fifo_nodes") if state else None
        if nodes is not None and nodes.numel():
            self._restore = nodes.to(torch.int64)

    def close(self) -> None:
        self._stop_epoch()
