"""Seeded uniform neighbour sampling into DGL-style blocks (numba kernels).

Layout
------
``fanouts[l]`` is the fan-out of ``blocks[l]`` (``blocks[0]`` is the input layer).
Sampling runs from the output layer backwards: ``blocks[-1]``'s destinations are the
seeds, and each block's destinations are the previous (higher) block's sources. As in
DGL's ``to_block``, a block's sources are its destinations (same order) followed by the
newly discovered neighbours in order of first appearance, scanning destinations in order
and each destination's sampled neighbours in order. Consequently the node lists are
nested prefixes of one list, ``input_nodes``: ``blocks[l]``'s sources are
``input_nodes[:blocks[l].num_src]`` and the seeds are ``input_nodes[:len(seeds)]``; one
global-to-local map serves every layer, and local ids are positions in ``input_nodes``.

Sampling rule (exact specification, reproduced by the pure-Python reference in tests)
------------------------------------------------------------------------------------
Per destination ``v`` (global id) of block ``l`` with degree ``d`` and fan-out ``k``:

* ``k == -1`` or ``d <= k``: all neighbours, in CSR order.
* otherwise Floyd's algorithm draws a uniform ``k``-subset of positions ``[0, d)``: for
  ``t = 0 .. k-1`` with ``j = d - k + t``: ``x = bounded(draw_t, j + 1)``; if ``x`` was
  already chosen, take ``j`` instead. The positions are sorted ascending and mapped to
  ``indices[indptr[v] + pos]``, so a sample is a subsequence of ``v``'s neighbour list.

``draw_t = stream_draw(node_key, t)`` with ``node_key = stream_draw(layer_key, v)`` and
``layer_key = stream_draw(mix64(seed), l)`` (see :mod:`commgnn.sampling.seeds`). Every
draw is a pure function of ``(seed, l, v, t)``, so the result depends only on the graph,
the seeds, the fan-outs and ``seed``: not on thread count, call order or history.

Threads and memory: kernels release the GIL and the global-to-local map (an int64 array of
``num_nodes`` entries, tagged with a per-call stamp so it never needs clearing) is kept per
Python thread, so one sampler may be used from several threads at once (e.g. presampling
batches in a thread pool); each sampling thread holds ``8 * num_nodes`` bytes of scratch.
``parallel=True`` additionally splits each layer's per-node draws over numba threads
(``prange``); relabelling stays sequential. Prefer Python-level parallelism across batches
when cores are scarce; with numba's ``workqueue`` threading layer, do not combine
``parallel=True`` with concurrent calls from several Python threads.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import llvmlite.binding as llvm_binding
import numpy as np
import torch
from llvmlite import ir
from numba import njit, prange, types
from numba.core import cgutils
from numba.extending import intrinsic

from commgnn.core.blocks import Block, MiniBatch
from commgnn.sampling.seeds import as_uint64, bounded, mix64, stream_draw

# Software-prefetch lookahead: rows ahead in `_resolve`, items ahead in single-load loops.
_ROW_AHEAD = 8
_ITEM_AHEAD = 32
_CHUNK = 2048  # rows per parallel work item
_PREFETCH_NAME = ("llvm.prefetch.p0" if llvm_binding.llvm_version_info[0] >= 15
                  else "llvm.prefetch.p0i8")


@intrinsic
def _prefetch(typingctx, arr, idx):
    """Hint the CPU to fetch ``arr[idx]`` into cache (no bounds check, no effect on results)."""
    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]],
                                       wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, _PREFETCH_NAME)
        # read, high temporal locality, data cache
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])
        return context.get_dummy_value()
    return types.void(arr, idx), codegen


@njit(cache=True, nogil=True, inline="always")
def _row_positions(deg, fanout, key, out, pos):
    """Write the sampled positions (in ``[0, deg)``, ascending) into ``out[pos:...]``."""
    if fanout < 0 or deg <= fanout:
        for t in range(deg):
            out[pos + t] = t
        return
    # Floyd's algorithm; chosen positions kept sorted in out[pos:pos + m].
    for m in range(fanout):
        j = deg - fanout + m
        x = np.int64(bounded(stream_draw(key, np.uint64(m)), np.uint64(j + 1)))
        for q in range(m):
            if out[pos + q] == x:
                x = j
                break
        p = m
        while p > 0 and out[pos + p - 1] > x:
            out[pos + p] = out[pos + p - 1]
            p -= 1
        out[pos + p] = x


@njit(cache=True, nogil=True)
def _rows(indptr, nodes, num_dst, fanout):
    """Row starts and degrees of the destinations, and the block's CSR row pointer."""
    starts = np.empty(num_dst, dtype=np.int64)
    degs = np.empty(num_dst, dtype=np.int64)
    offsets = np.empty(num_dst + 1, dtype=np.int64)
    for j in range(num_dst):
        if j + _ITEM_AHEAD < num_dst:
            _prefetch(indptr, nodes[j + _ITEM_AHEAD])
        v = nodes[j]
        starts[j] = indptr[v]
        degs[j] = indptr[v + 1] - indptr[v]
    offsets[0] = 0
    total = 0
    for j in range(num_dst):
        deg = degs[j]
        if fanout >= 0 and deg > fanout:
            deg = fanout
        total += deg
        offsets[j + 1] = total
    return starts, degs, offsets


@njit(cache=True, nogil=True)
def _positions(nodes, degs, offsets, fanout, layer_key, out, lo, hi):
    """Draw the sampled positions of rows ``lo..hi-1`` (compute-bound)."""
    for j in range(lo, hi):
        key = stream_draw(layer_key, np.uint64(nodes[j]))
        _row_positions(degs[j], fanout, key, out, offsets[j])


@njit(cache=True, nogil=True)
def _resolve(indices, starts, offsets, out, lo, hi):
    """Positions -> global neighbour ids for rows ``lo..hi-1`` (memory-bound, prefetched)."""
    for j in range(lo, hi):
        ahead = j + _ROW_AHEAD
        if ahead < hi:
            base = starts[ahead]
            for e in range(offsets[ahead], offsets[ahead + 1]):
                _prefetch(indices, base + out[e])
        base = starts[j]
        for e in range(offsets[j], offsets[j + 1]):
            out[e] = indices[base + out[e]]


@njit(cache=True, nogil=True)
def _sample_seq(indices, nodes, starts, degs, offsets, fanout, seed, layer, out):
    layer_key = stream_draw(mix64(seed), np.uint64(layer))
    num_dst = starts.shape[0]
    _positions(nodes, degs, offsets, fanout, layer_key, out, 0, num_dst)
    _resolve(indices, starts, offsets, out, 0, num_dst)


@njit(cache=True, nogil=True, parallel=True)
def _sample_par(indices, nodes, starts, degs, offsets, fanout, seed, layer, out):
    layer_key = stream_draw(mix64(seed), np.uint64(layer))
    num_dst = starts.shape[0]
    num_chunks = (num_dst + _CHUNK - 1) // _CHUNK
    for c in prange(num_chunks):
        lo = c * _CHUNK
        hi = min(num_dst, lo + _CHUNK)
        _positions(nodes, degs, offsets, fanout, layer_key, out, lo, hi)
        _resolve(indices, starts, offsets, out, lo, hi)


_LOCAL_MASK = np.int64(0xFFFFFFFF)
_MAX_STAMP = (1 << 31) - 1


@njit(cache=True, nogil=True)
def _register_seeds(seeds, scratch, stamp, order):
    """Map seeds to positions ``0..n-1``; return the index of a duplicate or -1.

    ``scratch[u] == (stamp << 32) | local`` marks ``u`` as known in the current call, so
    the map never needs clearing (each call uses a new stamp).
    """
    tag = stamp << 32
    for i in range(seeds.shape[0]):
        u = seeds[i]
        if (scratch[u] >> 32) == stamp:
            return i
        scratch[u] = tag | i
        order[i] = u
    return -1


@njit(cache=True, nogil=True)
def _relabel(edges, scratch, stamp, order, num_known):
    """Global ids -> local positions in place, appending new nodes to ``order``.

    Sequential by design: first-appearance order defines the local ids.
    """
    tag = stamp << 32
    num_edges = edges.shape[0]
    for e in range(num_edges):
        if e + _ITEM_AHEAD < num_edges:
            _prefetch(scratch, edges[e + _ITEM_AHEAD])
        u = edges[e]
        s = scratch[u]
        if (s >> 32) == stamp:
            edges[e] = s & _LOCAL_MASK
        else:
            scratch[u] = tag | num_known
            order[num_known] = u
            edges[e] = num_known
            num_known += 1
    return num_known


class NeighborSampler:
    """Uniform neighbour sampling without replacement over a CSR graph.

    ``indptr``/``indices`` follow :mod:`commgnn.data.store` (``indices[indptr[v]:indptr[v+1]]``
    are ``v``'s in-neighbours); int64 arrays (or read-only memory maps) are used without
    copying, other integer dtypes are converted. ``fanouts[l]`` is the fan-out of
    ``blocks[l]`` (``-1``: all neighbours; ``0``: none). ``parallel`` draws the per-node
    samples with ``numba.prange``; results are bit-identical either way.
    """

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, fanouts: Sequence[int],
                 parallel: bool = False) -> None:
        self.indptr = np.ascontiguousarray(np.asarray(indptr), dtype=np.int64)
        self.indices = np.ascontiguousarray(np.asarray(indices), dtype=np.int64)
        if self.indptr.ndim != 1 or self.indptr.shape[0] < 1 or self.indices.ndim != 1:
            raise ValueError("indptr and indices must be 1-D and indptr non-empty")
        if self.indptr[0] != 0 or self.indptr[-1] != self.indices.shape[0]:
            raise ValueError(f"indptr does not span indices ({self.indptr[0]}..{self.indptr[-1]}"
                             f" vs {self.indices.shape[0]} entries)")
        if self.num_nodes >= 1 << 31:
            raise ValueError("graphs with 2**31 or more nodes are not supported")
        if self.num_nodes and int(np.diff(self.indptr).max()) >= 1 << 32:
            raise ValueError("node degrees must be below 2**32")
        self.fanouts = [int(k) for k in fanouts]
        if not self.fanouts or any(k < -1 for k in self.fanouts):
            raise ValueError(f"fanouts must be a non-empty list of ints >= -1, got {fanouts!r}")
        self.parallel = bool(parallel)
        self._local = threading.local()

    @property
    def num_nodes(self) -> int:
        return int(self.indptr.shape[0] - 1)

    @property
    def num_layers(self) -> int:
        return len(self.fanouts)

    def sample(self, seeds: np.ndarray | torch.Tensor, seed: int) -> MiniBatch:
        """Sample the blocks of ``seeds`` (distinct global ids) with PRNG seed ``seed``.

        ``seed`` is any int (reduced mod ``2**64``), normally
        :func:`~commgnn.sampling.seeds.batch_seed` ``(s_0, w, e, i)``.
        """
        return self._sample(seeds, self.fanouts, seed)

    def sample_full(self, seeds: np.ndarray | torch.Tensor, num_layers: int) -> MiniBatch:
        """Full ``num_layers``-hop neighbourhood blocks (evaluation); same layout."""
        if num_layers < 1:
            raise ValueError(f"num_layers must be >= 1, got {num_layers}")
        return self._sample(seeds, [-1] * int(num_layers), 0)

    def sample_rows(self, nodes: np.ndarray, fanout: int, seed: int,
                    layer: int) -> tuple[np.ndarray, np.ndarray]:
        """The sampled in-neighbours of ``nodes`` in layer ``layer`` of a batch sampled with
        ``seed``: a CSR row pointer and the neighbours' global ids (the rows
        :meth:`sample` draws for these destinations; a pure function of the arguments)."""
        nodes = np.ascontiguousarray(nodes, dtype=np.int64)
        starts, degs, offsets = _rows(self.indptr, nodes, int(nodes.shape[0]), int(fanout))
        edges = np.empty(int(offsets[-1]), dtype=np.int64)
        sample_rows = _sample_par if self.parallel else _sample_seq
        sample_rows(self.indices, nodes, starts, degs, offsets, int(fanout), as_uint64(seed),
                    int(layer), edges)
        return offsets, edges

    def _layer_rows(self, nodes: np.ndarray, fanout: int, seed: int,
                    layer: int) -> tuple[np.ndarray, np.ndarray]:
        """One layer's rows for destinations ``nodes`` (subclasses fetch remote rows)."""
        return self.sample_rows(nodes, fanout, seed, layer)

    def _scratch(self) -> tuple[np.ndarray, int]:
        """This thread's global-to-local map and a fresh stamp for one call."""
        local = self._local
        scratch = getattr(local, "scratch", None)
        stamp = getattr(local, "stamp", 0) + 1
        if scratch is None or stamp > _MAX_STAMP:
            scratch = np.zeros(self.num_nodes, dtype=np.int64)
            local.scratch = scratch
            stamp = 1
        local.stamp = stamp
        return scratch, stamp

    def _sample(self, seeds, fanouts: Sequence[int], seed: int) -> MiniBatch:
        if isinstance(seeds, torch.Tensor):
            seeds = seeds.detach().cpu().numpy()
        seeds = np.ascontiguousarray(np.asarray(seeds), dtype=np.int64)
        if seeds.ndim != 1:
            raise ValueError(f"seeds must be 1-D, got shape {seeds.shape}")
        num_seeds = int(seeds.shape[0])
        if num_seeds and (seeds.min() < 0 or seeds.max() >= self.num_nodes):
            raise ValueError(f"seeds outside [0, {self.num_nodes})")
        scratch, stamp = self._scratch()
        order = np.empty(num_seeds, dtype=np.int64)
        dup = _register_seeds(seeds, scratch, stamp, order)
        if dup >= 0:
            raise ValueError(f"seeds contain duplicate node {seeds[dup]} (position {dup})")
        num_known = num_seeds
        blocks: list[Block] = []
        for layer in range(len(fanouts) - 1, -1, -1):
            fanout = fanouts[layer]
            num_dst = num_known
            offsets, edges = self._layer_rows(order[:num_dst], fanout, seed, layer)
            num_edges = int(offsets[-1])
            capacity = min(self.num_nodes, num_dst + num_edges)
            if capacity > order.shape[0]:
                grown = np.empty(capacity, dtype=np.int64)
                grown[:num_known] = order[:num_known]
                order = grown
            num_known = int(_relabel(edges, scratch, stamp, order, num_known))
            blocks.append(Block(num_src=num_known, num_dst=num_dst,
                                indptr=torch.from_numpy(offsets),
                                indices=torch.from_numpy(edges)))
        blocks.reverse()
        input_nodes = torch.from_numpy(order[:num_known].copy())
        return MiniBatch(seeds=torch.from_numpy(seeds.copy()), input_nodes=input_nodes,
                         blocks=blocks)
