"""Point-to-point tensor exchange that works on every device plan.

Under NCCL (one GPU per worker) and on the CPU the tensors go to the backend as they are.
Where workers share a GPU the process group is gloo (:mod:`commgnn.runtime.devices`), whose
send and receive cannot read device memory (``gloo … writev … Bad address``): each tensor
sent is copied to host memory first, each one received lands in a host buffer and is
copied to its device tensor after the exchange. The bytes on the wire are the same either
way, so communication counts do not depend on the path.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch
import torch.distributed as dist


def exchange(sends: Mapping[int, torch.Tensor], receives: Mapping[int, torch.Tensor],
             via_host: bool = False) -> None:
    """Send ``sends[peer]`` to each peer and fill ``receives[peer]`` from each, as one
    batch (NCCL would otherwise order each rank's send before its receive); returns when
    every transfer is done. ``via_host``: stage device tensors through host memory."""
    copies: dict[int, torch.Tensor] = {}  # one host copy of a tensor sent to several peers

    def staged(tensor: torch.Tensor) -> torch.Tensor:
        if id(tensor) not in copies:
            copies[id(tensor)] = _host(tensor)
        return copies[id(tensor)]

    outgoing = {peer: staged(t) if via_host else t.contiguous() for peer, t in sends.items()}
    landing = {peer: torch.empty(t.shape, dtype=t.dtype) if via_host else t
               for peer, t in receives.items()}
    ops = [dist.P2POp(dist.isend, t, peer) for peer, t in outgoing.items()]
    ops += [dist.P2POp(dist.irecv, t, peer) for peer, t in landing.items()]
    if not ops:
        return
    for work in dist.batch_isend_irecv(ops):
        work.wait()
    for peer, target in receives.items():
        if landing[peer] is not target:
            target.copy_(landing[peer])


def _host(tensor: torch.Tensor) -> torch.Tensor:
    """A contiguous host copy of ``tensor`` (a copy on the CPU too: the staged path is the
    same on every device, so the CPU tests exercise it)."""
    return tensor.detach().to("cpu", copy=True).contiguous()
