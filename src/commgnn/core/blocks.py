"""Message-flow graphs (blocks) and mini-batches, the unit every model consumes.

A :class:`Block` is one layer's bipartite graph, laid out as DGL's ``to_block`` does: the
layer's ``num_dst`` destination nodes are the first ``num_dst`` of its ``num_src`` source
nodes, so ``h_dst = h_src[:num_dst]``. Edges are stored CSR by destination: the sources of
destination ``j`` are ``indices[indptr[j]:indptr[j + 1]]`` (local source positions).

A :class:`MiniBatch` holds the blocks from input to output: ``blocks[0]`` consumes the
features of ``input_nodes`` (global ids, ``len == blocks[0].num_src``) and ``blocks[-1]``
produces one row per ``seeds`` entry (``blocks[-1].num_dst == len(seeds)``). For each
``l``, ``blocks[l].num_dst == blocks[l + 1].num_src``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch


@dataclass
class Block:
    """One layer of a message-flow graph (CSR by destination, local ids)."""

    num_src: int
    num_dst: int
    indptr: torch.Tensor  # int64, (num_dst + 1,)
    indices: torch.Tensor  # int64, (num_edges,), values in [0, num_src)

    @property
    def num_edges(self) -> int:
        return int(self.indices.shape[0])

    def in_degrees(self) -> torch.Tensor:
        return self.indptr[1:] - self.indptr[:-1]

    def dst_of_edges(self) -> torch.Tensor:
        """Destination position of every edge, aligned with ``indices``."""
        return torch.repeat_interleave(
            torch.arange(self.num_dst, device=self.indptr.device), self.in_degrees()
        )

    def to(self, device: torch.device | str) -> Block:
        return Block(self.num_src, self.num_dst, self.indptr.to(device), self.indices.to(device))

    @staticmethod
    def full_graph(indptr: np.ndarray | torch.Tensor, indices: np.ndarray | torch.Tensor) -> Block:
        """A block over a whole graph: every node is both a source and a destination."""
        indptr_t = torch.as_tensor(np.asarray(indptr), dtype=torch.int64)
        indices_t = torch.as_tensor(np.asarray(indices), dtype=torch.int64)
        n = int(indptr_t.shape[0] - 1)
        return Block(num_src=n, num_dst=n, indptr=indptr_t, indices=indices_t)


@dataclass
class MiniBatch:
    """Seeds, the input nodes whose features are needed, and the blocks between them."""

    seeds: torch.Tensor  # int64 global ids of output nodes
    input_nodes: torch.Tensor  # int64 global ids; seeds first, then other sources
    blocks: list[Block]

    def to(self, device: torch.device | str) -> MiniBatch:
        return MiniBatch(self.seeds.to(device), self.input_nodes.to(device),
                         [b.to(device) for b in self.blocks])
