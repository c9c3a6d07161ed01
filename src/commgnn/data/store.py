"""The one on-disk graph format every dataset source converts to.

A dataset directory holds one ``.npy`` file per array and a ``meta.json``:

=============  =========  ===========================================================
file           dtype      meaning
=============  =========  ===========================================================
indptr.npy     int64      CSR row pointer, length ``num_nodes + 1``
indices.npy    int64      CSR column ids: ``indices[indptr[v]:indptr[v+1]]`` are the
                          neighbours of ``v`` (messages flow neighbour -> v); sorted,
                          no duplicates, no self-loops; undirected graphs are symmetric
features.npy   float32    ``(num_nodes, feature_dim)``
labels.npy     int64      ``(num_nodes,)`` class ids in ``[0, num_classes)``
train_idx.npy  int64      sorted node ids of the training split (also val/test)
=============  =========  ===========================================================

``meta.json`` records the name, source, statistics and the SHA-256 of every array file.
:func:`write_dataset` writes into a temporary sibling directory and renames it into place,
so a crash never leaves a directory that looks complete. :func:`load_dataset` maps the
arrays read-only and checks shapes (and, on request, checksums) with errors that name the file.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from commgnn.errors import InputError
from commgnn.files import atomic_directory, read_json_object

FORMAT_VERSION = 1
ARRAY_FILES = ("indptr", "indices", "features", "labels", "train_idx", "val_idx", "test_idx")
META_FILE = "meta.json"


class DatasetError(InputError):
    """A dataset file is missing, truncated, corrupt or inconsistent."""


@dataclass(frozen=True)
class GraphDataset:
    """A node-classification graph in CSR form (arrays may be read-only memory maps)."""

    name: str
    indptr: np.ndarray
    indices: np.ndarray
    features: np.ndarray
    labels: np.ndarray
    train_idx: np.ndarray
    val_idx: np.ndarray
    test_idx: np.ndarray
    num_classes: int

    @property
    def num_nodes(self) -> int:
        return int(self.indptr.shape[0] - 1)

    @property
    def num_edges(self) -> int:
        """Number of directed (CSR) edges."""
        return int(self.indices.shape[0])

    @property
    def feature_dim(self) -> int:
        return int(self.features.shape[1])

    def degrees(self) -> np.ndarray:
        return np.diff(self.indptr)


def sha256_file(path: Path, chunk_bytes: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk_bytes):
            digest.update(block)
    return digest.hexdigest()


def graph_statistics(ds: GraphDataset) -> dict:
    """Summary statistics stored in ``meta.json``."""
    deg = ds.degrees()
    return {
        "num_nodes": ds.num_nodes,
        "num_edges": ds.num_edges,
        "feature_dim": ds.feature_dim,
        "num_classes": ds.num_classes,
        "num_train": int(ds.train_idx.shape[0]),
        "num_val": int(ds.val_idx.shape[0]),
        "num_test": int(ds.test_idx.shape[0]),
        "avg_degree": float(deg.mean()) if deg.size else 0.0,
        "max_degree": int(deg.max()) if deg.size else 0,
        "isolated_nodes": int((deg == 0).sum()),
    }


def validate_arrays(ds: GraphDataset, where: str = "dataset") -> None:
    """Check structural invariants; raise :class:`DatasetError` naming ``where``."""
    n = ds.num_nodes
    if n <= 0:
        raise DatasetError(f"{where}: graph has no nodes")
    if ds.indptr[0] != 0 or ds.indptr[-1] != ds.indices.shape[0]:
        raise DatasetError(f"{where}: indptr does not span indices ({ds.indptr[-1]} vs "
                           f"{ds.indices.shape[0]})")
    if np.any(np.diff(ds.indptr) < 0):
        raise DatasetError(f"{where}: indptr is not non-decreasing")
    if ds.indices.size and (ds.indices.min() < 0 or ds.indices.max() >= n):
        raise DatasetError(f"{where}: indices out of range [0, {n})")
    if ds.features.ndim != 2 or ds.features.shape[0] != n:
        raise DatasetError(f"{where}: features shape {ds.features.shape} != ({n}, d)")
    if ds.labels.shape != (n,):
        raise DatasetError(f"{where}: labels shape {ds.labels.shape} != ({n},)")
    if ds.labels.size and (ds.labels.min() < 0 or ds.labels.max() >= ds.num_classes):
        raise DatasetError(f"{where}: labels outside [0, {ds.num_classes})")
    for split in ("train_idx", "val_idx", "test_idx"):
        idx = getattr(ds, split)
        if idx.ndim != 1 or (idx.size and (idx.min() < 0 or idx.max() >= n)):
            raise DatasetError(f"{where}: {split} has ids outside [0, {n})")


def _as_dtype(array: np.ndarray, dtype: type) -> np.ndarray:
    return np.ascontiguousarray(array, dtype=dtype)


def write_dataset(ds: GraphDataset, out_dir: str | Path, source: dict | None = None) -> Path:
    """Validate ``ds`` and write it atomically to ``out_dir`` (replacing nothing partial).

    ``source`` (e.g. the config spec that produced it) is recorded in ``meta.json``.
    """
    out_dir = Path(out_dir)
    validate_arrays(ds, where=str(out_dir))
    with atomic_directory(out_dir) as tmp:
        arrays = {
            "indptr": _as_dtype(ds.indptr, np.int64),
            "indices": _as_dtype(ds.indices, np.int64),
            "features": _as_dtype(ds.features, np.float32),
            "labels": _as_dtype(ds.labels, np.int64),
            "train_idx": _as_dtype(ds.train_idx, np.int64),
            "val_idx": _as_dtype(ds.val_idx, np.int64),
            "test_idx": _as_dtype(ds.test_idx, np.int64),
        }
        files = {}
        for key, array in arrays.items():
            path = tmp / f"{key}.npy"
            np.save(path, array, allow_pickle=False)
            files[key] = {
                "file": path.name,
                "dtype": str(array.dtype),
                "shape": list(array.shape),
                "sha256": sha256_file(path),
            }
        meta = {
            "format_version": FORMAT_VERSION,
            "name": ds.name,
            "source": source or {},
            "stats": graph_statistics(ds),
            "files": files,
        }
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return out_dir


def load_npz(path: Path, keys: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Every array of a raw ``.npz`` (no pickles), requiring ``keys``; errors name the file."""
    if not path.is_file():
        raise DatasetError(f"{path}: missing")
    try:
        # Open the file ourselves: np.load leaks its handle when the zip is damaged.
        with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as npz:
            missing = [k for k in keys if k not in npz.files]
            if missing:
                raise DatasetError(f"{path}: lacks arrays {missing}")
            return {k: npz[k] for k in npz.files}
    except DatasetError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise DatasetError(f"{path}: truncated or corrupt ({type(exc).__name__}: {exc})") \
            from exc


def read_meta(data_dir: str | Path) -> dict:
    """Read and sanity-check ``meta.json`` of a dataset directory."""
    meta_path = Path(data_dir) / META_FILE
    meta = read_json_object(meta_path, DatasetError, " (not a commgnn dataset directory?)")
    if meta.get("format_version") != FORMAT_VERSION:
        raise DatasetError(f"{meta_path}: format_version {meta.get('format_version')!r}, "
                           f"expected {FORMAT_VERSION}")
    missing = [k for k in ARRAY_FILES if k not in meta.get("files", {})]
    if missing:
        raise DatasetError(f"{meta_path}: 'files' lacks entries {missing}")
    return meta


def load_dataset(data_dir: str | Path, verify_checksums: bool = False,
                 mmap: bool = True) -> GraphDataset:
    """Load a dataset directory, memory-mapped read-only by default.

    Shapes and dtypes are always checked against ``meta.json``; with ``verify_checksums``
    every file's SHA-256 is recomputed. Any mismatch raises :class:`DatasetError` naming
    the offending file.
    """
    data_dir = Path(data_dir)
    meta = read_meta(data_dir)
    arrays = {}
    for key in ARRAY_FILES:
        entry = meta["files"][key]
        path = data_dir / entry["file"]
        if not path.is_file():
            raise DatasetError(f"{path}: missing")
        if verify_checksums and sha256_file(path) != entry["sha256"]:
            raise DatasetError(f"{path}: checksum mismatch (file is corrupt or was modified)")
        try:
            array = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise DatasetError(f"{path}: unreadable or truncated ({exc})") from exc
        if list(array.shape) != entry["shape"] or str(array.dtype) != entry["dtype"]:
            raise DatasetError(f"{path}: shape/dtype {array.shape}/{array.dtype} differs from "
                               f"meta.json {tuple(entry['shape'])}/{entry['dtype']}")
        arrays[key] = array
    return GraphDataset(name=meta["name"], num_classes=int(meta["stats"]["num_classes"]),
                        **arrays)


def symmetrize_csr(num_nodes: int, src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray,
                                                                               np.ndarray]:
    """Build a symmetric, de-duplicated, self-loop-free CSR from an edge list.

    Returns ``(indptr, indices)`` with each row's neighbours sorted ascending.
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    keep = src != dst
    src, dst = src[keep], dst[keep]
    rows = np.concatenate([src, dst])
    cols = np.concatenate([dst, src])
    return csr_from_pairs(num_nodes, rows, cols)


def csr_from_pairs(num_nodes: int, rows: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray,
                                                                               np.ndarray]:
    """Sorted, de-duplicated CSR from ``(row, col)`` pairs (no symmetrisation)."""
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    key = np.sort(rows * np.int64(num_nodes) + cols)
    if key.size:  # de-duplicate sorted keys (np.unique is far slower here)
        keep = np.empty(key.shape[0], dtype=bool)
        keep[0] = True
        np.not_equal(key[1:], key[:-1], out=keep[1:])
        key = key[keep]
    rows = key // num_nodes
    cols = key - rows * num_nodes
    counts = np.bincount(rows, minlength=num_nodes)
    indptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr, cols.astype(np.int64, copy=False)
