"""Distributed neighbour sampling as DistDGL does it: a worker samples the rows of the nodes
its partition owns and asks each owner, by RPC, for the sampled rows of the others.

Each worker serves sampling requests for the nodes it owns (:func:`serve_adjacency`).
For every layer of a batch, :class:`DistributedSampler` samples its own destinations
locally and sends one request per owner of the remaining ones; the owner draws their rows
with the same keyed stream (:meth:`NeighborSampler.sample_rows` — a draw depends only on
(seed, layer, node, t)), so the batch is bit-identical to replicated sampling and only
the traffic differs. That traffic is the ``sampling`` class, charged through the
emulated network as a round trip per (layer, owner), and counted exactly:

- request: ``8`` bytes per node id + a header (fan-out, seed, layer:
  :data:`~commgnn.sampling.traffic.REQUEST_HEADER_BYTES`);
- response: the row pointer (``8 · (n + 1)`` bytes) and the neighbours (``8`` each).

``rows`` counts the destination nodes whose rows crossed the network. The worker keeps
the whole CSR memory-mapped (it is one file) but reads only its own rows; evaluation
still samples from the full CSR (its traffic is outside the training metrics).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import torch
from torch.distributed import rpc

from commgnn.core.blocks import MiniBatch
from commgnn.core.counts import FetchCounts
from commgnn.network.netem import SAMPLING, NetworkEmulator, in_turn
from commgnn.runtime.feature_store import worker_name
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.traffic import count_request, request_bytes, response_bytes

_SERVED: dict[str, NeighborSampler] = {}


def serve_adjacency(sampler: NeighborSampler) -> None:
    """Make this process answer :func:`_sample_rows_rpc` from ``sampler``'s graph."""
    _SERVED["sampler"] = sampler


def _sample_rows_rpc(nodes: torch.Tensor, fanout: int, seed: int,
                     layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    """RPC target: the sampled rows of ``nodes`` (owned here) for one layer."""
    offsets, edges = _SERVED["sampler"].sample_rows(nodes.numpy(), fanout, seed, layer)
    return torch.from_numpy(offsets), torch.from_numpy(edges)


class DistributedSampler(NeighborSampler):
    """A :class:`NeighborSampler` that samples only owned rows and fetches the rest."""

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, fanouts, owner: np.ndarray,
                 rank: int, emulator: NetworkEmulator, rpc_timeout_s: float) -> None:
        super().__init__(indptr, indices, fanouts)
        self.owner = np.ascontiguousarray(owner, dtype=np.int64)
        self.rank = int(rank)
        self.emulator = emulator
        self.rpc_timeout_s = rpc_timeout_s
        self._counts: FetchCounts | None = None

    def sample_counted(self, seeds: np.ndarray | torch.Tensor,
                       seed: int) -> tuple[MiniBatch, FetchCounts]:
        """:meth:`sample` plus the exact sampling traffic it caused."""
        self._counts = counts = FetchCounts()
        try:
            batch = self.sample(seeds, seed)
        finally:
            self._counts = None
        return batch, counts

    def _layer_rows(self, nodes: np.ndarray, fanout: int, seed: int,
                    layer: int) -> tuple[np.ndarray, np.ndarray]:
        owners = self.owner[nodes]
        groups = {int(o): np.flatnonzero(owners == o) for o in np.unique(owners)}
        futures = {}
        start = time.perf_counter()
        for owner, pos in groups.items():
            if owner != self.rank:
                futures[owner] = rpc.rpc_async(
                    worker_name(owner), _sample_rows_rpc,
                    args=(torch.from_numpy(nodes[pos]), int(fanout), int(seed), int(layer)),
                    timeout=self.rpc_timeout_s)
        rows: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        if self.rank in groups:
            rows[self.rank] = self.sample_rows(nodes[groups[self.rank]], fanout, seed, layer)
        counts = self._counts if self._counts is not None else FetchCounts()
        for owner in in_turn(self.rank, futures):
            future = futures[owner]
            n = int(groups[owner].shape[0])
            offsets, edges = (t.numpy() for t in future.wait())
            self.emulator.charge_request(self.rank, owner, request_bytes(n),
                                         response_bytes(n, int(edges.shape[0])),
                                         traffic=SAMPLING)
            rows[owner] = (offsets, edges)
            count_request(counts, n, int(edges.shape[0]))
            counts.rtt_s[owner] = time.perf_counter() - start
        return _merge(nodes.shape[0], groups, rows)


def _merge(num_dst: int, groups: dict[int, np.ndarray],
           rows: dict[int, tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Per-owner rows back into destination order: one CSR row pointer and edge array."""
    degrees = np.empty(num_dst, dtype=np.int64)
    for owner, pos in groups.items():
        degrees[pos] = np.diff(rows[owner][0])
    offsets = np.zeros(num_dst + 1, dtype=np.int64)
    np.cumsum(degrees, out=offsets[1:])
    edges = np.empty(int(offsets[-1]), dtype=np.int64)
    for owner, pos in groups.items():
        row_ptr, owner_edges = rows[owner]
        # edge i of the owner's row k goes to offsets[pos[k]] + (i - row_ptr[k])
        shift = np.repeat(offsets[pos] - row_ptr[:-1], np.diff(row_ptr))
        edges[shift + np.arange(owner_edges.shape[0])] = owner_edges
    return offsets, edges


def counted_sampler(sampler: NeighborSampler, how: str, owner: np.ndarray, rank: int,
                    emulator: NetworkEmulator, rpc_timeout_s: float
                    ) -> Callable[[np.ndarray, int], tuple[MiniBatch, FetchCounts]]:
    """``(seeds, seed) -> (batch, sampling traffic)`` sampled ``how``:
    ``distributed`` (a :class:`DistributedSampler` over ``sampler``'s graph) or
    ``replicated`` (``sampler`` itself, free)."""
    if how == "replicated":
        return lambda seeds, seed: (sampler.sample(seeds, seed), FetchCounts())
    return DistributedSampler(sampler.indptr, sampler.indices, sampler.fanouts, owner, rank,
                              emulator, rpc_timeout_s).sample_counted
