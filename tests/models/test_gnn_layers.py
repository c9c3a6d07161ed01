"""GNN layers against dense-matrix references, gradients and edge cases."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from commgnn.core.blocks import Block
from commgnn.models.layers import GATConv, GCNConv, SAGEConv, block_edges, edge_softmax

torch.set_default_dtype(torch.float32)


def random_block(num_src: int, num_dst: int, p: float, seed: int,
                 zero_in: tuple[int, ...] = ()) -> Block:
    """Random block without parallel edges or self-loops; ``zero_in`` dsts get no edges."""
    g = torch.Generator().manual_seed(seed)
    mask = torch.rand(num_dst, num_src, generator=g) < p
    idx = torch.arange(num_dst)
    mask[idx, idx] = False
    for j in zero_in:
        mask[j] = False
    indptr = torch.zeros(num_dst + 1, dtype=torch.int64)
    indptr[1:] = mask.sum(1).cumsum(0)
    indices = mask.nonzero()[:, 1].to(torch.int64)  # row-major: grouped by destination
    return Block(num_src, num_dst, indptr, indices)


def random_symmetric_graph(n: int, p: float, seed: int, isolated: tuple[int, ...] = ()):
    g = torch.Generator().manual_seed(seed)
    upper = torch.triu(torch.rand(n, n, generator=g) < p, diagonal=1)
    adj = upper | upper.T
    for v in isolated:
        adj[v] = False
        adj[:, v] = False
    indptr = torch.zeros(n + 1, dtype=torch.int64)
    indptr[1:] = adj.sum(1).cumsum(0)
    indices = adj.nonzero()[:, 1].to(torch.int64)
    return adj.to(torch.float64), Block.full_graph(indptr.numpy(), indices.numpy())


def dense_adjacency(block: Block) -> torch.Tensor:
    """``A[j, u]`` = number of edges ``u -> j`` (float64)."""
    adj = torch.zeros(block.num_dst, block.num_src, dtype=torch.float64)
    for j in range(block.num_dst):
        for u in block.indices[block.indptr[j]:block.indptr[j + 1]].tolist():
            adj[j, u] += 1
    return adj


def with_self_loops(adj: torch.Tensor) -> torch.Tensor:
    out = adj.clone()
    idx = torch.arange(adj.shape[0])
    out[idx, idx] += 1
    return out


BLOCKS = {
    "sampled": lambda: random_block(num_src=30, num_dst=12, p=0.2, seed=1, zero_in=(3, 7)),
    "sampled_dense": lambda: random_block(num_src=15, num_dst=9, p=0.6, seed=2),
    "full": lambda: random_symmetric_graph(20, 0.25, seed=3, isolated=(5,))[1],
}


def features(block: Block, dim: int, seed: int = 0) -> torch.Tensor:
    return torch.randn(block.num_src, dim, generator=torch.Generator().manual_seed(seed),
                       dtype=torch.float64)


# ----------------------------------------------------------------------------- references


def sage_reference(layer: SAGEConv, block: Block, h: torch.Tensor) -> torch.Tensor:
    adj = dense_adjacency(block)
    mean = adj @ h / adj.sum(1, keepdim=True).clamp(min=1)
    out = h[: block.num_dst] @ layer.lin_self.weight.T + mean @ layer.lin_neigh.weight.T
    return out + layer.bias


def gcn_reference(layer: GCNConv, block: Block, h: torch.Tensor) -> torch.Tensor:
    a_hat = with_self_loops(dense_adjacency(block))
    deg_in = a_hat.sum(1)
    deg_out = a_hat.sum(0).clamp(min=1)
    norm = deg_in.rsqrt()[:, None] * a_hat * deg_out.rsqrt()[None, :]
    return norm @ h @ layer.weight + layer.bias


def gat_reference(layer: GATConv, block: Block, h: torch.Tensor) -> torch.Tensor:
    a_hat = with_self_loops(dense_adjacency(block))
    z = (h @ layer.lin.weight.T).view(block.num_src, layer.heads, layer.out_dim)
    heads = []
    for k in range(layer.heads):
        s_src = z[:, k] @ layer.attn_src[k]
        s_dst = z[: block.num_dst, k] @ layer.attn_dst[k]
        e = F.leaky_relu(s_dst[:, None] + s_src[None, :], 0.2)
        e = e.masked_fill(a_hat == 0, float("-inf"))
        alpha = torch.softmax(e, dim=1)
        heads.append(alpha @ z[:, k])
    out = torch.cat(heads, dim=1) if layer.concat else torch.stack(heads).mean(0)
    return out + layer.bias


def _randomise(layer: torch.nn.Module) -> None:
    """Non-zero biases so the references check them too."""
    with torch.no_grad():
        for name, p in layer.named_parameters():
            if name.endswith("bias"):
                p.normal_()


# ----------------------------------------------------------------------------- dense checks


@pytest.mark.parametrize("kind", sorted(BLOCKS))
@pytest.mark.parametrize(("in_dim", "out_dim"), [(6, 4), (3, 7)])
def test_sage_matches_dense(kind, in_dim, out_dim):
    torch.manual_seed(0)
    block = BLOCKS[kind]()
    layer = SAGEConv(in_dim, out_dim).double()
    _randomise(layer)
    h = features(block, in_dim)
    torch.testing.assert_close(layer(block, h), sage_reference(layer, block, h))


@pytest.mark.parametrize("kind", sorted(BLOCKS))
@pytest.mark.parametrize(("in_dim", "out_dim"), [(6, 4), (3, 7)])
def test_gcn_matches_dense(kind, in_dim, out_dim):
    torch.manual_seed(0)
    block = BLOCKS[kind]()
    layer = GCNConv(in_dim, out_dim).double()
    _randomise(layer)
    h = features(block, in_dim)
    torch.testing.assert_close(layer(block, h), gcn_reference(layer, block, h))


def test_gcn_full_graph_equals_kipf_normalisation():
    adj, block = random_symmetric_graph(25, 0.2, seed=4, isolated=(0, 11))
    torch.manual_seed(0)
    layer = GCNConv(5, 3).double()
    _randomise(layer)
    h = features(block, 5)
    a_tilde = adj + torch.eye(25, dtype=torch.float64)
    d = a_tilde.sum(1).rsqrt()
    kipf = d[:, None] * a_tilde * d[None, :]
    torch.testing.assert_close(layer(block, h), kipf @ h @ layer.weight + layer.bias)


def test_gcn_right_and_none_norms():
    block = BLOCKS["sampled"]()
    h = features(block, 4)
    a_hat = with_self_loops(dense_adjacency(block))
    for norm, op in (("right", a_hat / a_hat.sum(1, keepdim=True)), ("none", a_hat)):
        layer = GCNConv(4, 3, norm=norm).double()
        _randomise(layer)
        torch.testing.assert_close(layer(block, h), op @ h @ layer.weight + layer.bias)
    with pytest.raises(ValueError, match="norm"):
        GCNConv(4, 3, norm="left")


@pytest.mark.parametrize("kind", sorted(BLOCKS))
@pytest.mark.parametrize(("heads", "concat"), [(1, True), (3, True), (4, False)])
def test_gat_matches_dense(kind, heads, concat):
    torch.manual_seed(0)
    block = BLOCKS[kind]()
    layer = GATConv(5, 4, heads=heads, concat=concat, attn_dropout=0.5).double().eval()
    _randomise(layer)
    h = features(block, 5)
    out = layer(block, h)
    assert out.shape == (block.num_dst, heads * 4 if concat else 4)
    assert layer.output_dim == out.shape[1]
    torch.testing.assert_close(out, gat_reference(layer, block, h))


def test_gat_attention_dropout_only_in_training():
    torch.manual_seed(0)
    block = BLOCKS["sampled_dense"]()
    layer = GATConv(5, 4, heads=2, attn_dropout=0.5).double()
    h = features(block, 5)
    layer.train()
    a, b = layer(block, h), layer(block, h)
    assert not torch.allclose(a, b)
    layer.eval()
    torch.testing.assert_close(layer(block, h), layer(block, h))


# ----------------------------------------------------------------------------- edge softmax


def test_edge_softmax_is_stable_and_normalised():
    dst = torch.tensor([0, 0, 0, 2, 2, 3])
    scores = torch.tensor([[1000.0], [1001.0], [-1000.0], [-5000.0], [-5001.0], [88.0]])
    alpha = edge_softmax(scores, dst, num_dst=4)
    assert torch.isfinite(alpha).all()
    sums = torch.zeros(4, 1).index_add_(0, dst, alpha)
    torch.testing.assert_close(sums, torch.tensor([[1.0], [0.0], [1.0], [1.0]]))
    expected0 = torch.softmax(torch.tensor([1000.0, 1001.0, -1000.0]), 0)
    torch.testing.assert_close(alpha[:3, 0], expected0)


def test_block_edges_self_loops():
    block = Block(4, 2, torch.tensor([0, 2, 3]), torch.tensor([1, 3, 2]))
    src, dst = block_edges(block, self_loops=True)
    assert src.tolist() == [1, 3, 2, 0, 1]
    assert dst.tolist() == [0, 0, 1, 0, 1]


# ----------------------------------------------------------------------- gradients, edge cases


LAYERS = {
    "sage": lambda i, o: SAGEConv(i, o),
    "gcn": lambda i, o: GCNConv(i, o),
    "gat": lambda i, o: GATConv(i, o, heads=2, attn_dropout=0.3),
}


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_gradients_flow(name):
    torch.manual_seed(0)
    block = BLOCKS["sampled"]()
    layer = LAYERS[name](6, 5)
    h = torch.randn(block.num_src, 6, requires_grad=True)
    layer(block, h).pow(2).sum().backward()
    assert h.grad is not None and torch.isfinite(h.grad).all()
    # Sources that feed some destination (or are destinations) get gradient.
    assert h.grad[block.indices].abs().sum() > 0
    for pname, p in layer.named_parameters():
        assert p.grad is not None, pname
        assert torch.isfinite(p.grad).all(), pname
        assert p.grad.abs().sum() > 0, pname


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_zero_in_degree_destinations(name):
    torch.manual_seed(0)
    # Destinations 0 and 2 have no incoming edges at all.
    block = Block(5, 3, torch.tensor([0, 0, 2, 2]), torch.tensor([3, 4]))
    layer = LAYERS[name](4, 3).double().eval()
    h = features(block, 4)
    out = layer(block, h)
    assert out.shape == (3, layer.output_dim if name == "gat" else 3)
    assert torch.isfinite(out).all()
    if name == "sage":  # zero neighbour mean
        expected = h[[0, 2]] @ layer.lin_self.weight.T + layer.bias
        torch.testing.assert_close(out[[0, 2]], expected)
    elif name == "gcn":  # only the self-loop, normalised by 1 * 1
        torch.testing.assert_close(out[[0, 2]], h[[0, 2]] @ layer.weight + layer.bias)
    else:  # attends only to itself
        z = (h[[0, 2]] @ layer.lin.weight.T)
        torch.testing.assert_close(out[[0, 2]], z + layer.bias)


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_block_without_edges_and_empty_destinations(name):
    layer = LAYERS[name](4, 3)
    no_edges = Block(3, 2, torch.zeros(3, dtype=torch.int64), torch.zeros(0, dtype=torch.int64))
    assert torch.isfinite(layer(no_edges, torch.randn(3, 4))).all()
    empty = Block(3, 0, torch.zeros(1, dtype=torch.int64), torch.zeros(0, dtype=torch.int64))
    assert layer(empty, torch.randn(3, 4)).shape[0] == 0


@pytest.mark.parametrize("name", sorted(LAYERS))
def test_wrong_input_rows_raise(name):
    block = BLOCKS["sampled"]()
    with pytest.raises(ValueError, match="sources"):
        LAYERS[name](4, 3)(block, torch.randn(block.num_src + 1, 4))


def test_sage_counts_parallel_edges():
    block = Block(3, 1, torch.tensor([0, 3]), torch.tensor([1, 1, 2]))
    layer = SAGEConv(2, 2).double()
    h = features(block, 2)
    mean = (2 * h[1] + h[2]) / 3
    expected = layer.lin_self(h[:1]) + layer.lin_neigh(mean[None]) + layer.bias
    torch.testing.assert_close(layer(block, h), expected)


def test_gcn_diag_enhanced_on_a_hand_computed_path():
    # Cluster-GCN eq. 10/11 on the path 0 - 1 - 2 with λ = 0.5: Ã = (D + I)^-1 (A + I),
    # operator Ã + λ diag(Ã). Rows: 0: [1.5/2, 1/2, 0]; 1: [1/3, 1.5/3, 1/3]; 2: [0, 1/2, 1.5/2].
    path = Block.full_graph(torch.tensor([0, 1, 3, 4]), torch.tensor([1, 0, 2, 1]))
    h = torch.tensor([[1.0], [2.0], [4.0]], dtype=torch.float64)
    layer = GCNConv(1, 1, norm="right", diag_lambda=0.5).double()
    with torch.no_grad():
        layer.weight.fill_(1.0)
    expected = [[0.75 * 1 + 0.5 * 2], [1 / 3 + 0.5 * 2 + 4 / 3], [0.5 * 2 + 0.75 * 4]]
    torch.testing.assert_close(layer(path, h), torch.tensor(expected, dtype=torch.float64))
    # projecting after the aggregation (out_dim > in_dim) gives the same operator
    wide = GCNConv(1, 2, norm="right", diag_lambda=0.5).double()
    with torch.no_grad():
        wide.weight.copy_(torch.tensor([[1.0, -2.0]]))
    torch.testing.assert_close(wide(path, h)[:, 1], -2 * torch.tensor(expected).flatten().double())
    # a block whose one destination (node 0) has sources 1 and 2: (1.5·1 + 2 + 4) / 3
    block = Block(3, 1, torch.tensor([0, 2]), torch.tensor([1, 2]))
    torch.testing.assert_close(layer(block, h), torch.tensor([[2.5]], dtype=torch.float64))
    # λ = 0 is plain norm='right'; λ with another normalisation is refused
    plain = GCNConv(1, 1, norm="right").double()
    with torch.no_grad():
        plain.weight.fill_(1.0)
    torch.testing.assert_close(plain(path, h), torch.tensor(
        [[1 / 2 + 1.0], [1 / 3 + 2 / 3 + 4 / 3], [1.0 + 2.0]], dtype=torch.float64))
    with pytest.raises(ValueError, match="diag_lambda"):
        GCNConv(1, 1, diag_lambda=0.5)
    layer.norm = "both"  # set on a built layer (as a system may): refused at the forward
    with pytest.raises(ValueError, match="diag_lambda"):
        layer(path, h)
