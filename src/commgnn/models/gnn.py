"""Multi-layer GNNs over a list of blocks: :class:`GraphSAGE`, :class:`GCN`, :class:`GAT`, and
(on PyTorch Geometric's layers, :mod:`commgnn.models.pyg`) ``deepgcn``, ``film`` and ``conv``.

``model(blocks, x)``: ``x`` holds the features of ``blocks[0]``'s sources, layer ``l`` runs on
``blocks[l]`` and the result has one row per ``blocks[-1]`` destination. For full-graph
training pass ``[Block.full_graph(indptr, indices)] * num_layers``.

Dropout: ``input_dropout`` (default 0) is applied to ``x`` before the first layer and
``dropout`` to the input of every later layer (after the activation). Kipf & Welling's GCN and
the GAT paper drop the input features too, i.e. ``input_dropout == dropout``.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import torch.nn.functional as F
from torch import Tensor, nn

from commgnn.core.blocks import Block
from commgnn.models import pyg
from commgnn.models.layers import GATConv, GCNConv, SAGEConv

__all__ = ["GAT", "GCN", "MODEL_NAMES", "PYG_MODELS", "BlockGNN", "GraphSAGE", "build_model"]


class BlockGNN(nn.Module):
    """Shared driver: a stack of block layers with an activation and dropout between them."""

    def __init__(self, layers: Sequence[nn.Module], dropout: float, input_dropout: float,
                 activation) -> None:
        super().__init__()
        if len(layers) < 1:
            raise ValueError("a GNN needs at least one layer")
        self.layers = nn.ModuleList(layers)
        self.dropout = nn.Dropout(dropout)
        self.input_dropout = nn.Dropout(input_dropout)
        self.activation = activation

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def reset_parameters(self) -> None:
        for layer in self.layers:
            layer.reset_parameters()

    def forward(self, blocks: Sequence[Block], x: Tensor) -> Tensor:
        if len(blocks) != self.num_layers:
            raise ValueError(f"{type(self).__name__} has {self.num_layers} layers but got "
                             f"{len(blocks)} blocks")
        h = self.input_dropout(x)
        for i, (layer, block) in enumerate(zip(self.layers, blocks, strict=True)):
            if i > 0:
                h = self.dropout(h)
            h = layer(block, h)
            if i < self.num_layers - 1:
                h = self.activation(h)
        return h


def _dims(in_dim: int, hidden_dim: int, out_dim: int, num_layers: int) -> list[tuple[int, int]]:
    if num_layers < 1:
        raise ValueError(f"num_layers must be >= 1, got {num_layers}")
    sizes = [in_dim] + [hidden_dim] * (num_layers - 1) + [out_dim]
    return list(pairwise(sizes))


class GraphSAGE(BlockGNN):
    """GraphSAGE with mean aggregators, ReLU between layers."""

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int, num_layers: int = 2,
                 dropout: float = 0.5, input_dropout: float = 0.0) -> None:
        layers = [SAGEConv(i, o) for i, o in _dims(in_dim, hidden_dim, out_dim, num_layers)]
        super().__init__(layers, dropout, input_dropout, F.relu)


class GCN(BlockGNN):
    """Kipf & Welling GCN (``norm='both'``, self-loops, Glorot init), ReLU between layers."""

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int, num_layers: int = 2,
                 dropout: float = 0.5, input_dropout: float = 0.0, norm: str = "both",
                 bias: bool = True) -> None:
        layers = [GCNConv(i, o, bias=bias, norm=norm)
                  for i, o in _dims(in_dim, hidden_dim, out_dim, num_layers)]
        super().__init__(layers, dropout, input_dropout, F.relu)


class GAT(BlockGNN):
    """GAT: hidden layers have ``heads`` heads of ``hidden_dim`` features each, concatenated
    (hidden width ``heads * hidden_dim``); the output layer averages ``out_heads`` heads.
    ELU between layers; ``attn_dropout`` defaults to ``dropout``.
    """

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int, num_layers: int = 2,
                 dropout: float = 0.5, heads: int = 8, out_heads: int = 1,
                 attn_dropout: float | None = None, input_dropout: float = 0.0) -> None:
        if num_layers < 1:
            raise ValueError(f"num_layers must be >= 1, got {num_layers}")
        attn_p = dropout if attn_dropout is None else attn_dropout
        layers: list[nn.Module] = []
        dim = in_dim
        for _ in range(num_layers - 1):
            layers.append(GATConv(dim, hidden_dim, heads=heads, concat=True,
                                  attn_dropout=attn_p))
            dim = heads * hidden_dim
        layers.append(GATConv(dim, out_dim, heads=out_heads, concat=False, attn_dropout=attn_p))
        super().__init__(layers, dropout, input_dropout, F.elu)


#: The built-in models a config may name (``conv``, a stack of any PyG convolution, is
#: reached through a named model's ``conv:``, see :func:`build_model`).
MODEL_NAMES = ("sage", "gcn", "gat", "deepgcn", "film")
_ALIASES = {"sage": "sage", "graphsage": "sage", "gcn": "gcn", "gat": "gat",
            "deepgcn": "deepgcn", "film": "film", "conv": "conv"}
#: Models built on torch_geometric (imported only when one of them is built).
PYG_MODELS = ("deepgcn", "film", "conv")


def build_model(name: str, in_dim: int, hidden_dim: int, out_dim: int, num_layers: int = 2,
                dropout: float = 0.5, heads: int = 8, **kwargs) -> nn.Module:
    """Build a model by name (case-insensitive): ``'sage'`` (alias ``'graphsage'``),
    ``'gcn'``, ``'gat'``, ``'deepgcn'`` (:class:`~commgnn.models.pyg.DeepGCN`), ``'film'``
    (:class:`~commgnn.models.pyg.FiLM`) or ``'conv'`` (:class:`~commgnn.models.pyg.ConvGNN`:
    ``conv=`` a ``torch_geometric.nn`` class name, ``args=`` its keyword arguments).
    ``heads`` is used by GAT only; further keyword arguments go to the model class (e.g.
    ``input_dropout``, GCN's ``norm``, GAT's ``out_heads``/``attn_dropout``). Every model is
    called ``model(blocks, x)`` and has ``num_layers`` and ``reset_parameters()``.
    """
    key = _ALIASES.get(str(name).lower())
    if key is None:
        raise ValueError(f"unknown model {name!r}; expected one of {sorted(_ALIASES)}")
    if key == "sage":
        return GraphSAGE(in_dim, hidden_dim, out_dim, num_layers, dropout, **kwargs)
    if key == "gcn":
        return GCN(in_dim, hidden_dim, out_dim, num_layers, dropout, **kwargs)
    if key == "gat":
        return GAT(in_dim, hidden_dim, out_dim, num_layers, dropout, heads=heads, **kwargs)

    cls = {"deepgcn": pyg.DeepGCN, "film": pyg.FiLM, "conv": pyg.ConvGNN}[key]
    return cls(in_dim, hidden_dim, out_dim, num_layers, dropout, heads=heads, **kwargs)
