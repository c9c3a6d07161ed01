"""Graph convolution layers over one :class:`~commgnn.core.blocks.Block`, in plain PyTorch.

Every layer is called as ``layer(block, h_src)`` where ``h_src`` has one row per block source
(``block.num_src`` rows) and returns one row per block destination (``block.num_dst`` rows).
Destinations are the first ``num_dst`` sources, so ``h_dst = h_src[:num_dst]``.

Aggregation uses only ``index_add_`` and ``scatter_reduce`` (no sparse kernels, no
``segment_reduce``), which run on CPU and CUDA; all intermediate tensors are created on the
input's device. ``index_add_`` is deterministic on CPU; on CUDA it uses atomics, so results
can differ in the last bits between runs there.

Self-loops (GCN, GAT)
    ``GCNConv`` and ``GATConv`` add one self-loop ``(j -> j)`` for every destination ``j``
    (source position ``j``, which is ``j`` itself by the block layout), *in addition to* the
    block's own edges. Dataset graphs carry no self-loops (see ``commgnn.data.store``), so on
    blocks sampled from them every destination gets exactly one self-loop. A block that
    already contains ``j`` among ``j``'s sources would get that edge twice.

GCN normalisation
    With ``Â = A + I`` (``A[j, u]`` = number of block edges ``u -> j``, ``I[j, j] = 1`` for
    ``j < num_dst``)::

        deg_in(j)  = sum_u Â[j, u] = in_degree(j) + 1          (destinations)
        deg_out(u) = sum_j Â[j, u] = #edges leaving u in the block + [u < num_dst]  (sources)
        h'_j       = sum_u Â[j, u] / sqrt(deg_in(j) * deg_out(u)) * (W h_u)  + b

    On ``Block.full_graph`` of a symmetric graph, ``deg_out == deg_in == deg(A) + 1`` for every
    node, so the operator is exactly Kipf & Welling's ``D̃^-1/2 (A + I) D̃^-1/2``. On a sampled
    block both degrees are those *within the block* (like DGL's ``GraphConv(norm='both')`` on
    a block), so they depend on the sample and differ from the full-graph degrees.
    ``norm='right'`` gives the random-walk form ``deg_in(j)^-1`` (a mean over ``j``'s sources
    including itself), which does not depend on other destinations' samples.

Diagonal enhancement (Cluster-GCN, Chiang et al. KDD 2019, eq. 10/11)
    With ``norm='right'`` and ``diag_lambda = λ``, the operator is ``Ã + λ diag(Ã)`` with
    ``Ã = (D + I)^-1 (A + I)``: the self-loop ``j -> j`` weighs ``(1 + λ) / deg_in(j)``, every
    other edge ``1 / deg_in(j)``. ``λ = 0`` is plain ``norm='right'``.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from commgnn.core.blocks import Block

__all__ = ["GATConv", "GCNConv", "SAGEConv", "block_edges", "edge_softmax"]


def _check_input(block: Block, h: Tensor) -> None:
    if h.shape[0] != block.num_src:
        raise ValueError(f"input has {h.shape[0]} rows but the block has {block.num_src} sources")
    if block.num_dst > block.num_src:
        raise ValueError(f"block has num_dst={block.num_dst} > num_src={block.num_src}")


def block_edges(block: Block, self_loops: bool = False) -> tuple[Tensor, Tensor]:
    """``(src, dst)`` local positions of every edge of ``block``, on the block's device.

    With ``self_loops`` one edge ``(j, j)`` per destination ``j`` is appended after the
    block's edges.
    """
    src = block.indices
    # As Block.dst_of_edges(), with output_size so that CUDA needs no host synchronisation.
    dst = torch.repeat_interleave(
        torch.arange(block.num_dst, device=src.device, dtype=src.dtype), block.in_degrees(),
        output_size=block.num_edges)
    if self_loops:
        loop = torch.arange(block.num_dst, device=src.device, dtype=src.dtype)
        src = torch.cat([src, loop])
        dst = torch.cat([dst, loop])
    return src, dst


def _scatter_sum(values: Tensor, index: Tensor, num_rows: int) -> Tensor:
    out = torch.zeros((num_rows, *values.shape[1:]), dtype=values.dtype, device=values.device)
    return out.index_add_(0, index, values)


def edge_softmax(scores: Tensor, dst: Tensor, num_dst: int) -> Tensor:
    """Softmax of per-edge ``scores`` (``(E, ...)``) over the incoming edges of each destination.

    Numerically stable: the per-destination maximum (``scatter_reduce(..., 'amax')``, detached,
    since softmax does not depend on it) is subtracted before exponentiating. Destinations
    without edges simply receive no weight.
    """
    if scores.shape[0] == 0:
        return scores
    idx = dst.view(-1, *([1] * (scores.dim() - 1))).expand_as(scores)
    neg_inf = torch.full((num_dst, *scores.shape[1:]), float("-inf"), dtype=scores.dtype,
                         device=scores.device)
    seg_max = neg_inf.scatter_reduce(0, idx, scores.detach(), reduce="amax", include_self=True)
    exp = torch.exp(scores - seg_max.index_select(0, dst))
    denom = _scatter_sum(exp, dst, num_dst)
    return exp / denom.index_select(0, dst)


class SAGEConv(nn.Module):
    """GraphSAGE layer, mean aggregator.

    ``h'_j = W_self h_j + W_neigh mean_{u -> j} h_u + b``; destinations without incoming
    edges get a zero neighbour mean (so ``h'_j = W_self h_j + b``). Parallel edges count with
    their multiplicity. No self-loop is added to the neighbourhood.
    """

    def __init__(self, in_dim: int, out_dim: int, bias: bool = True) -> None:
        super().__init__()
        self.in_dim, self.out_dim = in_dim, out_dim
        self.lin_self = nn.Linear(in_dim, out_dim, bias=False)
        self.lin_neigh = nn.Linear(in_dim, out_dim, bias=False)
        self.bias = nn.Parameter(torch.empty(out_dim)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.lin_self.weight)
        nn.init.xavier_uniform_(self.lin_neigh.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, block: Block, h: Tensor) -> Tensor:
        _check_input(block, h)
        src, dst = block_edges(block)
        # The mean is linear: project first when that shrinks the messages.
        project_first = self.out_dim < self.in_dim
        msg = self.lin_neigh(h) if project_first else h
        agg = _scatter_sum(msg.index_select(0, src), dst, block.num_dst)
        deg = block.in_degrees().clamp(min=1).to(agg.dtype).unsqueeze(-1)
        agg = agg / deg
        if not project_first:
            agg = self.lin_neigh(agg)
        out = self.lin_self(h[: block.num_dst]) + agg
        if self.bias is not None:
            out = out + self.bias
        return out

    def extra_repr(self) -> str:
        return f"{self.in_dim}, {self.out_dim}, aggregator=mean"


class GCNConv(nn.Module):
    """Kipf & Welling graph convolution on a block (self-loops added; see module docstring).

    ``norm='both'``: ``Â[j,u] / sqrt(deg_in(j) deg_out(u))`` (Kipf's symmetric normalisation on
    a full graph); ``norm='right'``: ``Â[j,u] / deg_in(j)``; ``norm='none'``: ``Â[j,u]``.
    ``diag_lambda`` (``norm='right'`` only): Cluster-GCN's diagonal enhancement, the
    self-loop weighs ``(1 + λ) / deg_in(j)`` (module docstring). ``norm`` and
    ``diag_lambda`` are plain attributes (no parameters): a system may set them on a built
    model (Cluster-GCN does). Weights use Glorot-uniform initialisation, the bias starts at
    zero.
    """

    NORMS = ("both", "right", "none")

    def __init__(self, in_dim: int, out_dim: int, bias: bool = True, norm: str = "both",
                 diag_lambda: float = 0.0) -> None:
        super().__init__()
        if norm not in self.NORMS:
            raise ValueError(f"GCNConv norm must be one of {self.NORMS}, got {norm!r}")
        self.in_dim, self.out_dim, self.norm = in_dim, out_dim, norm
        self.diag_lambda = float(diag_lambda)
        self._check_diag()
        self.weight = nn.Parameter(torch.empty(in_dim, out_dim))
        self.bias = nn.Parameter(torch.empty(out_dim)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.weight)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def _check_diag(self) -> None:
        if self.diag_lambda and self.norm != "right":
            raise ValueError(f"GCNConv diag_lambda (Cluster-GCN's diagonal enhancement) needs "
                             f"norm='right', got norm={self.norm!r}")

    def edge_weights(self, block: Block, src: Tensor, dst: Tensor, dtype: torch.dtype) -> Tensor:
        """Normalisation coefficient of every edge (``src``/``dst`` include the self-loops,
        the last ``block.num_dst`` edges, as :func:`block_edges` appends them)."""
        self._check_diag()
        if self.norm == "none":
            return torch.ones(src.shape[0], dtype=dtype, device=src.device)
        deg_in = (block.in_degrees() + 1).to(dtype)
        if self.norm == "right":
            weights = deg_in.reciprocal().index_select(0, dst)
            if self.diag_lambda:
                loops = weights.shape[0] - block.num_dst
                weights = torch.cat([weights[:loops], weights[loops:] * (1 + self.diag_lambda)])
            return weights
        deg_out = torch.bincount(src, minlength=block.num_src).to(dtype)
        return (deg_in.rsqrt().index_select(0, dst)
                * deg_out.clamp(min=1).rsqrt().index_select(0, src))

    def forward(self, block: Block, h: Tensor) -> Tensor:
        _check_input(block, h)
        src, dst = block_edges(block, self_loops=True)
        project_first = self.out_dim <= self.in_dim
        msg = h @ self.weight if project_first else h
        w = self.edge_weights(block, src, dst, msg.dtype).unsqueeze(-1)
        out = _scatter_sum(msg.index_select(0, src) * w, dst, block.num_dst)
        if not project_first:
            out = out @ self.weight
        if self.bias is not None:
            out = out + self.bias
        return out

    def extra_repr(self) -> str:
        diag = f", diag_lambda={self.diag_lambda:g}" if self.diag_lambda else ""
        return f"{self.in_dim}, {self.out_dim}, norm={self.norm}{diag}"


class GATConv(nn.Module):
    """Multi-head graph attention layer (Veličković et al.) on a block.

    Per head ``k``: ``z_u = W_k h_u``, ``e_{uj} = LeakyReLU_{0.2}(a_src·z_u + a_dst·z_j)`` for
    each edge ``u -> j`` and for the self-loop ``j -> j`` (every destination attends to itself
    as well as to its block sources, so zero-in-degree destinations still have one edge);
    ``α = softmax`` over each destination's incoming edges (numerically stable, see
    :func:`edge_softmax`), dropout ``attn_dropout`` on ``α`` in training, and
    ``h'_j = Σ_u α_{uj} z_u + b``. Heads are concatenated (``(num_dst, heads * out_dim)``)
    or averaged (``(num_dst, out_dim)``); the bias is added after concatenation / averaging.
    """

    def __init__(self, in_dim: int, out_dim: int, heads: int = 1, concat: bool = True,
                 attn_dropout: float = 0.0, negative_slope: float = 0.2,
                 bias: bool = True) -> None:
        super().__init__()
        if heads < 1:
            raise ValueError(f"GATConv needs heads >= 1, got {heads}")
        self.in_dim, self.out_dim, self.heads, self.concat = in_dim, out_dim, heads, concat
        self.negative_slope = negative_slope
        self.lin = nn.Linear(in_dim, heads * out_dim, bias=False)
        self.attn_src = nn.Parameter(torch.empty(heads, out_dim))
        self.attn_dst = nn.Parameter(torch.empty(heads, out_dim))
        self.attn_drop = nn.Dropout(attn_dropout)
        out_size = heads * out_dim if concat else out_dim
        self.bias = nn.Parameter(torch.empty(out_size)) if bias else None
        self.reset_parameters()

    @property
    def output_dim(self) -> int:
        return self.heads * self.out_dim if self.concat else self.out_dim

    def reset_parameters(self) -> None:
        gain = nn.init.calculate_gain("relu")
        nn.init.xavier_normal_(self.lin.weight, gain=gain)
        # Glorot-normal for the (1, heads*out_dim)-shaped attention vectors, as DGL does.
        std = gain * math.sqrt(2.0 / (self.heads * self.out_dim + 1))
        nn.init.normal_(self.attn_src, std=std)
        nn.init.normal_(self.attn_dst, std=std)
        if self.bias is not None:
            nn.init.zeros_(self.bias)

    def forward(self, block: Block, h: Tensor) -> Tensor:
        _check_input(block, h)
        src, dst = block_edges(block, self_loops=True)
        z = self.lin(h).view(-1, self.heads, self.out_dim)  # (num_src, H, D)
        score_src = (z * self.attn_src).sum(-1)  # (num_src, H)
        score_dst = (z[: block.num_dst] * self.attn_dst).sum(-1)  # (num_dst, H)
        e = F.leaky_relu(score_src.index_select(0, src) + score_dst.index_select(0, dst),
                         self.negative_slope)
        alpha = self.attn_drop(edge_softmax(e, dst, block.num_dst))  # (E, H)
        msg = z.index_select(0, src) * alpha.unsqueeze(-1)
        out = _scatter_sum(msg, dst, block.num_dst)  # (num_dst, H, D)
        out = out.reshape(block.num_dst, self.heads * self.out_dim) if self.concat else out.mean(1)
        if self.bias is not None:
            out = out + self.bias
        return out

    def extra_repr(self) -> str:
        return (f"{self.in_dim}, {self.out_dim}, heads={self.heads}, concat={self.concat}, "
                f"attn_dropout={self.attn_drop.p}")
