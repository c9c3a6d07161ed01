"""Partitioned node features served over ``torch.distributed.rpc`` (TensorPipe).

Each worker holds the feature rows of the nodes it owns (in the partition book's local-id
order) and serves them to its peers. :meth:`FeatureStore.fetch` reads local rows directly
and pulls remote rows with **one request per owner per call**, issued asynchronously and
gathered, counting RPCs, rows and bytes per owner and keeping recent round-trip times.

Network emulation: every pull pays each owner link's emulated round trip as a real wait
on the calling thread (see :mod:`commgnn.network.netem`), after the RPCs are issued. The
round trips are charged one after another: the responses share the requester's one NIC,
so their bytes serialise; this over-counts only the per-request latency when several
owners answer at once. The owners are taken in turn from the requester's successor on
(:func:`commgnn.network.nic.in_turn`), so the requesters of an all-to-all fetch ask
different owners at once instead of all queueing on the first owner's egress. The
round-trip time recorded per owner (``FetchCounts.rtt_s``, the ``recent_rtt_s`` window)
is that owner's own turn — from the previous owner's answer to its own — so a congested
owner does not inflate the times of the owners after it (GreenDyGNN's per-owner
congestion estimates read them).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable

import numpy as np
import torch
from torch.distributed import rpc

from commgnn.core.counts import FetchCounts
from commgnn.network.netem import FETCH, NetworkEmulator, in_turn

ID_BYTES = 8  # int64 local ids in a request

_SERVED: dict[str, torch.Tensor] = {}


def worker_name(rank: int) -> str:
    return f"worker{rank}"


def _serve_rows(local_ids: torch.Tensor, table: str = "features") -> torch.Tensor:
    """RPC target: this worker's rows of ``table`` for ``local_ids``."""
    return _SERVED[table].index_select(0, local_ids)


def serve_features(local_features: torch.Tensor, table: str = "features") -> None:
    """Make this process answer :func:`_serve_rows` for ``table`` with ``local_features``."""
    _SERVED[table] = local_features


class FeatureStore:
    """Local rows plus RPC pulls of remote rows, with exact communication counts.

    ``table`` names the served rows, so a process can serve more than one store (the
    loop's, keyed by the partition book, and e.g. Grappa's chunk homes); every process of
    the run builds the same tables."""

    def __init__(self, rank: int, owner: np.ndarray, local_id: np.ndarray,
                 local_features: torch.Tensor, emulator: NetworkEmulator,
                 rpc_timeout_s: float, rtt_window: int = 64, table: str = "features") -> None:
        self.rank = rank
        self.owner = torch.from_numpy(np.ascontiguousarray(owner, dtype=np.int64))
        self.local_id = torch.from_numpy(np.ascontiguousarray(local_id, dtype=np.int64))
        self.local_features = local_features
        self.feature_dim = int(local_features.shape[1])
        self.row_bytes = self.feature_dim * local_features.element_size()
        self.emulator = emulator
        self.rpc_timeout_s = rpc_timeout_s
        self._lock = threading.Lock()
        self.rtt: dict[int, deque[float]] = {}
        self._rtt_window = rtt_window
        self.table = table
        serve_features(local_features, table)

    def pull(self, nodes_by_owner: dict[int, torch.Tensor], traffic: str = FETCH
             ) -> tuple[dict[int, torch.Tensor], FetchCounts]:
        """Fetch the rows of remote ``nodes`` (global ids), one RPC per owner, in parallel,
        charged to the emulated network as ``traffic``.

        Returns the rows per owner (in the order given) and the exact counts.
        """
        counts = FetchCounts()
        if not nodes_by_owner:
            return {}, counts
        start = time.perf_counter()
        futures = {}
        for owner, nodes in nodes_by_owner.items():
            local_ids = self.local_id[nodes]
            futures[owner] = rpc.rpc_async(worker_name(owner), _serve_rows,
                                           args=(local_ids, self.table),
                                           timeout=self.rpc_timeout_s)
            n = int(nodes.shape[0])
            counts.remote_rpcs += 1
            counts.remote_rows += n
            counts.remote_bytes += n * self.row_bytes
            counts.per_owner_rows[owner] = n
        rows = {}
        turn = start
        for owner in in_turn(self.rank, counts.per_owner_rows):
            n = counts.per_owner_rows[owner]
            # responses share this worker's ingress: the NIC model serialises their bytes
            self.emulator.charge_request(self.rank, owner, n * ID_BYTES, n * self.row_bytes,
                                         traffic=traffic)
            rows[owner] = futures[owner].wait()
            now = time.perf_counter()
            counts.rtt_s[owner] = now - turn  # this owner's own round trip (see module doc)
            turn = now
        with self._lock:
            for owner, rtt in counts.rtt_s.items():
                self.rtt.setdefault(owner, deque(maxlen=self._rtt_window)).append(rtt)
        return rows, counts

    def fetch_remote(self, nodes: torch.Tensor, traffic: str = FETCH
                     ) -> tuple[torch.Tensor, FetchCounts]:
        """Rows of remote ``nodes`` (global ids, any order, none owned here), in order.

        The grouped fetch every system uses: nodes are grouped by owner, each owner gets
        one request (:meth:`pull`), and the answers are scattered back into ``nodes``'
        order.
        """
        nodes = nodes.to("cpu", torch.int64)  # ids index host tables, whatever the device
        out = torch.empty((nodes.shape[0], self.feature_dim), dtype=self.local_features.dtype)
        if nodes.numel() == 0:
            return out, FetchCounts()
        owners = self.owner[nodes]
        by_owner, positions = {}, {}
        for owner in torch.unique(owners).tolist():
            if owner == self.rank:
                raise ValueError(f"fetch_remote: node owned by this worker ({owner})")
            pos = torch.nonzero(owners == owner).flatten()
            by_owner[owner] = nodes[pos]
            positions[owner] = pos
        rows, counts = self.pull(by_owner, traffic)
        for owner, block in rows.items():
            out[positions[owner]] = block
        return out, counts

    def fetch(self, nodes: torch.Tensor) -> tuple[torch.Tensor, FetchCounts]:
        """Feature rows for ``nodes`` (global ids, any order): local read + remote pull."""
        nodes = nodes.to(torch.int64)
        out, local = self.local_part(nodes)
        remote_pos = torch.nonzero(~local).flatten()
        rows, counts = self.fetch_remote(nodes[remote_pos])
        out[remote_pos] = rows
        counts.local_rows = int(local.sum())
        return out, counts

    def fetch_cached(self, nodes: torch.Tensor, local: torch.Tensor,
                     slots_of: Callable[[torch.Tensor], torch.Tensor],
                     cached_rows: torch.Tensor, device: torch.device
                     ) -> tuple[torch.Tensor, FetchCounts, int, int]:
        """Rows of ``nodes`` on ``device``, cache first: ``local`` (a bool mask) rows read
        here, remote rows from ``cached_rows[slots_of(remote nodes)]`` where the slot is
        not -1, the misses pulled (:meth:`fetch_remote`, one request per owner).

        Returns the rows, the counts of the pull (``local_rows`` set), and the numbers of
        cache hits and misses."""
        features = torch.empty((nodes.numel(), self.feature_dim), dtype=cached_rows.dtype,
                               device=device)
        local_pos = torch.nonzero(local).flatten()
        features[local_pos] = self.local_features.index_select(
            0, self.local_id[nodes[local_pos]]).to(device)
        remote_pos = torch.nonzero(~local).flatten()
        slots = slots_of(nodes[remote_pos])
        hit = slots >= 0
        features[remote_pos[hit]] = cached_rows[slots[hit].to(cached_rows.device)]
        miss_pos = remote_pos[~hit]
        rows, counts = self.fetch_remote(nodes[miss_pos])
        features[miss_pos] = rows.to(device)
        counts.local_rows = int(local_pos.numel())
        return features, counts, int(hit.sum()), int(miss_pos.numel())

    def local_part(self, nodes: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Rows for ``nodes`` with the locally held ones filled in, and the local mask
        (the other rows are left for the caller)."""
        nodes = nodes.to("cpu")
        out = torch.empty((nodes.shape[0], self.feature_dim), dtype=self.local_features.dtype)
        local = self.owner[nodes] == self.rank
        out[local] = self.local_features.index_select(0, self.local_id[nodes[local]])
        return out, local

    def recent_rtt_s(self, owner: int) -> float | None:
        with self._lock:
            window = self.rtt.get(owner)
            return float(np.mean(window)) if window else None


class LocalFeatureStore:
    """All features in this process, no communication: the ``oracle`` lower bound."""

    def __init__(self, features: torch.Tensor) -> None:
        self.features = features
        self.feature_dim = int(features.shape[1])

    def fetch(self, nodes: torch.Tensor) -> tuple[torch.Tensor, FetchCounts]:
        nodes = nodes.to("cpu")
        return self.features.index_select(0, nodes), FetchCounts(local_rows=int(nodes.numel()))
