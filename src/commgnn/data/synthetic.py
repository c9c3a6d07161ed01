"""Synthetic node-classification graphs: a degree-corrected SBM with power-law degrees.

Model
-----
Every node ``v`` gets a class ``y_v`` (uniform over ``classes``) and a degree propensity
``theta_v`` drawn from a Pareto law with density ``~ theta^-degree_exponent`` on
``[1, H]``. The upper cut-off ``H`` is chosen so that the largest *expected* degree is about
``DEGREE_CAP_FACTOR * sqrt(nodes * avg_degree)`` (never more than half the nodes): without a
cut-off an exponent near 2 gives hubs adjacent to more nodes than exist. The heavy tail is
the point — a few hub nodes are touched by a large share of all edges, as in the papers'
datasets.

Edges come in two pools that are generated independently:

* ``round(homophily * E)`` *intra-class* edges: one endpoint ``u`` is drawn with probability
  proportional to ``theta``, the other with probability proportional to ``theta`` among the
  nodes of ``u``'s class;
* the remaining *inter-class* edges: the second endpoint is drawn proportional to ``theta``
  among the nodes of every *other* class.

where ``E = round(nodes * avg_degree / 2)`` undirected edges. Each pool is de-duplicated
(self-loops dropped) and topped up with fresh draws until it holds its target number of
distinct edges (at most :data:`MAX_TOPUP_ROUNDS` rounds; a pool that cannot be filled, e.g.
``homophily=1`` with classes too small for ``avg_degree``, is left short). Hence after
symmetrisation ``avg_degree`` is the number of CSR entries per node up to rounding
(``num_edges == 2 * E``), and the edge homophily (fraction of CSR entries whose two endpoints
share a class) equals ``homophily`` up to rounding. Realised degrees are a Poisson mixture
over the expected degrees ``avg_degree * theta_v / mean(theta)``, so their tail follows
``degree_exponent``; hubs lose a little to de-duplication (hub-hub pairs are drawn repeatedly)
and the lightest nodes can end up isolated.

Features are class-correlated Gaussians: class means ``mu_c`` have i.i.d. ``N(0, 1/d)``
entries (norm about 1) and ``x_v = mu_{y_v} + feature_noise * N(0, I_d)``, float32. The
presets' noise levels put a nearest-class-mean classifier clearly above chance but well
below 100 % (measured test accuracy, before label noise: tiny 0.68, arxiv-like 0.62,
reddit-like 0.73, products-like 0.61), so neighbourhood aggregation (a GNN) has something to
add — too much on its own (GraphSAGE reached 0.92 on arxiv-like and 1.0 on reddit- and
products-like): the dataset presets' ``label_noise`` brings it to the published accuracy
(see "Difficulty").

``signal_fraction < 1`` spreads the class signal over several hops: only a fixed random
subset of exactly ``round(signal_fraction * nodes)`` nodes (:func:`signal_mask`, its own
RNG stream) get ``mu_{y_v}`` added; every other node's features are pure noise, so its label
must be read off informative nodes of its class in its neighbourhood, and with ``homophily``
well below 1 the nearby ones are too few. The ``multihop`` preset (20 % informative nodes,
homophily 0.6, noise 1.0, 20 classes) is the task on which depth matters: measured test
accuracy (seed 0, ``benchmarks/synthetic_depth.py``) of a nearest class mean on ``x`` 0.07
(chance 0.05), on the k-hop neighbour mean ``(D^-1 A)^k x`` 0.18 / 0.30 / 0.53 / 0.75 / 0.84
/ 0.91 for k = 1..6; trained full-graph (hidden 128, dropout 0.2, Adam lr 0.01, 200 epochs):
a 2-layer MLP 0.06, GraphSAGE-1 0.17, -2 0.54, -3 0.51, -4 0.65. 200 epochs under-train
SAGE-3 (train accuracy 0.54 vs SAGE-2's 0.62); after 400 epochs SAGE-2 reaches 0.56 and
SAGE-3 0.67. On a 20k-node instance (``nodes: 20000``, 200 epochs) SAGE-2/3/4 reach
0.70 / 0.87 / 0.88 (small graphs are easier: the 2-hop ball is a larger share of the graph).

Locality
--------
Real graphs are local at several scales (papers cite papers of their subfield and era,
products co-bought within a category, pages linked within a site), which is what METIS finds
and what HopGNN's micrographs and Grappa's halos live on; a plain DC-SBM is an expander with
none. With ``locality = q``, a share ``q`` of each pool's edges draw their second endpoint
inside a window around the first on a line of the nodes in id order (ids are the latent
coordinate: labels and propensities are independent of them): the window's half-width ``w``
is drawn from a truncated power law ``~ w^-locality_exponent`` on ``[d, line / 2]`` with
``d`` the average degree (a window holds at least as many nodes as a node has neighbours, or
its draws would mostly repeat one edge; exponent 1: log-uniform, every scale from there to
the whole line equally often), and the endpoint inside it proportional to ``theta`` as
before, among its own class's nodes (intra-class pool: the class's nodes in id order form
its line) or any other class's (inter-class pool: the line of all nodes; a same-class draw
is rejected and redrawn). So degrees keep their power law and the edge homophily stays
``homophily``, while a partitioner that cuts the line into segments cuts only the long
edges. ``locality = 0`` draws nothing extra: the graphs are byte-identical to those made
before it existed.

With labels independent of position, a partitioner has two good cuts to choose between —
segments of the line, or groups of whole classes (the intra-class pool stays inside a
group) — and METIS takes the class groups, which leave every inter-class edge and every
long intra-class edge cut (measured on products-like: METIS ÷ Random traffic 0.56 at
``locality = 0.95``, where cutting the line would give under 0.3). ``class_regions = k > 0``
nests the classes in the line instead, as categories are regions of a co-purchase graph and
subject areas of a citation graph: the line is cut into ``classes * k`` equal segments, each
run of ``classes`` consecutive segments a random permutation of the classes (its own stream;
neighbouring segments never share a class), and a node's label is its segment's. An
intra-class edge drawn at random from the whole class then stays within the class's regions
(a community at the scale of ``nodes / classes``), a near one within its window (finer
scales), and a near inter-class draw that lands in its own class is drawn again in a window
twice as wide until it reaches another class (:data:`MAX_ESCAPE_DOUBLINGS`): an inter-class
neighbour is the nearest other region's. Only the inter-class pool's share ``1 - locality``
is long-range. The homophily and the degree law are kept (``benchmarks/results/standins.md``
gives the quantiles).

Difficulty
----------
Raising ``feature_noise`` far enough to bring a trained GraphSAGE down to a real dataset's
accuracy does not make the task hard, it makes it slow: with hundreds of neighbours
averaged the classes stay separable, and the model sits at chance until it finds them
(measured: products-like ×1/8, sampled SAGE-3, 72 batches: noise 1.0 test accuracy 0.96,
noise 2.0 0.02; arxiv-like ×1/4, full-graph SAGE-3, 100 epochs: noise 0.55 0.85, 0.65 0.34,
0.8 0.06). What a real dataset's accuracy ceiling reflects is the part of its labels that
its graph and features do not determine. ``label_noise = e`` records, for a random share
``e`` of the nodes, a uniformly drawn class instead of the one their edges and features were
generated from (the graph and features are untouched); a model that recovers the generating
class then scores about ``A * (1 - e * (1 - 1 / classes))`` for its accuracy ``A`` on the
clean labels, and the measured edge homophily falls to about ``homophily * (1 - e)^2``.
The dataset presets take their ``e`` from the published GraphSAGE accuracy
(``benchmarks/results/standins.md``).

Determinism
-----------
All randomness comes from ``np.random.Generator(np.random.PCG64(...))`` seeded with
``[seed, stream, ...]`` (a separate stream for propensities/labels, each edge pool/round/
chunk, each feature chunk, the split, the informative-node mask). Chunk sizes are module
constants, so the same spec gives byte-identical arrays (on the same numpy build:
floating-point ``pow``/``cumsum`` may differ in the last ulp across SIMD implementations) and
a different seed gives different arrays. Everything is vectorised; memory stays proportional
to the output: products-like (2.45 M nodes, 123.7 M CSR entries = 61.8 M undirected edges,
100-dim features) takes about 95 s without locality and 146 s with its preset's (on a
2-core machine running another benchmark beside it) and peaks at ~8 GB RSS, most of the peak
inside :func:`~commgnn.data.store.symmetrize_csr`.

Spec keys (see ``$defs/synthetic`` in ``schemas/config.schema.yaml``); explicit keys override
the ``preset`` (default ``tiny``), a given ``split`` is merged key by key into the preset's:

==================  ==========================================================================
``nodes``           number of nodes
``avg_degree``      CSR entries per node after symmetrisation + de-duplication (see above)
``classes``         number of classes (labels uniform)
``feature_dim``     feature dimension
``homophily``       fraction of edges whose endpoints share a class
``degree_exponent`` power-law exponent of the expected-degree distribution (> 1)
``feature_noise``   per-entry noise std relative to unit-norm class means
``signal_fraction`` fraction in (0, 1] of nodes whose features carry their class mean, the
                    rest pure noise (default 1: every node, as in the older presets)
``locality``        fraction in [0, 1) of each edge pool drawn near its first endpoint on the
                    line of nodes (default 0: none; see "Locality")
``locality_exponent`` the near endpoint's window half-width ``w`` has density ~ ``w^-x`` on
                    ``[1, line / 2]`` (default 1: every scale equally often)
``class_regions``   contiguous regions of the line per class, labels following position
                    (default 0: labels independent of position; see "Locality")
``label_noise``     share in [0, 1) of nodes whose recorded label is drawn at random (default
                    0; see "Difficulty")
``split``           ``{train, val, test}`` fractions of a random node permutation (sum <= 1)
``seed``            integer seed (default 0)
==================  ==========================================================================
"""

from __future__ import annotations

import copy
import math

import numpy as np

from commgnn.data.store import GraphDataset, symmetrize_csr

#: Presets loosely shaped like the papers' datasets. Real statistics for reference:
#: ogbn-arxiv 169,343 nodes / 2.48 M CSR entries (avg 13.7) / 40 classes / 128-dim, edge
#: homophily ~0.65; Reddit 232,965 / 114.6 M (avg ~492) / 41 / 602, ~0.76 (reddit-like had
#: avg degree 150 until 2026-11-26: Reddit's own fits this machine); ogbn-products 2,449,029 /
#: 123.7 M directed (61.9 M undirected, avg ~50.5) / 47 / 100, ~0.81; ogbn-papers100M
#: 111 M / 1.62 B directed / 172 / 128 — ``papers100m-like`` keeps all but the node count.
#: ``multihop`` is no dataset's shape: a task where accuracy can differ and depth matters.
#: Only 20 % of nodes carry class signal (``signal_fraction``), homophily 0.6 over 20 classes
#: and noise 1.0 make features alone near chance (nearest class mean 0.07) while the class
#: signal averaged over k hops keeps growing up to k = 6; GraphSAGE full-graph (hidden 128,
#: seed 0): 2 layers 0.54, 3 layers 0.51, 4 layers 0.65 after 200 epochs; 2 layers 0.56,
#: 3 layers 0.67 after 400 (module doc). 100k nodes, 1.5 M CSR entries: generated in ~1 s at
#: ~135 MiB peak RSS; a full-graph epoch took ~3 s (SAGE-2) to ~8 s (SAGE-4) on 2 CPU cores
#: shared with another benchmark.
PRESETS: dict[str, dict] = {
    "tiny": {
        "nodes": 2_000,
        "avg_degree": 10.0,
        "classes": 8,
        "feature_dim": 32,
        "homophily": 0.8,
        "degree_exponent": 2.3,
        "feature_noise": 0.5,
        "split": {"train": 0.6, "val": 0.2, "test": 0.2},
    },
    "arxiv-like": {
        "nodes": 169_343,
        "avg_degree": 13.7,
        "classes": 40,
        "feature_dim": 128,
        "homophily": 0.65,
        "degree_exponent": 2.2,
        "feature_noise": 0.4,
        "locality": 0.6,
        "locality_exponent": 2.0,
        "class_regions": 1,
        "label_noise": 0.23,
        "split": {"train": 0.54, "val": 0.18, "test": 0.28},
    },
    "reddit-like": {
        "nodes": 232_965,
        "avg_degree": 492.0,
        "classes": 41,
        "feature_dim": 602,
        "homophily": 0.75,
        "degree_exponent": 2.3,
        "feature_noise": 0.35,
        "locality": 0.6,
        "locality_exponent": 2.0,
        "class_regions": 1,
        "label_noise": 0.05,
        "split": {"train": 0.66, "val": 0.10, "test": 0.24},
    },
    "products-like": {
        "nodes": 2_449_029,
        "avg_degree": 50.5,
        "classes": 47,
        "feature_dim": 100,
        "homophily": 0.8,
        "degree_exponent": 2.3,
        "feature_noise": 0.4,
        "locality": 0.7,
        "locality_exponent": 2.0,
        "class_regions": 1,
        "label_noise": 0.21,
        "split": {"train": 0.08, "val": 0.02, "test": 0.90},
    },
    # ogbn-papers100M scaled to a workstation (1/55 of its 111 M nodes): its degree (1.62 B
    # directed edges: ~29 CSR entries per node once symmetric), 128-dim features, 172
    # classes and its split (1.1 % train, 0.11 % val, 0.19 % test).
    "papers100m-like": {
        "nodes": 2_000_000,
        "avg_degree": 29.0,
        "classes": 172,
        "feature_dim": 128,
        "homophily": 0.6,
        "degree_exponent": 2.2,
        "feature_noise": 0.4,
        "split": {"train": 0.0109, "val": 0.0011, "test": 0.0019},
    },
    # HopGNN's UK (uk-2006-05: 1 M vertices, 41.2 M edges, random 600-dim features: the
    # features, 2.3 GB, far outweigh the 12 MB of topology — HopGNN Table 2). The paper gives
    # no labels or split: 20 classes, homophily 0.6 and a 10 % training set here.
    "uk-like": {
        "nodes": 1_000_000,
        "avg_degree": 41.2,
        "classes": 20,
        "feature_dim": 600,
        "homophily": 0.6,
        "degree_exponent": 2.2,
        "feature_noise": 0.6,
        "locality": 0.7,
        "locality_exponent": 2.0,
        "class_regions": 1,
        "split": {"train": 0.10, "val": 0.02, "test": 0.05},
    },
    # HopGNN's IN (indochina-2004: 1.38 M vertices, 16.9 M edges, random 600-dim features,
    # Table 2); labels and split as uk-like's.
    "in-like": {
        "nodes": 1_380_000,
        "avg_degree": 12.2,
        "classes": 20,
        "feature_dim": 600,
        "homophily": 0.6,
        "degree_exponent": 2.2,
        "feature_noise": 0.6,
        "locality": 0.7,
        "locality_exponent": 2.0,
        "class_regions": 1,
        "split": {"train": 0.10, "val": 0.02, "test": 0.05},
    },
    "multihop": {
        "nodes": 100_000,
        "avg_degree": 15.0,
        "classes": 20,
        "feature_dim": 64,
        "homophily": 0.6,
        "degree_exponent": 2.5,
        "feature_noise": 1.0,
        "signal_fraction": 0.2,
        "split": {"train": 0.5, "val": 0.1, "test": 0.4},
    },
}

DEFAULT_PRESET = "tiny"
DEFAULT_SEED = 0
#: Largest expected degree, as a multiple of ``sqrt(nodes * avg_degree)``.
DEGREE_CAP_FACTOR = 2.0
#: Top-up rounds per edge pool before giving up on reaching the target edge count.
MAX_TOPUP_ROUNDS = 12
#: Candidate edges drawn per RNG chunk and feature rows per RNG chunk (fixed: they are part
#: of the deterministic stream layout).
EDGE_CHUNK = 1 << 22
FEATURE_CHUNK_ROWS = 1 << 16

# RNG stream ids (first seed word after the user seed).
_STREAM_NODES, _STREAM_EDGES, _STREAM_FEATURES, _STREAM_SPLIT = 1, 2, 3, 4
_STREAM_SIGNAL = 5  # informative-node mask; drawn only when signal_fraction < 1
_STREAM_REGIONS = 6  # the class of each region of the line; drawn only when class_regions > 0
_STREAM_LABEL_NOISE = 7  # which labels are recorded at random; drawn only when label_noise > 0
DEFAULT_LABEL_NOISE = 0.0
DEFAULT_SIGNAL_FRACTION = 1.0
DEFAULT_CLASS_REGIONS = 0
#: Window doublings an inter-class near draw may take to leave its own class's region
#: before it falls back to a draw from the whole graph.
MAX_ESCAPE_DOUBLINGS = 40
DEFAULT_LOCALITY = 0.0
DEFAULT_LOCALITY_EXPONENT = 1.0
_KNOWN_KEYS = {"source", "preset", "nodes", "avg_degree", "classes", "feature_dim", "homophily",
               "degree_exponent", "feature_noise", "signal_fraction", "locality",
               "locality_exponent", "class_regions", "label_noise", "split", "seed"}


def seeded_rng(*words: int) -> np.random.Generator:
    """A PCG64 generator seeded by a tuple of integers (seed, stream id, ...)."""
    return np.random.Generator(np.random.PCG64([int(w) for w in words]))


# --------------------------------------------------------------------------------------
# spec handling
# --------------------------------------------------------------------------------------
def resolve_synthetic_spec(spec: dict) -> dict:
    """Merge ``spec`` over its preset and validate; return the full parameter dict."""
    spec = dict(spec or {})
    unknown = sorted(set(spec) - _KNOWN_KEYS)
    if unknown:
        raise ValueError(f"synthetic: unknown keys {unknown}")
    preset = spec.get("preset", DEFAULT_PRESET)
    if preset not in PRESETS:
        raise ValueError(f"synthetic: 'preset' must be one of {sorted(PRESETS)}, got {preset!r}")
    params = copy.deepcopy(PRESETS[preset])
    params["preset"] = preset
    params["seed"] = DEFAULT_SEED
    params.setdefault("signal_fraction", DEFAULT_SIGNAL_FRACTION)
    params.setdefault("locality", DEFAULT_LOCALITY)
    params.setdefault("locality_exponent", DEFAULT_LOCALITY_EXPONENT)
    params.setdefault("class_regions", DEFAULT_CLASS_REGIONS)
    params.setdefault("label_noise", DEFAULT_LABEL_NOISE)
    for key, value in spec.items():
        if key == "split":
            if not isinstance(value, dict):
                raise ValueError("synthetic: 'split' must be a mapping of train/val/test")
            params["split"].update(value)
        elif key != "source":
            params[key] = value
    _validate(params)
    return params


def _validate(p: dict) -> None:
    def bad(key: str, why: str) -> ValueError:
        return ValueError(f"synthetic: {key!r} = {p[key]!r} {why}")

    for key in ("nodes", "classes", "feature_dim", "seed"):
        if isinstance(p[key], bool) or not isinstance(p[key], (int, np.integer)):
            raise bad(key, "must be an integer")
    if p["nodes"] < 2:
        raise bad("nodes", "must be >= 2")
    if p["nodes"] > 3_000_000_000:
        raise bad("nodes", "is too large (node-pair keys must fit in int64)")
    if p["classes"] < 2 or p["classes"] > p["nodes"]:
        raise bad("classes", "must be in [2, nodes]")
    if p["feature_dim"] < 1:
        raise bad("feature_dim", "must be >= 1")
    if not 0 <= p["seed"] < 2**63:
        raise bad("seed", "must be a non-negative integer")
    if not 0 < float(p["avg_degree"]) <= p["nodes"] - 1:
        raise bad("avg_degree", "must be in (0, nodes - 1]")
    if not 0 <= float(p["homophily"]) <= 1:
        raise bad("homophily", "must be in [0, 1]")
    if not float(p["degree_exponent"]) > 1:
        raise bad("degree_exponent", "must be > 1")
    if not float(p["feature_noise"]) >= 0:
        raise bad("feature_noise", "must be >= 0")
    fraction = p["signal_fraction"]
    if (isinstance(fraction, bool) or not isinstance(fraction, (int, float, np.number))
            or not 0 < float(fraction) <= 1):
        raise bad("signal_fraction", "must be a number in (0, 1]")
    for key in ("locality", "locality_exponent"):
        if isinstance(p[key], bool) or not isinstance(p[key], (int, float, np.number)):
            raise bad(key, "must be a number")
    if not 0 <= float(p["locality"]) < 1:
        raise bad("locality", "must be in [0, 1)")
    if not float(p["locality_exponent"]) >= 0:
        raise bad("locality_exponent", "must be >= 0")
    noise = p["label_noise"]
    if (isinstance(noise, bool) or not isinstance(noise, (int, float, np.number))
            or not 0 <= float(noise) < 1):
        raise bad("label_noise", "must be a number in [0, 1)")
    regions = p["class_regions"]
    if isinstance(regions, bool) or not isinstance(regions, (int, np.integer)) or regions < 0:
        raise bad("class_regions", "must be a non-negative integer")
    if regions * p["classes"] > p["nodes"]:
        raise bad("class_regions", "times 'classes' must not exceed 'nodes'")
    split = p["split"]
    extra = sorted(set(split) - {"train", "val", "test"})
    if extra:
        raise ValueError(f"synthetic: 'split' has unknown keys {extra}")
    for key in ("train", "val", "test"):
        if not 0 <= float(split.get(key, 0.0)) <= 1:
            raise ValueError(f"synthetic: 'split.{key}' = {split.get(key)!r} must be in [0, 1]")
    if sum(float(v) for v in split.values()) > 1 + 1e-9:
        raise ValueError(f"synthetic: 'split' fractions {split} sum to more than 1")


# --------------------------------------------------------------------------------------
# shared helpers (also used by the RMAT generator)
# --------------------------------------------------------------------------------------
def random_split(num_nodes: int, split: dict, rng: np.random.Generator
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Train/val/test ids from one random permutation: the first ``floor(train * n)`` nodes
    train, the next ``floor(val * n)`` val, the next ``floor(test * n)`` test; each sorted."""
    perm = rng.permutation(num_nodes)
    sizes = [math.floor(float(split.get(k, 0.0)) * num_nodes + 1e-9)
             for k in ("train", "val", "test")]
    bounds = np.cumsum([0, *sizes])
    if bounds[-1] > num_nodes:
        raise ValueError(f"split fractions {split} sum to more than 1")
    return tuple(np.sort(perm[bounds[i]:bounds[i + 1]]).astype(np.int64) for i in range(3))


def fill_features(out: np.ndarray, seed_words: tuple[int, ...], scale: float = 1.0,
                  offsets: np.ndarray | None = None, labels: np.ndarray | None = None) -> None:
    """Fill ``out`` (float32, ``(n, d)``) in fixed-size row chunks with ``scale * N(0, 1)``,
    plus ``offsets[labels[row]]`` if given. Chunk ``k`` uses ``PCG64([*seed_words, k])``."""
    n = out.shape[0]
    for k, start in enumerate(range(0, n, FEATURE_CHUNK_ROWS)):
        stop = min(start + FEATURE_CHUNK_ROWS, n)
        block = out[start:stop]
        seeded_rng(*seed_words, k).standard_normal(out=block, dtype=np.float32)
        if scale != 1.0:
            block *= np.float32(scale)
        if offsets is not None:
            block += offsets[labels[start:stop]]


# --------------------------------------------------------------------------------------
# degree propensities
# --------------------------------------------------------------------------------------
def _truncated_pareto_quantile(u: np.ndarray, alpha: float, h: float) -> np.ndarray:
    """Inverse CDF of a Pareto(``alpha``) on ``[1, h]`` (density ~ x^-(alpha+1))."""
    return (1.0 - u * (1.0 - h ** (-alpha))) ** (-1.0 / alpha)


def _cap_for_max_degree(alpha: float, avg_degree: float, max_degree: float) -> float:
    """Upper cut-off ``h`` with ``avg_degree * h / E[theta] ~= max_degree`` (bisection)."""
    grid = (np.arange(1 << 14) + 0.5) / (1 << 14)  # midpoint rule for E[theta]

    def ratio(h: float) -> float:
        return avg_degree * h / float(_truncated_pareto_quantile(grid, alpha, h).mean())

    lo, hi = 0.0, math.log(1e12)
    if ratio(math.exp(hi)) <= max_degree:
        return math.exp(hi)
    if ratio(1.0 + 1e-9) >= max_degree:
        return 1.0 + 1e-9
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if ratio(math.exp(mid)) < max_degree:
            lo = mid
        else:
            hi = mid
    return math.exp(lo)


def degree_propensities(n: int, avg_degree: float, exponent: float,
                        rng: np.random.Generator) -> np.ndarray:
    """Power-law propensities (float64, min 1), capped as described in the module doc."""
    alpha = exponent - 1.0
    max_degree = min(DEGREE_CAP_FACTOR * math.sqrt(n * avg_degree), (n - 1) / 2.0)
    max_degree = max(max_degree, avg_degree)
    h = _cap_for_max_degree(alpha, avg_degree, max_degree)
    return _truncated_pareto_quantile(rng.random(n), alpha, h)


# --------------------------------------------------------------------------------------
# edges
# --------------------------------------------------------------------------------------
class _EndpointSampler:
    """Vectorised sampling of nodes proportional to ``theta``, within or outside a class.

    Inverse-CDF sampling over the cumulative masses of the nodes sorted by class. The lookup
    uses a guide table (bucket -> first candidate index) plus a few vectorised forward steps;
    it returns exactly ``searchsorted(cum, u, side="right")`` but avoids a cache-missing binary
    search per draw (10-20x faster for millions of nodes).
    """

    def __init__(self, theta: np.ndarray, labels: np.ndarray, classes: int):
        n = theta.shape[0]
        self.order = np.argsort(labels, kind="stable")
        self.cum = np.cumsum(theta[self.order])
        self.total = float(self.cum[-1])
        counts = np.bincount(labels, minlength=classes)
        self.node_end = np.cumsum(counts)
        self.node_start = self.node_end - counts
        ends = np.concatenate([[0.0], self.cum])
        self.mass_start = ends[self.node_start]
        self.mass = ends[self.node_end] - self.mass_start
        self.labels = labels
        self.buckets = 2 * n
        self.inv_width = self.buckets / self.total
        edges = np.arange(self.buckets, dtype=np.float64) * (self.total / self.buckets)
        guide = np.searchsorted(self.cum, edges, side="right")
        del edges
        np.minimum(guide, n - 1, out=guide)
        self.guide = guide.astype(np.int32 if n < 2**31 else np.int64)

    def _lookup(self, u: np.ndarray) -> np.ndarray:
        """``min(searchsorted(cum, u, side="right"), n - 1)`` for ``u`` in ``[0, total]``."""
        last = self.cum.shape[0] - 1
        bucket = (u * self.inv_width).astype(np.int64)
        bucket -= 1  # start one bucket early: robust to rounding in u * inv_width
        np.clip(bucket, 0, self.buckets - 1, out=bucket)
        pos = self.guide[bucket].astype(np.int64)
        del bucket
        active = np.flatnonzero((pos < last) & (self.cum[pos] <= u))
        while active.shape[0]:
            step = pos[active] + 1
            pos[active] = step
            active = active[(step < last) & (self.cum[step] <= u[active])]
        return pos

    def any(self, r: np.ndarray) -> np.ndarray:
        return self.order[self._lookup(r * self.total)]

    def same_class(self, cls: np.ndarray, r: np.ndarray) -> np.ndarray:
        pos = self._lookup(self.mass_start[cls] + r * self.mass[cls])
        np.clip(pos, self.node_start[cls], self.node_end[cls] - 1, out=pos)
        return self.order[pos]

    def other_class(self, cls: np.ndarray, r: np.ndarray) -> np.ndarray:
        start = self.mass_start[cls]
        u = r * (self.total - self.mass[cls])
        u += np.where(u >= start, self.mass[cls], 0.0)
        return self.order[self._lookup(u)]


class _RingSampler:
    """Nodes proportional to ``theta`` inside a window of a line of nodes in id order: the
    nodes of each class (``by_class``), or all nodes. A window reaching past an end of its
    line is cut there."""

    def __init__(self, theta: np.ndarray, labels: np.ndarray, classes: int, by_class: bool,
                 min_window: int = 1):
        n = theta.shape[0]
        self.min_window = max(1, int(min_window))
        self.order = (np.argsort(labels, kind="stable") if by_class
                      else np.arange(n, dtype=np.int64))
        self.rank = np.empty(n, dtype=np.int64)
        self.rank[self.order] = np.arange(n, dtype=np.int64)
        self.cum = np.concatenate([[0.0], np.cumsum(theta[self.order])])  # mass before pos
        if by_class:
            counts = np.bincount(labels, minlength=classes)
            self.line_end = np.cumsum(counts)
            self.line_start = self.line_end - counts
        else:
            self.line_start, self.line_end = np.array([0]), np.array([n])
        self.labels = labels
        self.by_class = by_class

    def near(self, src: np.ndarray, rng: np.random.Generator, exponent: float,
             leave_own_class: bool = False) -> np.ndarray:
        """For each ``src``, a node of its line (its class's, or all) within a window of
        half-width ``w ~ w^-exponent`` on ``[min_window, size / 2]``, proportional to
        ``theta``. ``leave_own_class``: a draw of ``src``'s own class is drawn again in a
        window twice as wide (up to :data:`MAX_ESCAPE_DOUBLINGS` times; what is left is
        returned as drawn, for the caller to reject) — where classes occupy regions of the
        line, an inter-class neighbour is then the nearest other region's, not a far one."""
        line = self.labels[src] if self.by_class else np.zeros(src.shape[0], dtype=np.int64)
        start, end = self.line_start[line], self.line_end[line]
        half = np.maximum((end - start) // 2, 1)
        floor = np.minimum(self.min_window, half).astype(np.float64)
        w = floor * np.floor(_power_law(rng.random(src.shape[0]), exponent,
                                        np.maximum(half / floor, 1.0)))
        w = np.clip(w.astype(np.int64), 1, half)
        pos = self.rank[src]
        found = self._within(pos, w, start, end, rng)
        if leave_own_class:
            again = np.flatnonzero(self.labels[self.order[found]] == self.labels[src])
            for _ in range(MAX_ESCAPE_DOUBLINGS):
                if again.shape[0] == 0:
                    break
                w[again] = np.minimum(2 * w[again], end[again] - start[again])
                found[again] = self._within(pos[again], w[again], start[again], end[again], rng)
                again = again[self.labels[self.order[found[again]]] == self.labels[src[again]]]
        return self.order[found]

    def _within(self, pos: np.ndarray, w: np.ndarray, start: np.ndarray, end: np.ndarray,
                rng: np.random.Generator) -> np.ndarray:
        """Line positions drawn proportional to ``theta`` in ``[pos - w, pos + w]`` cut to
        the line ``[start, end)``."""
        lo = np.maximum(pos - w, start)
        hi = np.minimum(pos + w, end - 1)
        target = self.cum[lo] + rng.random(pos.shape[0]) * (self.cum[hi + 1] - self.cum[lo])
        found = np.searchsorted(self.cum, target, side="right") - 1
        np.clip(found, lo, hi, out=found)
        return found


def _power_law(u: np.ndarray, exponent: float, top: np.ndarray) -> np.ndarray:
    """Inverse CDF of a density ``~ x^-exponent`` on ``[1, top]`` (per-row ``top``)."""
    if abs(exponent - 1.0) < 1e-12:
        return top ** u
    a = 1.0 - exponent
    return (1.0 + u * (top ** a - 1.0)) ** (1.0 / a)


def _draw_pool_keys(sampler: _EndpointSampler, n: int, count: int, intra: bool,
                    seed_words: tuple[int, ...], ring: _RingSampler | None = None,
                    locality: float = 0.0, exponent: float = 1.0) -> np.ndarray:
    """``count`` candidate undirected edges as keys ``lo * n + hi`` (self-loops -> -1); a
    share ``locality`` of them drawn near their first endpoint on ``ring`` (its line)."""
    out = np.empty(count, dtype=np.int64)
    for k, start in enumerate(range(0, count, EDGE_CHUNK)):
        m = min(EDGE_CHUNK, count - start)
        rng = seeded_rng(*seed_words, k)
        src = sampler.any(rng.random(m))
        cls = sampler.labels[src]
        r = rng.random(m)
        dst = sampler.same_class(cls, r) if intra else sampler.other_class(cls, r)
        del r
        if ring is not None and locality > 0:  # its own stream: locality 0 draws nothing
            near_rng = seeded_rng(*seed_words, k, 1 << 20)
            local = np.flatnonzero(near_rng.random(m) < locality)
            dst[local] = ring.near(src[local], near_rng, exponent, leave_own_class=not intra)
        lo = np.minimum(src, dst)
        hi = np.maximum(src, dst)
        key = lo * np.int64(n) + hi
        key[lo == hi] = -1
        if not intra:  # guards float rounding at class boundaries and degenerate classes
            key[cls == sampler.labels[dst]] = -1
        out[start:start + m] = key
    return out


def sorted_distinct(keys: np.ndarray) -> np.ndarray:
    """Sorted distinct values of an int64 array, sort-based (``np.unique`` on numpy >= 2.3 takes
    a hash-table path that is orders of magnitude slower for tens of millions of keys)."""
    keys = np.sort(keys)
    if keys.shape[0] < 2:
        return keys
    mask = np.empty(keys.shape[0], dtype=bool)
    mask[0] = True
    np.not_equal(keys[1:], keys[:-1], out=mask[1:])
    return keys[mask]


def _fill_pool(sampler: _EndpointSampler, n: int, target: int, intra: bool,
               seed_words: tuple[int, ...], ring: _RingSampler | None = None,
               locality: float = 0.0, exponent: float = 1.0) -> np.ndarray:
    """Sorted distinct keys of one edge pool, topped up towards ``target`` edges."""
    keys = np.empty(0, dtype=np.int64)
    accept = 1.0  # estimated fraction of fresh draws that become new distinct edges
    for rnd in range(MAX_TOPUP_ROUNDS):
        need = target - keys.shape[0]
        if need <= 0:
            break
        draw = int(min(math.ceil(need / max(accept, 0.05) * 1.02) + 16, max(4 * need, 1024)))
        words = (*seed_words, rnd)
        new = sorted_distinct(_draw_pool_keys(sampler, n, draw, intra, words, ring, locality,
                                              exponent))
        new = new[np.searchsorted(new, 0):]  # drop self-loop / rejected markers (-1)
        if keys.shape[0] and new.shape[0]:
            pos = np.searchsorted(keys, new)
            np.minimum(pos, keys.shape[0] - 1, out=pos)
            new = new[keys[pos] != new]
        accept = max(new.shape[0] / draw, 1e-3)
        if new.shape[0] > need:  # drop a uniformly random excess
            excess = new.shape[0] - need
            drop = seeded_rng(*words, 1 << 30).choice(new.shape[0], size=excess, replace=False)
            new = np.delete(new, drop)
        if new.shape[0] == 0:
            break
        keys = np.insert(keys, np.searchsorted(keys, new), new)
    return keys


def generate_edges(theta: np.ndarray, labels: np.ndarray, classes: int, num_edges: int,
                   homophily: float, seed: int, locality: float = 0.0,
                   locality_exponent: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Undirected DC-SBM edges ``(lo, hi)`` with ``lo < hi``, distinct, ~``num_edges``; a
    share ``locality`` of each pool drawn near on the line of nodes (module doc)."""
    n = theta.shape[0]
    sampler = _EndpointSampler(theta, labels, classes)
    n_intra = round(homophily * num_edges)
    pools = []
    for pool, (intra, target) in enumerate(((True, n_intra), (False, num_edges - n_intra))):
        if target > 0:
            ring = (_RingSampler(theta, labels, classes, by_class=intra,
                                 min_window=math.ceil(2 * num_edges / n))
                    if locality > 0 else None)
            pools.append(_fill_pool(sampler, n, target, intra, (seed, _STREAM_EDGES, pool),
                                    ring, locality, locality_exponent))
            del ring
    del sampler
    keys = np.concatenate(pools) if pools else np.empty(0, dtype=np.int64)
    del pools
    lo = keys // n
    keys -= lo * n
    return lo, keys


def regional_labels(n: int, classes: int, regions: int, seed: int) -> np.ndarray:
    """Labels laid out along the line of nodes in id order: ``classes * regions`` equal
    segments, each run of ``classes`` consecutive segments a permutation of the classes
    (stream ``[seed, _STREAM_REGIONS]``), two neighbouring segments never of one class."""
    rng = seeded_rng(seed, _STREAM_REGIONS)
    runs: list[np.ndarray] = []
    for _ in range(regions):
        perm = rng.permutation(classes)
        if runs and perm[0] == runs[-1][-1]:
            perm[[0, -1]] = perm[[-1, 0]]
        runs.append(perm)
    segment_class = np.concatenate(runs).astype(np.int64)
    return segment_class[(np.arange(n, dtype=np.int64) * (classes * regions)) // n]


def recorded_labels(labels: np.ndarray, classes: int, label_noise: float,
                    seed: int) -> np.ndarray:
    """The labels a dataset records: ``labels`` with a uniform random subset of exactly
    ``round(label_noise * n)`` nodes given a uniform random class instead (stream
    ``[seed, _STREAM_LABEL_NOISE]``; a drawn class may be the node's own)."""
    if float(label_noise) <= 0.0:
        return labels
    n = labels.shape[0]
    rng = seeded_rng(seed, _STREAM_LABEL_NOISE)
    noisy = rng.permutation(n)[:round(float(label_noise) * n)]
    out = labels.copy()
    out[noisy] = rng.integers(0, classes, size=noisy.shape[0], dtype=np.int64)
    return out


def signal_mask(n: int, signal_fraction: float, seed: int) -> np.ndarray | None:
    """Which nodes carry their class mean in their features: exactly
    ``round(signal_fraction * n)`` nodes, a uniform random subset drawn from its own stream
    ``[seed, _STREAM_SIGNAL]``; ``None`` (every node) when ``signal_fraction == 1``."""
    if float(signal_fraction) >= 1.0:
        return None
    count = round(float(signal_fraction) * n)
    mask = np.zeros(n, dtype=bool)
    mask[seeded_rng(seed, _STREAM_SIGNAL).permutation(n)[:count]] = True
    return mask


# --------------------------------------------------------------------------------------
# public entry point
# --------------------------------------------------------------------------------------
def generate_synthetic(spec: dict, name: str = "synthetic") -> GraphDataset:
    """Generate a DC-SBM graph from a ``$defs/synthetic`` config spec (see module doc)."""
    p = resolve_synthetic_spec(spec)
    n, classes, dim, seed = int(p["nodes"]), int(p["classes"]), int(p["feature_dim"]), int(
        p["seed"])
    avg_degree = float(p["avg_degree"])

    node_rng = seeded_rng(seed, _STREAM_NODES)
    labels = node_rng.integers(0, classes, size=n, dtype=np.int64)
    if int(p["class_regions"]) > 0:  # drawn above all the same: theta's stream is kept
        labels = regional_labels(n, classes, int(p["class_regions"]), seed)
    theta = degree_propensities(n, avg_degree, float(p["degree_exponent"]), node_rng)
    class_means = (node_rng.standard_normal((classes, dim)) / math.sqrt(dim)).astype(np.float32)

    max_pairs = n * (n - 1) // 2
    num_edges = min(round(n * avg_degree / 2.0), max_pairs)
    lo, hi = generate_edges(theta, labels, classes, num_edges, float(p["homophily"]), seed,
                            float(p["locality"]), float(p["locality_exponent"]))
    del theta
    indptr, indices = symmetrize_csr(n, lo, hi)
    del lo, hi

    features = np.empty((n, dim), dtype=np.float32)
    mask = signal_mask(n, float(p["signal_fraction"]), seed)
    if mask is None:
        offsets, offset_rows = class_means, labels
    else:  # uninformative nodes add the extra all-zero row: pure noise
        offsets = np.concatenate([class_means, np.zeros((1, dim), dtype=np.float32)])
        offset_rows = np.where(mask, labels, classes)
        del mask
    fill_features(features, (seed, _STREAM_FEATURES), scale=float(p["feature_noise"]),
                  offsets=offsets, labels=offset_rows)
    del offset_rows

    labels = recorded_labels(labels, classes, float(p["label_noise"]), seed)
    train_idx, val_idx, test_idx = random_split(n, p["split"], seeded_rng(seed, _STREAM_SPLIT))
    return GraphDataset(name=name, indptr=indptr, indices=indices, features=features,
                        labels=labels, train_idx=train_idx, val_idx=val_idx, test_idx=test_idx,
                        num_classes=classes)
