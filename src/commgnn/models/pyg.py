"""Deep GNNs on PyTorch Geometric's layers, over the project's blocks: :class:`DeepGCN`,
:class:`FiLM` and :class:`ConvGNN` (a stack of any PyG convolution that takes bipartite
input).

Call convention as :mod:`commgnn.models.gnn`: ``model(blocks, x)`` with ``x`` the features of
``blocks[0]``'s sources, one block per layer, one output row per ``blocks[-1]`` destination.
Each block is handed to PyG as a bipartite graph: ``(h_src, h_dst)`` with
``h_dst = h_src[:num_dst]`` (a block's destinations are its first ``num_dst`` sources) and
``edge_index = [src; dst]`` in local positions (:func:`~commgnn.models.layers.block_edges`),
``size = (num_src, num_dst)``.

``torch_geometric`` is imported when a model of this module is built (:func:`pyg`), never
at import: importing it costs about 2.6 s, which the workers of runs with the built-in
models must not pay.

Normalisation is per node everywhere (LayerNorm, no BatchNorm), so a destination's output
depends only on its own sampled neighbourhood, never on the other nodes of its batch (the
invariant the presampled and the micrograph systems rely on).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from commgnn.core.blocks import Block
from commgnn.models.layers import block_edges

__all__ = ["ConvGNN", "DeepGCN", "FiLM", "conv_class", "conv_problem", "pyg"]


@functools.cache
def pyg():
    """``torch_geometric.nn``, imported on first use."""
    import torch_geometric.nn  # deferred: imports torch_geometric

    return torch_geometric.nn


def _bipartite(block: Block, h: Tensor) -> tuple[tuple[Tensor, Tensor], Tensor,
                                                  tuple[int, int]]:
    """``((h_src, h_dst), edge_index, size)`` of ``block`` for a PyG convolution."""
    if h.shape[0] != block.num_src:
        raise ValueError(f"input has {h.shape[0]} rows but the block has {block.num_src} "
                         "sources")
    src, dst = block_edges(block)
    return (h, h[:block.num_dst]), torch.stack([src, dst]), (block.num_src, block.num_dst)


def _check_blocks(model: nn.Module, blocks: Sequence[Block]) -> None:
    if len(blocks) != model.num_layers:
        raise ValueError(f"{type(model).__name__} has {model.num_layers} layers but got "
                         f"{len(blocks)} blocks")


class DeepGCN(nn.Module):
    """DeeperGCN (Li et al. 2020, "res+" blocks, softmax aggregation) as PyG's
    ``examples/ogbn_proteins_deepgcn.py`` builds it, on bipartite blocks.

    * ``encoder``: ``Linear(in_dim, hidden)`` on the raw features of ``blocks[0]``'s
      sources, before anything else (a plain Linear, so it can be split by input columns).
    * ``layers[l]``: a PyG ``DeepGCNLayer(GENConv, LayerNorm, ReLU, block='res+',
      dropout)``. ``GENConv(hidden, hidden, aggr='softmax', t, learn_t, num_layers=mlp_layers)``
      (default: a learnable temperature from 1.0 and a one-Linear MLP, DeeperGCN's setting
      for ogbn-arxiv and ogbn-products; a deeper MLP gets GENConv's ``norm='layer'``, a
      per-node ``torch.nn.LayerNorm``, between its Linears as in the proteins example).
      Layer 0 runs its conv alone ("plain", as the example does); layers 1.. are res+:
      ``h_dst + conv(dropout(relu(norm(h))))``.
    * output: ``layers[0]``'s norm and ReLU (unused by the plain first layer, as in the
      example), dropout, ``head = Linear(hidden, out_dim)``.

    DeepGCNLayer's own forward returns ``x + conv(...)``, which needs as many destinations
    as sources. On a block where ``num_dst == num_src`` (a full-graph block) this class
    calls it; on a sampled block (``num_dst < num_src``) it applies the same modules in the
    same order (norm → act → dropout → conv → residual) with the residual taken on the
    destination rows ``h[:num_dst]``: the few lines of :meth:`_res_plus`. The norm is
    ``torch.nn.LayerNorm`` (per node, like the example), so normalising the sources and
    slicing equals normalising the destinations. ``ckpt_grad`` checkpoints the res+
    convolutions (DeepGCNLayer's option; activation memory for deep models).
    ``heads`` is accepted and ignored (the uniform :func:`~commgnn.models.gnn.build_model`
    signature); ``input_dropout`` drops raw features before the encoder (default 0).
    """

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int, num_layers: int = 7,
                 dropout: float = 0.1, input_dropout: float = 0.0, heads: int | None = None,
                 t: float = 1.0, learn_t: bool = True, mlp_layers: int = 1,
                 ckpt_grad: bool = False) -> None:
        super().__init__()
        del heads
        if num_layers < 1:
            raise ValueError(f"num_layers must be >= 1, got {num_layers}")
        g = pyg()
        self.encoder = nn.Linear(in_dim, hidden_dim)
        self.input_dropout = nn.Dropout(input_dropout)
        self.dropout = float(dropout)
        layers = []
        for _ in range(num_layers):
            conv = g.GENConv(hidden_dim, hidden_dim, aggr="softmax", t=t, learn_t=learn_t,
                             num_layers=mlp_layers, norm="layer")
            layers.append(g.DeepGCNLayer(conv, nn.LayerNorm(hidden_dim), nn.ReLU(),
                                         block="res+", dropout=dropout, ckpt_grad=ckpt_grad))
        self.layers = nn.ModuleList(layers)
        self.head = nn.Linear(hidden_dim, out_dim)

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def reset_parameters(self) -> None:
        self.encoder.reset_parameters()
        for layer in self.layers:
            layer.reset_parameters()
        self.head.reset_parameters()

    def _res_plus(self, layer: nn.Module, block: Block, h: Tensor) -> Tensor:
        (h_src, _), edge_index, size = _bipartite(block, h)
        if block.num_dst == block.num_src:
            return layer(h_src, edge_index)
        z = F.dropout(layer.act(layer.norm(h_src)), p=layer.dropout, training=self.training)

        def conv(z: Tensor) -> Tensor:
            return layer.conv((z, z[:block.num_dst]), edge_index, size=size)

        if layer.ckpt_grad and z.requires_grad:
            out = torch.utils.checkpoint.checkpoint(conv, z, use_reentrant=False)
        else:
            out = conv(z)
        return h_src[:block.num_dst] + out

    def forward(self, blocks: Sequence[Block], x: Tensor) -> Tensor:
        _check_blocks(self, blocks)
        h = self.encoder(self.input_dropout(x))
        first = self.layers[0]
        pair, edge_index, size = _bipartite(blocks[0], h)
        h = first.conv(pair, edge_index, size=size)
        for layer, block in zip(self.layers[1:], blocks[1:], strict=True):
            h = self._res_plus(layer, block, h)
        h = first.act(first.norm(h))
        h = F.dropout(h, p=self.dropout, training=self.training)
        return self.head(h)


class FiLM(nn.Module):
    """GNN-FiLM (Brockschmidt 2020) with PyG's ``FiLMConv`` (one relation), as PyG's
    ``examples/film.py`` stacks it.

    ``layers`` is a ModuleList of ``FiLMConv``: ``layers[0] = FiLMConv(in_dim, hidden)``
    on the raw features, ``hidden → hidden`` in between, and the last layer
    ``FiLMConv(hidden, out_dim, act=None)``. The nonlinearity is FiLMConv's own
    ``act=ReLU()`` (its default: applied to the FiLM-modulated self term and to every
    message before the mean) on every layer but the last, as in PyG's example, which adds
    no other activation between layers; neither does this class. Between layers, in order:
    ``residual`` (default on) adds a hidden → hidden layer's input rows of its
    destinations (``h[:num_dst]``) to its output (not in PyG's example: without it the
    10-layer stack did not train on Cora, train accuracy 0.14, test 0.07–0.32, against
    test 0.71–0.76 with it; tests/models/test_pyg_models.py); ``norm``
    (default on) a per-node ``LayerNorm`` (the example has BatchNorm1d there, which would
    couple the nodes of a batch); dropout (``dropout``) on the next layer's input.
    ``norm=False, residual=False`` gives the example's plain stack without its BatchNorm.
    ``heads`` is accepted and ignored; ``input_dropout`` drops the raw features (default 0).
    """

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int, num_layers: int = 10,
                 dropout: float = 0.1, input_dropout: float = 0.0, heads: int | None = None,
                 norm: bool = True, residual: bool = True, aggr: str = "mean") -> None:
        super().__init__()
        del heads
        if num_layers < 1:
            raise ValueError(f"num_layers must be >= 1, got {num_layers}")
        g = pyg()
        sizes = [in_dim] + [hidden_dim] * (num_layers - 1) + [out_dim]
        self.layers = nn.ModuleList(
            g.FiLMConv(sizes[i], sizes[i + 1], aggr=aggr,
                       act=nn.ReLU() if i < num_layers - 1 else None)
            for i in range(num_layers))
        self.norms = nn.ModuleList(nn.LayerNorm(hidden_dim) if norm else nn.Identity()
                                   for _ in range(num_layers - 1))
        self.residual = bool(residual)
        self.dropout = nn.Dropout(dropout)
        self.input_dropout = nn.Dropout(input_dropout)

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def reset_parameters(self) -> None:
        for layer in self.layers:
            layer.reset_parameters()
        for norm in self.norms:
            if hasattr(norm, "reset_parameters"):
                norm.reset_parameters()

    def forward(self, blocks: Sequence[Block], x: Tensor) -> Tensor:
        _check_blocks(self, blocks)
        h = self.input_dropout(x)
        for i, (layer, block) in enumerate(zip(self.layers, blocks, strict=True)):
            pair, edge_index, _ = _bipartite(block, self.dropout(h) if i > 0 else h)
            out = layer(pair, edge_index)
            if i < self.num_layers - 1:
                if self.residual and i > 0:
                    out = out + h[:block.num_dst]
                out = self.norms[i](out)
            h = out
        return h


# -- any PyG convolution ------------------------------------------------------------------
def conv_class(name: str) -> type:
    """The ``torch_geometric.nn`` convolution class ``name``; ValueError if there is none
    (a name outside ``torch_geometric.nn.conv``, or not a ``MessagePassing`` layer)."""
    g = pyg()
    cls = getattr(g, str(name), None) if str(name) in g.conv.__all__ else None
    if (not isinstance(cls, type) or not issubclass(cls, g.MessagePassing)
            or cls is g.MessagePassing):
        raise ValueError(f"{name!r} is not a torch_geometric.nn convolution")
    return cls


def _accepts(cls: type, name: str) -> bool:
    return name in inspect.signature(cls.__init__).parameters


def _probe_graph(in_dim: int) -> tuple[Block, Tensor]:
    """A fixed 4-source, 2-destination block (every destination has an edge; source 3
    only feeds) with deterministic features: consumes no random numbers."""
    block = Block(num_src=4, num_dst=2, indptr=torch.tensor([0, 2, 4]),
                  indices=torch.tensor([1, 2, 0, 3]))
    x = torch.linspace(-1.0, 1.0, 4 * in_dim).reshape(4, in_dim)
    return block, x


@torch.no_grad()
def _out_width(layer: nn.Module, in_dim: int) -> int:
    """Output width of ``layer`` on a bipartite probe graph (eval mode, no gradients)."""
    was_training = layer.training
    layer.eval()
    try:
        block, x = _probe_graph(in_dim)
        pair, edge_index, _ = _bipartite(block, x)
        out = layer(pair, edge_index)
    finally:
        layer.train(was_training)
    if not isinstance(out, Tensor) or out.dim() != 2 or out.shape[0] != block.num_dst:
        shape = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
        raise ValueError(f"returned {shape} for a bipartite graph of {block.num_src} sources "
                         f"and {block.num_dst} destinations (expected ({block.num_dst}, F))")
    return int(out.shape[1])


class ConvGNN(nn.Module):
    """A stack of ``num_layers`` PyG convolutions ``conv`` (a ``torch_geometric.nn`` class
    name), each built as ``conv(in_channels=(d, d), out_channels, **args)`` and called on
    ``((h_src, h_dst), edge_index)``; ReLU and dropout between layers (none after the last).

    Widths: hidden layers get ``out_channels = hidden_dim`` and the last ``out_dim``. A
    layer's real output width is measured on a tiny bipartite graph when it is built, and
    the next layer takes that width: a conv with ``heads`` and ``concat=True`` (GATConv,
    GATv2Conv, TransformerConv …) feeds ``heads * hidden_dim`` features on. The last layer
    is built with ``concat=False`` where the conv has a ``concat`` parameter (its heads
    averaged, as GAT's output layer does); if its width still is not ``out_dim``, a
    ``Linear(width, out_dim)`` (``out``) follows. ``heads`` is not passed on: a conv's
    heads are set in ``args``. ``input_dropout`` drops the raw features (default 0).
    """

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int, num_layers: int = 2,
                 dropout: float = 0.5, input_dropout: float = 0.0, heads: int | None = None,
                 conv: str = "SAGEConv", args: dict | None = None) -> None:
        super().__init__()
        del heads
        if num_layers < 1:
            raise ValueError(f"num_layers must be >= 1, got {num_layers}")
        cls = conv_class(conv)
        self.conv_name = cls.__name__
        layers = []
        dim = in_dim
        for i in range(num_layers):
            kwargs = dict(args or {})
            last = i == num_layers - 1
            if last and _accepts(cls, "concat"):
                kwargs["concat"] = False
            layer = cls(in_channels=(dim, dim), out_channels=out_dim if last else hidden_dim,
                        **kwargs)
            dim = _out_width(layer, dim)
            layers.append(layer)
        self.layers = nn.ModuleList(layers)
        self.out = nn.Linear(dim, out_dim) if dim != out_dim else None
        self.dropout = nn.Dropout(dropout)
        self.input_dropout = nn.Dropout(input_dropout)

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def reset_parameters(self) -> None:
        for layer in self.layers:
            layer.reset_parameters()
        if self.out is not None:
            self.out.reset_parameters()

    def forward(self, blocks: Sequence[Block], x: Tensor) -> Tensor:
        _check_blocks(self, blocks)
        h = self.input_dropout(x)
        for i, (layer, block) in enumerate(zip(self.layers, blocks, strict=True)):
            if i > 0:
                h = self.dropout(F.relu(h))
            pair, edge_index, _ = _bipartite(block, h)
            h = layer(pair, edge_index)
        return h if self.out is None else self.out(h)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or "(no message)"
    return f"{type(exc).__name__}: {text}"


def conv_problem(conv: str, args: dict | None = None, *, in_dim: int = 6,
                 out_dim: int = 3) -> tuple[str, str] | None:
    """Why ``conv`` with ``args`` cannot serve as a block layer, or None if it can.

    Returns ``(key, message)`` with ``key`` the entry's field to blame (``'conv'`` or
    ``'args'``): the class is not a ``torch_geometric.nn`` convolution; it cannot be
    built with ``in_channels=(in_dim, in_dim)`` (``'conv'`` when it can with an int, i.e. it
    does not take bipartite input; else ``'args'``); or it fails on (or returns the wrong
    rows for) a tiny bipartite graph. Messages are one line."""
    try:
        cls = conv_class(conv)
    except ValueError as exc:
        return "conv", str(exc)
    with torch.random.fork_rng(devices=[]):  # validating leaves the RNG as it was
        return _build_problem(cls, dict(args or {}), in_dim, out_dim)


def _build_problem(cls: type, args: dict, in_dim: int, out_dim: int) -> tuple[str, str] | None:
    try:
        layer = cls(in_channels=(in_dim, in_dim), out_channels=out_dim, **args)
    except Exception as exc:  # any failure of third-party code is the config's problem
        try:
            cls(in_channels=in_dim, out_channels=out_dim, **args)
        except Exception:
            return "args", (f"{cls.__name__}(in_channels=({in_dim}, {in_dim}), out_channels="
                            f"{out_dim}, **{args}) fails: {_one_line(exc)}")
        return "conv", (f"{cls.__name__!r} does not accept bipartite input (in_channels="
                        f"({in_dim}, {in_dim}): {_one_line(exc)})")
    try:
        _out_width(layer, in_dim)
    except Exception as exc:
        return "conv", (f"{cls.__name__!r} does not run on a bipartite graph with args "
                        f"{args}: {_one_line(exc)}")
    return None
