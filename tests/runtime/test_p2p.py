"""Point-to-point exchange (commgnn.runtime.p2p) among real gloo processes, direct and staged
through host memory (the shared-GPU path; on the CPU it stages through fresh host
buffers all the same)."""

from __future__ import annotations

import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from commgnn.runtime.p2p import exchange

pytestmark = pytest.mark.timeout(120)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, via_host: bool, results) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    mine = torch.arange(6, dtype=torch.float32).reshape(2, 3)[:, :2] + 10 * rank  # strided
    sends = {peer: mine for peer in range(world) if peer != rank}  # one tensor, every peer
    receives = {peer: torch.full((2, 2), -1.0) for peer in range(world) if peer != rank}
    kept = dict(receives)
    exchange(sends, receives, via_host=via_host)
    results[rank] = {peer: kept[peer].tolist() for peer in kept}
    exchange({}, {}, via_host=via_host)  # nothing to do: returns at once
    dist.destroy_process_group()


@pytest.mark.parametrize("via_host", [False, True])
def test_every_worker_gets_each_peers_tensor_in_its_own_buffer(via_host):
    results = mp.Manager().dict()
    mp.spawn(_worker, args=(3, _free_port(), via_host, results), nprocs=3)
    block = torch.arange(6, dtype=torch.float32).reshape(2, 3)[:, :2]
    for rank in range(3):
        assert results[rank] == {peer: (block + 10 * peer).tolist()
                                 for peer in range(3) if peer != rank}
