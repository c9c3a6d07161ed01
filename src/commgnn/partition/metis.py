"""METIS k-way partitioning through pymetis (deterministic: fixed METIS seed).

METIS needs an undirected graph without self-loops; :func:`metis_adjacency` symmetrises the
CSR when it is not symmetric already (directed datasets) and drops self-loops.

Balancing training nodes (DistDGL's ``balance_ntypes``/``balance_train``) needs METIS'
multi-constraint mode: ``ncon = 2`` with per-vertex weights ``[1, is_train]``, so every part
gets about ``1/P`` of the nodes *and* ``1/P`` of the training nodes. pymetis 2025.x accepts
``vweights`` but hard-codes ``ncon = 1`` in its C++ wrapper, so an interleaved ``2 * n``
weight array is silently misread as single-constraint weights. For ``ncon = 2`` this module
therefore calls ``METIS_PartGraphKway`` itself through :mod:`ctypes`, from the METIS library
that pymetis links statically (the symbol is exported by ``pymetis._internal``). Both paths
use k-way partitioning (as DistDGL does) and the same METIS options (defaults, ``seed`` set).
"""

from __future__ import annotations

import ctypes
from functools import lru_cache

import numpy as np
import pymetis
import scipy.sparse as sp
from pymetis import _internal
from pymetis._internal import options_indices

from commgnn.partition.book import OWNER_DTYPE

METIS_OK = 1
_NUM_OPTIONS = 64  # >= METIS_NOPTIONS (40 in METIS 5.1/5.2); extra slots are never read


def _idx_dtype() -> np.dtype:
    return np.dtype(pymetis.zero_copy_dtype())


def metis_adjacency(indptr: np.ndarray, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric, self-loop-free CSR ``(xadj, adjncy)`` in METIS' index dtype.

    Returns the input arrays (converted to that dtype) when they already are symmetric and
    self-loop-free, which is the case for every undirected dataset in the store format.
    """
    n = int(indptr.shape[0] - 1)
    idx = _idx_dtype()
    indptr = np.asarray(indptr)
    indices = np.asarray(indices)
    data = np.ones(indices.shape[0], dtype=np.int8)
    adj = sp.csr_matrix((data, indices, indptr), shape=(n, n))
    if not adj.has_sorted_indices:  # the store format sorts rows; inputs may be read-only
        adj = adj.copy()
        adj.sort_indices()
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(adj.indptr))
    has_loops = bool(np.any(rows == adj.indices))
    del rows
    adj_t = adj.T.tocsr()
    adj_t.sort_indices()
    symmetric = (np.array_equal(adj.indptr, adj_t.indptr)
                 and np.array_equal(adj.indices, adj_t.indices))
    if symmetric and not has_loops:
        return (np.ascontiguousarray(adj.indptr, dtype=idx),
                np.ascontiguousarray(adj.indices, dtype=idx))
    sym = (adj + adj_t).tocsr()
    sym.setdiag(0)
    sym.eliminate_zeros()
    sym.sort_indices()
    return (np.ascontiguousarray(sym.indptr, dtype=idx),
            np.ascontiguousarray(sym.indices, dtype=idx))


@lru_cache(maxsize=1)
def _metis_lib() -> ctypes.CDLL:
    lib = ctypes.CDLL(_internal.__file__)
    for name in ("METIS_PartGraphKway", "METIS_SetDefaultOptions"):
        if not hasattr(lib, name):
            raise RuntimeError(f"{_internal.__file__} does not export {name}; "
                               "multi-constraint METIS (balance_train) is unavailable")
    lib.METIS_PartGraphKway.restype = ctypes.c_int
    lib.METIS_SetDefaultOptions.restype = ctypes.c_int
    return lib


def _options_array(seed: int) -> np.ndarray:
    options = np.full(_NUM_OPTIONS, -1, dtype=_idx_dtype())
    _metis_lib().METIS_SetDefaultOptions(options.ctypes.data_as(ctypes.c_void_p))
    options[options_indices.SEED] = seed
    options[options_indices.NUMBERING] = 0
    return options


def _part_graph_multiconstraint(xadj: np.ndarray, adjncy: np.ndarray, vwgt: np.ndarray,
                                nparts: int, seed: int) -> np.ndarray:
    """``METIS_PartGraphKway`` with ``ncon = vwgt.shape[1]`` (row-major ``(n, ncon)``)."""
    idx = _idx_dtype()
    c_idx = ctypes.c_int64 if idx.itemsize == 8 else ctypes.c_int32
    n = int(xadj.shape[0] - 1)
    vwgt = np.ascontiguousarray(vwgt, dtype=idx)
    part = np.zeros(n, dtype=idx)
    options = _options_array(seed)
    nvtxs, ncon, npart, cut = c_idx(n), c_idx(vwgt.shape[1]), c_idx(nparts), c_idx(0)

    def ptr(array: np.ndarray) -> ctypes.c_void_p:
        return array.ctypes.data_as(ctypes.c_void_p)

    status = _metis_lib().METIS_PartGraphKway(
        ctypes.byref(nvtxs), ctypes.byref(ncon), ptr(xadj), ptr(adjncy), ptr(vwgt),
        None, None, ctypes.byref(npart), None, None, ptr(options), ctypes.byref(cut),
        ptr(part))
    if status != METIS_OK:
        raise RuntimeError(f"METIS_PartGraphKway failed with status {status}")
    return part


def metis_assign(indptr: np.ndarray, indices: np.ndarray, num_parts: int, seed: int,
                 train_mask: np.ndarray | None = None) -> np.ndarray:
    """Owner array (int32) of a METIS k-way partition into ``num_parts`` parts.

    With ``train_mask`` (bool per node, at least one ``True``) the partition balances nodes
    and training nodes at once (``ncon = 2``, weights ``[1, is_train]``). Deterministic for
    fixed inputs and ``seed``.
    """
    n = int(indptr.shape[0] - 1)
    if num_parts < 1:
        raise ValueError(f"num_parts must be >= 1, got {num_parts}")
    if num_parts == 1 or n == 0:
        return np.zeros(n, dtype=OWNER_DTYPE)
    xadj, adjncy = metis_adjacency(indptr, indices)
    if train_mask is not None and np.any(train_mask):
        vwgt = np.stack([np.ones(n, dtype=np.int64),
                         np.asarray(train_mask, dtype=np.int64)], axis=1)
        part = _part_graph_multiconstraint(xadj, adjncy, vwgt, num_parts, seed)
    else:
        result = pymetis.part_graph(num_parts, adjacency=pymetis.CSRAdjacency(xadj, adjncy),
                                    recursive=False, options=pymetis.Options(seed=int(seed)))
        part = np.asarray(result.vertex_part)
    owner = np.ascontiguousarray(part, dtype=OWNER_DTYPE)
    if owner.shape != (n,) or (n and (owner.min() < 0 or owner.max() >= num_parts)):
        raise RuntimeError(f"METIS returned an invalid partition (shape {owner.shape})")
    return owner
