"""GNN layers and models over lists of blocks (plain PyTorch, CPU and CUDA).

Layers (:mod:`commgnn.models.layers`): :class:`SAGEConv`, :class:`GCNConv`, :class:`GATConv`.
Models (:mod:`commgnn.models.gnn`): :class:`GraphSAGE`, :class:`GCN`, :class:`GAT`, built by
name with :func:`build_model`, which also builds the models on PyTorch Geometric's layers
(:mod:`commgnn.models.pyg`, imported only then): ``deepgcn``, ``film`` and ``conv``.
Full-graph training (the Planetoid correctness check):
:func:`commgnn.models.fullgraph.train_full_graph`.
"""

from commgnn.models.gnn import (
    GAT,
    GCN,
    MODEL_NAMES,
    PYG_MODELS,
    BlockGNN,
    GraphSAGE,
    build_model,
)
from commgnn.models.layers import GATConv, GCNConv, SAGEConv, block_edges, edge_softmax

__all__ = [
    "GAT",
    "GCN",
    "MODEL_NAMES",
    "PYG_MODELS",
    "BlockGNN",
    "GATConv",
    "GCNConv",
    "GraphSAGE",
    "SAGEConv",
    "block_edges",
    "build_model",
    "edge_softmax",
]
