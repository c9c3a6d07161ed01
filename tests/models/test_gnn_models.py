"""Multi-layer models over lists of blocks: shapes, factory, determinism, gradients."""

from __future__ import annotations

from itertools import pairwise

import pytest
import torch

from commgnn.core.blocks import Block
from commgnn.models import GAT, GCN, BlockGNN, GraphSAGE, build_model


def block_chain(sizes: list[int], fanout: int, seed: int) -> list[Block]:
    """Blocks with ``num_src = sizes[l]``, ``num_dst = sizes[l + 1]`` (decreasing sizes).

    Each destination samples up to ``fanout`` distinct sources other than itself; the last
    destination of every block gets no edges (zero in-degree).
    """
    g = torch.Generator().manual_seed(seed)
    blocks = []
    for num_src, num_dst in pairwise(sizes):
        indptr, indices = [0], []
        for j in range(num_dst):
            if j < num_dst - 1:
                perm = torch.randperm(num_src, generator=g)
                nbrs = perm[perm != j][:fanout]
                indices.extend(sorted(nbrs.tolist()))
            indptr.append(len(indices))
        blocks.append(Block(num_src, num_dst, torch.tensor(indptr, dtype=torch.int64),
                            torch.tensor(indices, dtype=torch.int64)))
    return blocks


def chain_for(num_layers: int, seed: int = 0) -> list[Block]:
    sizes = [60 - 10 * i for i in range(num_layers)] + [7]
    return block_chain(sizes, fanout=4, seed=seed)


MODELS = ["sage", "gcn", "gat"]


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("num_layers", [2, 3, 4])
def test_output_shapes(name, num_layers):
    torch.manual_seed(0)
    blocks = chain_for(num_layers)
    model = build_model(name, 12, 16, 5, num_layers, dropout=0.5, heads=3)
    assert model.num_layers == num_layers
    x = torch.randn(blocks[0].num_src, 12)
    for train in (True, False):
        model.train(train)
        out = model(blocks, x)
        assert out.shape == (blocks[-1].num_dst, 5)
        assert torch.isfinite(out).all()


@pytest.mark.parametrize("name", MODELS)
def test_deep_model_runs_and_backprops(name):
    torch.manual_seed(0)
    sizes = [90 - 10 * i for i in range(8)] + [5]
    blocks = block_chain(sizes, fanout=3, seed=1)
    model = build_model(name, 8, 8, 3, num_layers=8, dropout=0.1, heads=2)
    x = torch.randn(blocks[0].num_src, 8)
    out = model(blocks, x)
    assert out.shape == (5, 3)
    out.sum().backward()
    for pname, p in model.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), pname


@pytest.mark.parametrize("name", MODELS)
def test_full_graph_blocks(name):
    torch.manual_seed(0)
    n = 30
    src = torch.randint(0, n, (80,))
    dst = torch.randint(0, n, (80,))
    keep = src != dst
    pairs = torch.unique(torch.stack([torch.cat([dst[keep], src[keep]]),
                                      torch.cat([src[keep], dst[keep]])], 1), dim=0)
    indptr = torch.zeros(n + 1, dtype=torch.int64)
    indptr[1:] = torch.bincount(pairs[:, 0], minlength=n).cumsum(0)
    block = Block.full_graph(indptr.numpy(), pairs[:, 1].numpy())
    model = build_model(name, 6, 8, 4, num_layers=2, dropout=0.5).eval()
    out = model([block, block], torch.randn(n, 6))
    assert out.shape == (n, 4)


@pytest.mark.parametrize("name", MODELS)
def test_determinism_with_fixed_seed(name):
    blocks = chain_for(3, seed=5)
    x = torch.randn(blocks[0].num_src, 10, generator=torch.Generator().manual_seed(1))

    def run():
        torch.manual_seed(123)
        model = build_model(name, 10, 12, 4, 3, dropout=0.5, heads=2)
        model.train()  # dropout active: it must be seeded too
        out = model(blocks, x)
        out.square().mean().backward()
        return out.detach(), [p.grad.clone() for p in model.parameters()]

    out_a, grads_a = run()
    out_b, grads_b = run()
    assert torch.equal(out_a, out_b)
    for ga, gb in zip(grads_a, grads_b, strict=True):
        assert torch.equal(ga, gb)


def test_factory_names_and_classes():
    assert isinstance(build_model("sage", 4, 8, 2), GraphSAGE)
    assert isinstance(build_model("GraphSAGE", 4, 8, 2), GraphSAGE)
    assert isinstance(build_model("GCN", 4, 8, 2), GCN)
    gat = build_model("gat", 4, 8, 2, heads=4, out_heads=2)
    assert isinstance(gat, GAT) and isinstance(gat, BlockGNN)
    assert gat.layers[0].heads == 4 and gat.layers[0].output_dim == 32
    assert gat.layers[1].heads == 2 and gat.layers[1].in_dim == 32
    assert build_model("gcn", 4, 8, 2, norm="right").layers[0].norm == "right"
    with pytest.raises(ValueError, match=r"unknown model 'gin'.*gat"):
        build_model("gin", 4, 8, 2)


def test_invalid_configurations():
    with pytest.raises(ValueError, match="num_layers"):
        build_model("gcn", 4, 8, 2, num_layers=0)
    with pytest.raises(ValueError, match="num_layers"):
        build_model("gat", 4, 8, 2, num_layers=0)
    model = build_model("sage", 4, 8, 2, num_layers=3)
    blocks = chain_for(2)
    with pytest.raises(ValueError, match="3 layers but got 2 blocks"):
        model(blocks, torch.randn(blocks[0].num_src, 4))


def test_input_dropout_is_applied_to_features():
    blocks = chain_for(2)
    x = torch.randn(blocks[0].num_src, 6)
    torch.manual_seed(0)
    model = build_model("gcn", 6, 8, 3, dropout=0.0, input_dropout=0.0)
    ref = model(blocks, x)
    model.input_dropout.p = 0.9
    assert not torch.allclose(model(blocks, x), ref)
    model.eval()
    torch.testing.assert_close(model(blocks, x), ref)


def test_layers_follow_input_dtype_and_device():
    blocks = chain_for(2)
    for name in MODELS:
        model = build_model(name, 6, 8, 3).double().eval()
        out = model(blocks, torch.randn(blocks[0].num_src, 6, dtype=torch.float64))
        assert out.dtype == torch.float64 and out.device == blocks[0].indices.device


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("name", MODELS)
def test_cuda_matches_cpu(name):
    torch.manual_seed(0)
    blocks = chain_for(3)
    x = torch.randn(blocks[0].num_src, 6, dtype=torch.float64)
    model = build_model(name, 6, 8, 3, num_layers=3).double().eval()
    ref = model(blocks, x)
    out = model.cuda()([b.to("cuda") for b in blocks], x.cuda())
    assert out.device.type == "cuda"
    torch.testing.assert_close(out.cpu(), ref)
