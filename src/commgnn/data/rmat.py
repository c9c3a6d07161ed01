"""Graph500-style RMAT graphs (the "RMAT-X" family Grappa uses for timing runs).

``2**scale`` nodes and ``edge_factor * 2**scale`` generated edges. Each edge picks one of the
four quadrants of the adjacency matrix ``scale`` times with probabilities ``a, b, c, d``
(default 0.57, 0.19, 0.19, 0.05, ``d = 1 - a - b - c``), exactly like the Graph500 reference
generator: per level, the row bit is 1 with probability ``c + d`` and the column bit is 1 with
probability ``b / (a + b)`` or ``d / (c + d)`` given the row bit. Generation is vectorised over
edges (one pass per bit level) in fixed-size chunks. Vertex ids are then relabelled by a
random permutation (as in Graph500, so hubs are not clustered at low ids), and the edge list
is symmetrised with self-loops and duplicate edges removed — so ``num_edges`` (CSR entries) is
somewhat below ``2 * edge_factor * 2**scale`` and some nodes are isolated.

RMAT graphs carry no learnable signal: features are i.i.d. ``N(0, 1)`` float32
(``feature_dim``, default 128) and labels uniform over ``classes`` (default 16). They are for
timing/communication-volume experiments only; accuracy on them is meaningless (chance).
The split (default 0.6/0.2/0.2 unless ``split`` is given) is a random node permutation.

Everything is deterministic in ``seed`` (default 0) via ``np.random.PCG64([seed, stream, ...])``.
"""

from __future__ import annotations

import numpy as np

from commgnn.data.store import GraphDataset, symmetrize_csr
from commgnn.data.synthetic import fill_features, random_split, seeded_rng

DEFAULTS: dict = {
    "edge_factor": 16,
    "a": 0.57,
    "b": 0.19,
    "c": 0.19,
    "feature_dim": 128,
    "classes": 16,
    "split": {"train": 0.6, "val": 0.2, "test": 0.2},
    "seed": 0,
}
#: Edges generated per RNG chunk (fixed: part of the deterministic stream layout).
EDGE_CHUNK = 1 << 21
#: Largest scale whose node-pair keys fit in int64.
MAX_SCALE = 31

_STREAM_EDGES, _STREAM_PERM, _STREAM_FEATURES, _STREAM_LABELS, _STREAM_SPLIT = 11, 12, 13, 14, 15
_KNOWN_KEYS = {"source", "scale", "edge_factor", "a", "b", "c", "feature_dim", "classes",
               "split", "seed"}


def resolve_rmat_spec(spec: dict) -> dict:
    """Merge ``spec`` over :data:`DEFAULTS`, validate, and add ``d``."""
    spec = dict(spec or {})
    unknown = sorted(set(spec) - _KNOWN_KEYS)
    if unknown:
        raise ValueError(f"rmat: unknown keys {unknown}")
    if "scale" not in spec:
        raise ValueError("rmat: 'scale' is required")
    p = {**DEFAULTS, "split": dict(DEFAULTS["split"])}
    for key, value in spec.items():
        if key == "split":
            if not isinstance(value, dict):
                raise ValueError("rmat: 'split' must be a mapping of train/val/test")
            p["split"].update(value)
        elif key != "source":
            p[key] = value
    for key in ("scale", "edge_factor", "feature_dim", "classes", "seed"):
        if isinstance(p[key], bool) or not isinstance(p[key], (int, np.integer)):
            raise ValueError(f"rmat: {key!r} = {p[key]!r} must be an integer")
    if not 1 <= p["scale"] <= MAX_SCALE:
        raise ValueError(f"rmat: 'scale' = {p['scale']} must be in [1, {MAX_SCALE}]")
    if p["edge_factor"] < 1:
        raise ValueError(f"rmat: 'edge_factor' = {p['edge_factor']} must be >= 1")
    if p["feature_dim"] < 1:
        raise ValueError(f"rmat: 'feature_dim' = {p['feature_dim']} must be >= 1")
    if p["classes"] < 2:
        raise ValueError(f"rmat: 'classes' = {p['classes']} must be >= 2")
    if not 0 <= p["seed"] < 2**63:
        raise ValueError(f"rmat: 'seed' = {p['seed']} must be a non-negative integer")
    for key in ("a", "b", "c"):
        value = p[key]
        if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) \
                or not 0.0 <= float(value) <= 1.0:
            raise ValueError(f"rmat: {key!r} = {value!r} must be a number in [0, 1]")
        p[key] = float(value)
    d = 1.0 - p["a"] - p["b"] - p["c"]
    if d < -1e-12:
        raise ValueError(f"rmat: 'a' + 'b' + 'c' = {p['a'] + p['b'] + p['c']:.6g} > 1 "
                         f"(d = 1 - a - b - c would be negative)")
    p["d"] = max(d, 0.0)
    extra = sorted(set(p["split"]) - {"train", "val", "test"})
    if extra:
        raise ValueError(f"rmat: 'split' has unknown keys {extra}")
    for key, value in p["split"].items():
        if not 0 <= float(value) <= 1:
            raise ValueError(f"rmat: 'split.{key}' = {value!r} must be in [0, 1]")
    if sum(float(v) for v in p["split"].values()) > 1 + 1e-9:
        raise ValueError(f"rmat: 'split' fractions {p['split']} sum to more than 1")
    return p


def rmat_edges(scale: int, num_edges: int, a: float, b: float, c: float,
               seed_words: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Raw (unpermuted, possibly duplicate/self-loop) RMAT edges ``(src, dst)`` as int64."""
    d = max(1.0 - a - b - c, 0.0)
    ab = a + b
    c_norm = c / (c + d) if c + d > 0 else 0.0  # P(col bit 0 | row bit 1)
    a_norm = a / ab if ab > 0 else 0.0          # P(col bit 0 | row bit 0)
    src = np.zeros(num_edges, dtype=np.int64)
    dst = np.zeros(num_edges, dtype=np.int64)
    for k, start in enumerate(range(0, num_edges, EDGE_CHUNK)):
        m = min(EDGE_CHUNK, num_edges - start)
        rng = seeded_rng(*seed_words, k)
        s = src[start:start + m]
        t = dst[start:start + m]
        r = np.empty((2, m), dtype=np.float64)
        thresh = np.empty(m, dtype=np.float64)
        bits = np.empty(m, dtype=np.int64)
        for level in range(scale):
            rng.random(out=r)
            row_bit = r[0] >= ab
            np.copyto(thresh, a_norm)
            thresh[row_bit] = c_norm
            col_bit = r[1] >= thresh
            np.left_shift(row_bit, level, out=bits, dtype=np.int64)
            s |= bits
            np.left_shift(col_bit, level, out=bits, dtype=np.int64)
            t |= bits
    return src, dst


def generate_rmat(spec: dict, name: str = "rmat") -> GraphDataset:
    """Generate a symmetrised, vertex-permuted Graph500 RMAT graph (see module doc)."""
    p = resolve_rmat_spec(spec)
    scale, seed = int(p["scale"]), int(p["seed"])
    n = 1 << scale
    m = int(p["edge_factor"]) * n
    src, dst = rmat_edges(scale, m, p["a"], p["b"], p["c"], (seed, _STREAM_EDGES))
    perm = seeded_rng(seed, _STREAM_PERM).permutation(n).astype(np.int64)
    src = perm[src]
    dst = perm[dst]
    del perm
    indptr, indices = symmetrize_csr(n, src, dst)
    del src, dst

    classes = int(p["classes"])
    features = np.empty((n, int(p["feature_dim"])), dtype=np.float32)
    fill_features(features, (seed, _STREAM_FEATURES))
    labels = seeded_rng(seed, _STREAM_LABELS).integers(0, classes, size=n, dtype=np.int64)
    train_idx, val_idx, test_idx = random_split(n, p["split"], seeded_rng(seed, _STREAM_SPLIT))
    return GraphDataset(name=name, indptr=indptr, indices=indices, features=features,
                        labels=labels, train_idx=train_idx, val_idx=val_idx, test_idx=test_idx,
                        num_classes=classes)
