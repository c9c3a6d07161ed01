"""What distributed neighbour sampling (:mod:`commgnn.runtime.remote_sampler`) sends:
exact request and response sizes, and the traffic of a batch counted without sending it
(the presample's count of what DistDGL-style sampling would have paid)."""

from __future__ import annotations

import numpy as np

from commgnn.core.blocks import MiniBatch
from commgnn.core.counts import FetchCounts

REQUEST_HEADER_BYTES = 24
ID_BYTES = 8


def request_bytes(num_nodes: int) -> int:
    return ID_BYTES * num_nodes + REQUEST_HEADER_BYTES


def response_bytes(num_nodes: int, num_edges: int) -> int:
    return ID_BYTES * (num_nodes + 1) + ID_BYTES * num_edges


def count_request(counts: FetchCounts, num_nodes: int, num_edges: int) -> None:
    """Add one sampling request for ``num_nodes`` rows holding ``num_edges`` neighbours."""
    counts.remote_rpcs += 1
    counts.remote_rows += num_nodes
    counts.remote_bytes += request_bytes(num_nodes) + response_bytes(num_nodes, num_edges)


def sampling_traffic(batch: MiniBatch, owner: np.ndarray, rank: int) -> FetchCounts:
    """The sampling traffic :class:`DistributedSampler` pays for ``batch`` on worker
    ``rank``: per layer, one request per owner of the layer's remote destinations."""
    counts = FetchCounts()
    nodes = batch.input_nodes.numpy()
    for block in batch.blocks:
        dst = nodes[:block.num_dst]
        degrees = np.diff(block.indptr.numpy())
        owners = owner[dst]
        for o in np.unique(owners[owners != rank]).tolist():
            mine = owners == o
            count_request(counts, int(mine.sum()), int(degrees[mine].sum()))
    return counts
