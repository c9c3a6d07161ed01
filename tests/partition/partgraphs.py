"""Small graphs for the partition tests, built directly as :class:`GraphDataset`."""

from __future__ import annotations

import numpy as np

from commgnn.data.store import GraphDataset, csr_from_pairs, symmetrize_csr


def dataset_from_csr(indptr: np.ndarray, indices: np.ndarray, *, feature_dim: int = 4,
                     train_idx: np.ndarray | None = None, name: str = "toy",
                     seed: int = 0) -> GraphDataset:
    n = int(indptr.shape[0] - 1)
    rng = np.random.default_rng(seed)
    if train_idx is None:
        train_idx = np.arange(0, n, 3, dtype=np.int64)
    train_idx = np.sort(np.asarray(train_idx, dtype=np.int64))
    rest = np.setdiff1d(np.arange(n, dtype=np.int64), train_idx)
    return GraphDataset(
        name=name,
        indptr=np.asarray(indptr, dtype=np.int64),
        indices=np.asarray(indices, dtype=np.int64),
        features=rng.standard_normal((n, feature_dim)).astype(np.float32),
        labels=(np.arange(n, dtype=np.int64) % 2),
        train_idx=train_idx,
        val_idx=rest[: rest.size // 2],
        test_idx=rest[rest.size // 2:],
        num_classes=2,
    )


def toy_dataset(num_nodes: int, edges: list[tuple[int, int]], *, directed: bool = False,
                **kwargs) -> GraphDataset:
    """A graph from an edge list; ``(u, v)`` puts ``v`` in ``u``'s CSR neighbour list."""
    src = np.array([e[0] for e in edges], dtype=np.int64)
    dst = np.array([e[1] for e in edges], dtype=np.int64)
    if directed:
        indptr, indices = csr_from_pairs(num_nodes, src, dst)
    else:
        indptr, indices = symmetrize_csr(num_nodes, src, dst)
    return dataset_from_csr(indptr, indices, **kwargs)


def sbm_dataset(num_nodes: int = 2000, blocks: int = 4, avg_degree: float = 12.0,
                p_in: float = 0.95, *, train_frac: float = 0.3, train_in_block0: bool = False,
                shuffle: bool = True, seed: int = 0, feature_dim: int = 4) -> GraphDataset:
    """Planted-partition graph: each edge stays inside its block with probability ``p_in``.

    Node ids are shuffled (``shuffle``) so that contiguous-id partitions are not trivially
    good. With ``train_in_block0`` every training node lies in block 0.
    """
    rng = np.random.default_rng(seed)
    block = np.repeat(np.arange(blocks), -(-num_nodes // blocks))[:num_nodes]
    if shuffle:
        block = block[rng.permutation(num_nodes)]
    members = [np.flatnonzero(block == b) for b in range(blocks)]
    m = int(num_nodes * avg_degree / 2)
    src = rng.integers(0, num_nodes, m)
    inside = rng.random(m) < p_in
    dst = rng.integers(0, num_nodes, m)
    for b in range(blocks):
        sel = inside & (block[src] == b)
        dst[sel] = members[b][rng.integers(0, members[b].size, int(sel.sum()))]
    indptr, indices = symmetrize_csr(num_nodes, src, dst)
    if train_in_block0:
        candidates = members[0]
        train = rng.choice(candidates, int(candidates.size * 0.8), replace=False)
    else:
        train = rng.choice(num_nodes, int(num_nodes * train_frac), replace=False)
    return dataset_from_csr(indptr, indices, feature_dim=feature_dim, train_idx=train,
                            name="sbm", seed=seed)
