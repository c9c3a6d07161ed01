"""The :class:`Partition` result and :func:`partition_graph`, the entry point.

``spec`` is one ``partitionings.<name>`` entry of the pipeline config::

    method         metis | random | chunk                         (required)
    parts          number of workers P                            (required)
    chunks         chunk only: number of chunks C, default max(P, 2) (one base chunk per
                   worker); needs 2 <= C and P <= C (C > P rotates the base chunks)
    chunk_method   chunk only: random (default) | metis
    balance_train  metis (or chunk with chunk_method metis): balance training nodes per
                   part with a 2-constraint METIS (weights [1, is_train]), default false
    halo_hops      k of the k-hop halo sets, default 1
    seed           default 0

The unit of the partition book is the *part* for metis/random (``num_parts = P``) and the
*chunk* for the chunk method (``num_parts = C``; P is kept as ``workers``). Halos and stats
are per unit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from commgnn.core.errors import InputError
from commgnn.data.store import GraphDataset, fingerprint_of
from commgnn.partition.book import PartitionBook
from commgnn.partition.chunk import CHUNK_METHODS, chunk_assign, chunk_pairs
from commgnn.partition.halo import compute_halos
from commgnn.partition.metis import metis_assign
from commgnn.partition.random import random_assign
from commgnn.partition.stats import partition_stats

METHODS = ("metis", "random", "chunk")
MAX_SEED = 2**32 - 1


class PartitionError(InputError):
    """A partition directory file is missing, corrupt or inconsistent."""


@dataclass(eq=False)
class Partition:
    """A partitioned graph: the book, per-unit halos and statistics.

    ``spec`` is the normalised spec (defaults filled in, see :func:`normalize_spec`).
    ``timing`` holds wall-clock seconds (not deterministic, stored apart from ``stats``).
    ``dataset`` identifies the partitioned graph (name, num_nodes, num_edges and its
    ``fingerprint``, :mod:`commgnn.core.provenance`). ``fingerprint`` is the partition's own,
    set when loaded from a directory (:func:`commgnn.partition.io.partition_fingerprint`).
    """

    spec: dict
    book: PartitionBook
    halos: list[np.ndarray]
    stats: dict
    dataset: dict
    timing: dict = field(default_factory=dict)
    fingerprint: str | None = None

    @property
    def method(self) -> str:
        return self.spec["method"]

    @property
    def num_parts(self) -> int:
        """Units of the book: parts (metis/random) or chunks (chunk)."""
        return self.book.num_parts

    @property
    def workers(self) -> int:
        return int(self.spec["parts"])

    @property
    def chunks(self) -> int | None:
        return int(self.spec["chunks"]) if self.method == "chunk" else None

    @property
    def halo_hops(self) -> int:
        return int(self.spec["halo_hops"])

    @property
    def seed(self) -> int:
        return int(self.spec["seed"])

    def nodes(self, part: int) -> np.ndarray:
        """Sorted global ids owned by ``part`` (a chunk for the chunk method)."""
        return self.book.nodes(part)

    def halo(self, part: int) -> np.ndarray:
        """Sorted global ids of ``part``'s ``halo_hops``-hop halo."""
        return self.halos[part]

    def chunk_pairs(self, super_epoch: int) -> list[tuple[int, int]]:
        """Chunk method only: ``(base, swept)`` chunk per worker in ``super_epoch``."""
        if self.method != "chunk":
            raise ValueError(f"chunk_pairs needs method 'chunk', this is {self.method!r}")
        return chunk_pairs(self.num_parts, self.workers, super_epoch)


def _int(spec: dict, key: str, default: int | None, lo: int, hi: int) -> int:
    value = spec.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"partitioning.{key} must be an integer, got {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"partitioning.{key} = {value} outside [{lo}, {hi}]")
    return int(value)


def normalize_spec(spec: dict) -> dict:
    """Validate ``spec`` and return it with defaults filled in (raises ``ValueError``)."""
    if not isinstance(spec, dict):
        raise ValueError(f"partitioning spec must be a mapping, got {type(spec).__name__}")
    method = spec.get("method")
    if method not in METHODS:
        raise ValueError(f"partitioning.method must be one of {METHODS}, got {method!r}")
    known = {"method", "parts", "chunks", "chunk_method", "balance_train", "halo_hops", "seed"}
    unknown = sorted(set(spec) - known)
    if unknown:
        raise ValueError(f"partitioning: unknown keys {unknown}")
    if method != "chunk":
        extra = sorted({"chunks", "chunk_method"} & set(spec))
        if extra:
            raise ValueError(f"partitioning: {extra} only apply to method 'chunk'")
    if "parts" not in spec:
        raise ValueError("partitioning.parts is required")
    out: dict = {"method": method, "parts": _int(spec, "parts", None, 1, 4096)}
    uses_metis = method == "metis"
    if method == "chunk":
        out["chunks"] = _int(spec, "chunks", max(out["parts"], 2), 2, 65536)
        if out["chunks"] < out["parts"]:
            raise ValueError(f"partitioning.chunks = {out['chunks']} < parts = "
                             f"{out['parts']}: every worker needs its own base chunk")
        chunk_method = spec.get("chunk_method", "random")
        if chunk_method not in CHUNK_METHODS:
            raise ValueError(f"partitioning.chunk_method must be one of {CHUNK_METHODS}, "
                             f"got {chunk_method!r}")
        out["chunk_method"] = chunk_method
        uses_metis = chunk_method == "metis"
    balance_train = spec.get("balance_train", False)
    if not isinstance(balance_train, bool):
        raise ValueError(f"partitioning.balance_train must be a boolean, got {balance_train!r}")
    if balance_train and not uses_metis:
        raise ValueError("partitioning.balance_train only applies to METIS partitioning "
                         "(method 'metis' or chunk_method 'metis')")
    if uses_metis:
        out["balance_train"] = balance_train
    out["halo_hops"] = _int(spec, "halo_hops", 1, 0, 8)
    out["seed"] = _int(spec, "seed", 0, 0, MAX_SEED)
    return out


def _train_mask(ds: GraphDataset) -> np.ndarray:
    mask = np.zeros(ds.num_nodes, dtype=bool)
    mask[np.asarray(ds.train_idx)] = True
    return mask


def partition_graph(ds: GraphDataset, spec: dict) -> Partition:
    """Partition ``ds`` as ``spec`` says (see the module docstring); deterministic in the seed."""
    spec = normalize_spec(spec)
    method, seed = spec["method"], spec["seed"]
    units = spec["chunks"] if method == "chunk" else spec["parts"]
    if units > ds.num_nodes:
        raise ValueError(f"cannot cut {ds.num_nodes} nodes into {units} "
                         f"{'chunks' if method == 'chunk' else 'parts'}")
    indptr, indices = np.asarray(ds.indptr), np.asarray(ds.indices)
    train_mask = _train_mask(ds) if spec.get("balance_train") else None
    start = time.perf_counter()
    if method == "random":
        owner = random_assign(ds.num_nodes, units, seed)
    elif method == "metis":
        owner = metis_assign(indptr, indices, units, seed, train_mask=train_mask)
    else:
        owner = chunk_assign(indptr, indices, units, spec["chunk_method"], seed,
                             train_mask=train_mask)
    assigned = time.perf_counter()
    book = PartitionBook.from_owner(owner, units)
    halos = compute_halos(indptr, indices, book.owner, units, spec["halo_hops"])
    haloed = time.perf_counter()
    stats = partition_stats(ds, book, halos)
    done = time.perf_counter()
    timing = {
        "assign_s": assigned - start,
        "book_halo_s": haloed - assigned,
        "stats_s": done - haloed,
        "total_s": done - start,
    }
    dataset = {"name": ds.name, "num_nodes": ds.num_nodes, "num_edges": ds.num_edges,
               "fingerprint": fingerprint_of(ds)}
    return Partition(spec=spec, book=book, halos=halos, stats=stats, dataset=dataset,
                     timing=timing)
