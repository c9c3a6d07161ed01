"""Pure-Python reference of the seeded neighbour sampler (tests only, deliberately slow).

Re-implements, with Python ints and dicts, the specification in
``commgnn.sampling.neighbor``: splitmix64 draws keyed by (seed, layer, node), Floyd's
algorithm for a uniform k-subset of positions, and DGL ``to_block`` relabelling.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix64(z: int) -> int:
    z &= MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def stream_draw(key: int, t: int) -> int:
    return mix64(key + (t + 1) * GOLDEN)


def bounded(r: int, n: int) -> int:
    return (r * n) >> 64


def neighbours(indptr, indices, v: int) -> list[int]:
    return [int(u) for u in indices[int(indptr[v]):int(indptr[v + 1])]]


def row_sample(indptr, indices, v: int, fanout: int, seed: int, layer: int) -> list[int]:
    """The sampled neighbours (global ids, CSR order) of ``v`` in block ``layer``."""
    nbrs = neighbours(indptr, indices, v)
    d = len(nbrs)
    if fanout < 0 or d <= fanout:
        return nbrs
    layer_key = stream_draw(mix64(seed & MASK), layer)
    key = stream_draw(layer_key, v)
    chosen: list[int] = []
    for t in range(fanout):
        j = d - fanout + t
        x = bounded(stream_draw(key, t), j + 1)
        chosen.append(j if x in chosen else x)
    return [nbrs[p] for p in sorted(chosen)]


def build_blocks(seeds: Sequence[int], num_layers: int,
                 pick: Callable[[int, int], list[int]]):
    """DGL ``to_block`` layout from a per-(node, layer) neighbour picker.

    Returns ``(input_nodes, blocks)`` with ``blocks[l] = (num_src, num_dst, indptr,
    indices)`` as Python lists, ``blocks[0]`` the input layer.
    """
    dst = [int(s) for s in seeds]
    blocks = []
    for layer in range(num_layers - 1, -1, -1):
        local = {u: i for i, u in enumerate(dst)}
        src = list(dst)
        indptr, idx = [0], []
        for v in dst:
            for u in pick(v, layer):
                if u not in local:
                    local[u] = len(src)
                    src.append(u)
                idx.append(local[u])
            indptr.append(len(idx))
        blocks.append((len(src), len(dst), indptr, idx))
        dst = src
    blocks.reverse()
    return dst, blocks


def reference_sample(indptr, indices, seeds, fanouts: Sequence[int], seed: int):
    return build_blocks(seeds, len(fanouts),
                        lambda v, layer: row_sample(indptr, indices, v, fanouts[layer],
                                                    seed, layer))


def khop(indptr, indices, seeds, hops: int) -> set[int]:
    """Brute force: all nodes within ``hops`` in-hops of ``seeds``."""
    reached = {int(s) for s in seeds}
    frontier = set(reached)
    for _ in range(hops):
        frontier = {u for v in frontier for u in neighbours(indptr, indices, v)} - reached
        reached |= frontier
    return reached
