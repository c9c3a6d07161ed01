"""Cora / Citeseer / Pubmed from the raw Planetoid files (Yang et al., 2016).

The raw release is eight files per dataset, ``ind.<name>.{x,y,tx,ty,allx,ally,graph}``
(Python-2 pickles) and ``ind.<name>.test.index`` (one node id per line). They are read
with :class:`RestrictedUnpickler`, which resolves only the handful of numpy / scipy /
collections globals these files use, so a tampered file cannot run code.

Processing follows Kipf's ``gcn`` repository and PyG's ``read_planetoid_data``:

* node ``i < len(allx)`` takes row ``i`` of ``allx``/``ally``; test node ``test_index[k]``
  takes row ``k`` of ``tx``/``ty`` (the "test indices reordering");
* the graph has ``len(allx) + (max(test_index) - min(test_index) + 1)`` nodes. Citeseer
  has 15 isolated nodes inside the test range that are absent from ``test.index``: they get
  all-zero features and an all-zero one-hot label, hence class 0 (``argmax`` of a zero row,
  as in PyG), and they belong to no split;
* public split: ``train = range(len(y))`` (20 per class), ``val = range(len(y),
  len(y) + 500)``, ``test = sorted(test_index)``;
* edges come from the ``graph`` adjacency dict and are symmetrised, de-duplicated and
  stripped of self-loops by :func:`~commgnn.data.store.symmetrize_csr`.

Features are returned raw (binary bag-of-words for Cora/Citeseer, TF-IDF for Pubmed);
:func:`normalize_features` applies Kipf's row normalisation when a model wants it.
"""

from __future__ import annotations

import collections
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from commgnn.data.store import DatasetError, GraphDataset, symmetrize_csr, validate_arrays

PLANETOID_NAMES = ("cora", "citeseer", "pubmed")
PICKLED_PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph")
NUM_VAL = 500

try:  # numpy >= 2 moved the implementation; ``numpy.core`` is a deprecated alias there.
    from numpy._core.multiarray import _reconstruct as _np_reconstruct
except ImportError:  # pragma: no cover - numpy 1.x
    from numpy.core.multiarray import _reconstruct as _np_reconstruct


#: ``(module, name) -> object`` for every global the Planetoid pickles reference. The
#: objects are bound here, so no module is imported on behalf of a pickle.
ALLOWED_GLOBALS: dict[tuple[str, str], Any] = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("numpy.core.multiarray", "_reconstruct"): _np_reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _np_reconstruct,
    ("scipy.sparse.csr", "csr_matrix"): sp.csr_matrix,
    ("collections", "defaultdict"): collections.defaultdict,
    ("__builtin__", "list"): list,  # Python-2 name of ``builtins.list``
    ("builtins", "list"): list,
}


class RestrictedUnpickler(pickle.Unpickler):
    """Unpickler that resolves only :data:`ALLOWED_GLOBALS`; anything else is refused."""

    def __init__(self, file, source: Path, **kwargs):
        super().__init__(file, **kwargs)
        self._source = source

    def find_class(self, module: str, name: str) -> Any:
        try:
            return ALLOWED_GLOBALS[(module, name)]
        except KeyError:
            raise DatasetError(f"{self._source}: pickle references the global "
                               f"'{module}.{name}', which is not allowed") from None


def restricted_load(path: Path) -> Any:
    """Unpickle ``path`` (Python-2 pickle, ``latin1``) with :class:`RestrictedUnpickler`."""
    if not path.is_file():
        raise DatasetError(f"{path}: missing")
    try:
        with open(path, "rb") as handle:
            return RestrictedUnpickler(handle, source=path, encoding="latin1").load()
    except DatasetError:
        raise
    except Exception as exc:  # truncated/corrupt pickles raise many different types
        raise DatasetError(f"{path}: truncated or corrupt pickle "
                           f"({type(exc).__name__}: {exc})") from exc


def _dense_matrix(obj: Any, path: Path) -> np.ndarray:
    """A 2-D float32 array from an unpickled scipy CSR matrix or numpy array."""
    try:
        if isinstance(obj, sp.spmatrix | sp.sparray):
            # Rebuild from the raw buffers: the pickled __dict__ is from an old scipy, and the
            # constructor re-validates it.
            state = vars(obj)
            shape = state.get("_shape", getattr(obj, "shape", None))
            matrix = sp.csr_matrix((state["data"], state["indices"], state["indptr"]),
                                   shape=shape)
            return matrix.toarray().astype(np.float32, copy=False)
        if isinstance(obj, np.ndarray) and obj.ndim == 2:
            return obj.astype(np.float32, copy=False)
    except (KeyError, ValueError, TypeError) as exc:
        raise DatasetError(f"{path}: inconsistent sparse matrix ({exc})") from exc
    raise DatasetError(f"{path}: expected a 2-D sparse matrix or array, got "
                       f"{type(obj).__name__}")


def _one_hot(obj: Any, path: Path) -> np.ndarray:
    if not isinstance(obj, np.ndarray) or obj.ndim != 2:
        raise DatasetError(f"{path}: expected a 2-D one-hot label array, got "
                           f"{type(obj).__name__} {getattr(obj, 'shape', '')}")
    return obj


def _read_test_index(path: Path) -> np.ndarray:
    if not path.is_file():
        raise DatasetError(f"{path}: missing")
    try:
        values = [int(line) for line in path.read_text(encoding="ascii").split()]
    except (UnicodeDecodeError, ValueError) as exc:
        raise DatasetError(f"{path}: not one integer node id per line ({exc})") from exc
    if not values:
        raise DatasetError(f"{path}: empty")
    return np.asarray(values, dtype=np.int64)


def _edges_from_adjacency(graph: Any, num_nodes: int, path: Path) -> tuple[np.ndarray,
                                                                            np.ndarray]:
    if not isinstance(graph, dict):
        raise DatasetError(f"{path}: expected an adjacency dict, got {type(graph).__name__}")
    src: list[int] = []
    dst: list[int] = []
    try:
        for node, neighbours in graph.items():
            src.extend([int(node)] * len(neighbours))
            dst.extend(int(v) for v in neighbours)
    except (TypeError, ValueError) as exc:
        raise DatasetError(f"{path}: malformed adjacency dict ({exc})") from exc
    src_arr = np.asarray(src, dtype=np.int64)
    dst_arr = np.asarray(dst, dtype=np.int64)
    for arr in (src_arr, dst_arr):
        if arr.size and (arr.min() < 0 or arr.max() >= num_nodes):
            raise DatasetError(f"{path}: node ids outside [0, {num_nodes})")
    return src_arr, dst_arr


def load_planetoid(name: str, path: str | Path) -> GraphDataset:
    """Load Cora, Citeseer or Pubmed (public split) from the raw Planetoid files in ``path``."""
    key = name.lower()
    if key not in PLANETOID_NAMES:
        raise ValueError(f"unknown Planetoid dataset {name!r}; expected one of "
                         f"{PLANETOID_NAMES}")
    root = Path(path)

    def part(suffix: str) -> Path:
        return root / f"ind.{key}.{suffix}"

    raw = {s: restricted_load(part(s)) for s in PICKLED_PARTS}
    test_path = part("test.index")
    test_index = _read_test_index(test_path)

    x = _dense_matrix(raw["x"], part("x"))
    allx = _dense_matrix(raw["allx"], part("allx"))
    tx = _dense_matrix(raw["tx"], part("tx"))
    y = _one_hot(raw["y"], part("y"))
    ally = _one_hot(raw["ally"], part("ally"))
    ty = _one_hot(raw["ty"], part("ty"))

    num_classes = int(ally.shape[1])
    dim = int(allx.shape[1])
    for arr, suffix in ((x, "x"), (tx, "tx")):
        if arr.shape[1] != dim:
            raise DatasetError(f"{part(suffix)}: {arr.shape[1]} feature columns, allx has {dim}")
    for arr, suffix in ((y, "y"), (ty, "ty")):
        if arr.shape[1] != num_classes:
            raise DatasetError(f"{part(suffix)}: {arr.shape[1]} label columns, ally has "
                               f"{num_classes}")
    if ally.shape[0] != allx.shape[0]:
        raise DatasetError(f"{part('ally')}: {ally.shape[0]} rows, allx has {allx.shape[0]}")
    if tx.shape[0] != test_index.shape[0] or ty.shape[0] != test_index.shape[0]:
        raise DatasetError(f"{test_path}: {test_index.shape[0]} ids but tx/ty have "
                           f"{tx.shape[0]}/{ty.shape[0]} rows")
    if np.unique(test_index).shape[0] != test_index.shape[0]:
        raise DatasetError(f"{test_path}: duplicate test node ids")
    num_known = allx.shape[0]
    if test_index.min() != num_known:
        raise DatasetError(f"{test_path}: smallest test id {test_index.min()} != "
                           f"len(allx) = {num_known}")
    if y.shape[0] + NUM_VAL > num_known:
        raise DatasetError(f"{part('y')}: {y.shape[0]} training rows + {NUM_VAL} validation "
                           f"nodes exceed len(allx) = {num_known}")

    # Node range: allx rows, then the full test-id range (Citeseer has gaps: zero rows).
    num_nodes = int(test_index.max()) + 1
    features = np.zeros((num_nodes, dim), dtype=np.float32)
    features[:num_known] = allx
    features[test_index] = tx
    one_hot = np.zeros((num_nodes, num_classes), dtype=np.int64)
    one_hot[:num_known] = ally
    one_hot[test_index] = ty
    labels = one_hot.argmax(axis=1).astype(np.int64)

    src, dst = _edges_from_adjacency(raw["graph"], num_nodes, part("graph"))
    indptr, indices = symmetrize_csr(num_nodes, src, dst)

    ds = GraphDataset(
        name=key,
        indptr=indptr,
        indices=indices,
        features=features,
        labels=labels,
        train_idx=np.arange(y.shape[0], dtype=np.int64),
        val_idx=np.arange(y.shape[0], y.shape[0] + NUM_VAL, dtype=np.int64),
        test_idx=np.sort(test_index),
        num_classes=num_classes,
    )
    validate_arrays(ds, where=str(root / f"ind.{key}.*"))
    return ds


def normalize_features(features: np.ndarray) -> np.ndarray:
    """Row-normalise ``features`` to unit L1 norm (Kipf & Welling); zero rows stay zero."""
    features = np.asarray(features, dtype=np.float32)
    row_sum = features.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore"):
        inv = np.where(row_sum != 0, 1.0 / row_sum, 0.0).astype(np.float32)
    return features * inv
