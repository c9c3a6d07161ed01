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

``meta.json`` records the name, source, statistics, the SHA-256 of every array file and
the dataset's ``fingerprint`` (:func:`dataset_fingerprint`: a digest of those SHA-256
entries, what derived artefacts record; :mod:`commgnn.core.provenance`).
:func:`write_dataset` writes into a temporary sibling directory and renames it into place,
so a crash never leaves a directory that looks complete. :func:`load_dataset` maps the
arrays read-only and checks, with a :class:`DatasetError` naming the file and the value,
everything an index into them relies on (:func:`validate_arrays`): dtypes and shapes,
node ids within ``[0, num_nodes)`` (CSR indices, splits), labels within
``[0, num_classes)`` and finite features (and, on request, the checksums). A bad id would
otherwise crash a worker without a message (numba kernels do not check bounds).

Features must be finite: NaN/Inf is an error naming the file at write time and at load
time, with no option to allow them (a NaN feature poisons every loss it touches). The
load-time check (:func:`check_finite`, chunked) is cheap: 0.06 s for 2.4M x 100 float32
(960 MB, page-cached) on the 2-core development machine, a tenth of that file's SHA-256.
"""

from __future__ import annotations

import dataclasses
import hashlib
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from commgnn.core.errors import InputError
from commgnn.core.files import atomic_directory, json_text, read_json_object
from commgnn.core.provenance import digest, hinted

FORMAT_VERSION = 1
ARRAY_FILES = ("indptr", "indices", "features", "labels", "train_idx", "val_idx", "test_idx")
#: The dtype of every array file.
DTYPES = {key: "float32" if key == "features" else "int64" for key in ARRAY_FILES}
META_FILE = "meta.json"
#: Rows per chunk of :func:`check_finite` (bounded temporary memory).
FINITE_CHUNK_ROWS = 1 << 16


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
    #: :func:`dataset_fingerprint` of the directory it was loaded from (None in memory).
    fingerprint: str | None = None

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


def _range_error(path: str, what: str, values: np.ndarray, lo: int, hi: int) -> None:
    """:class:`DatasetError` naming ``path`` unless every value lies in ``[lo, hi)``."""
    if not values.size:
        return
    low, high = int(values.min()), int(values.max())
    if low < lo or high >= hi:
        raise DatasetError(f"{path}: {what} out of range [{lo}, {hi}): min {low}, max {high}")


def check_finite(features: np.ndarray, path: str) -> None:
    """Raise :class:`DatasetError` naming ``path`` and the first bad row if ``features``
    holds NaN or ±Inf (chunks of :data:`FINITE_CHUNK_ROWS` rows: no whole-array temporary;
    cost in the module docstring). There is no option to allow them."""
    for start in range(0, features.shape[0], FINITE_CHUNK_ROWS):
        finite = np.isfinite(features[start:start + FINITE_CHUNK_ROWS])
        if not finite.all():
            row = start + int(np.flatnonzero(~finite.all(axis=tuple(range(1, finite.ndim))))[0])
            raise DatasetError(f"{path}: non-finite feature (NaN or Inf) in row {row}; "
                               "features must be finite")


def validate_arrays(ds: GraphDataset, where: str = "dataset") -> None:
    """Check every invariant indexing relies on; raise :class:`DatasetError` naming the
    file ``<where>/<array>.npy`` and the offending value."""
    n = ds.num_nodes

    def path(key: str) -> str:
        return f"{where}/{key}.npy"

    for key in ARRAY_FILES:
        array = getattr(ds, key)
        if not (np.issubdtype(array.dtype, np.floating if key == "features" else np.integer)):
            raise DatasetError(f"{path(key)}: dtype {array.dtype}, expected {DTYPES[key]}")
    if ds.indptr.ndim != 1 or n <= 0:
        raise DatasetError(f"{path('indptr')}: graph has no nodes (shape {ds.indptr.shape})")
    if ds.indices.ndim != 1 or ds.indptr[0] != 0 or ds.indptr[-1] != ds.indices.shape[0]:
        raise DatasetError(f"{path('indptr')}: does not span indices (indptr {ds.indptr[0]}.."
                           f"{ds.indptr[-1]}, {ds.indices.shape[0]} indices)")
    if np.any(np.diff(ds.indptr) < 0):
        raise DatasetError(f"{path('indptr')}: indptr is not non-decreasing")
    _range_error(path("indices"), "indices", ds.indices, 0, n)
    if ds.features.ndim != 2 or ds.features.shape[0] != n:
        raise DatasetError(f"{path('features')}: features shape {ds.features.shape} != "
                           f"({n}, d)")
    check_finite(ds.features, path("features"))
    if ds.labels.shape != (n,):
        raise DatasetError(f"{path('labels')}: labels shape {ds.labels.shape} != ({n},)")
    _range_error(path("labels"), "labels", ds.labels, 0, ds.num_classes)
    for split in ("train_idx", "val_idx", "test_idx"):
        idx = getattr(ds, split)
        if idx.ndim != 1:
            raise DatasetError(f"{path(split)}: shape {idx.shape}, expected 1-D")
        _range_error(path(split), f"{split} node ids", idx, 0, n)


def dataset_fingerprint(files: dict) -> str:
    """The fingerprint of a dataset from its ``meta.json`` ``files`` entries (their
    SHA-256): what derived artefacts record (:mod:`commgnn.core.provenance`)."""
    return digest({key: files[key]["sha256"] for key in ARRAY_FILES})


class _Sha256Sink:
    """A write-only file object that hashes what is written."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()

    def write(self, data) -> int:
        self.hash.update(data)
        return memoryview(data).nbytes


def fingerprint_of(ds: GraphDataset) -> str:
    """``ds.fingerprint``, or for a dataset built in memory the fingerprint
    :func:`write_dataset` would record for it (hashing its arrays as ``.npy`` bytes)."""
    if ds.fingerprint:
        return ds.fingerprint
    files = {}
    for key, array in _file_arrays(ds).items():
        sink = _Sha256Sink()
        np.lib.format.write_array(sink, array, allow_pickle=False)
        files[key] = {"sha256": sink.hash.hexdigest()}
    return dataset_fingerprint(files)


def _as_dtype(array: np.ndarray, dtype: type) -> np.ndarray:
    return np.ascontiguousarray(array, dtype=dtype)


def _file_arrays(ds: GraphDataset) -> dict[str, np.ndarray]:
    """The arrays of ``ds`` as :func:`write_dataset` stores them (dtypes of :data:`DTYPES`;
    a float beyond float32's range becomes Inf, which :func:`check_finite` refuses)."""
    with np.errstate(over="ignore"):
        return {key: _as_dtype(getattr(ds, key), np.dtype(DTYPES[key])) for key in ARRAY_FILES}


def write_dataset(ds: GraphDataset, out_dir: str | Path, source: dict | None = None,
                  generator: str = "") -> Path:
    """Validate ``ds`` (:func:`validate_arrays`: ids, shapes, finite features) and write it
    atomically to ``out_dir`` (replacing nothing partial); ``generator``: what made it
    (:func:`commgnn.core.testbed.generator_of`), recorded for the runs' provenance.

    ``source`` (e.g. the config spec that produced it) is recorded in ``meta.json``.
    """
    out_dir = Path(out_dir)
    arrays = _file_arrays(ds)  # converted first: a float64 beyond float32's range is Inf
    validate_arrays(dataclasses.replace(ds, **arrays), where=str(out_dir))
    with atomic_directory(out_dir) as tmp:
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
            **({"generator": generator} if generator else {}),
            "stats": graph_statistics(ds),
            "files": files,
            "fingerprint": dataset_fingerprint(files),
        }
        (tmp / META_FILE).write_text(json_text(meta, indent=2) + "\n")
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

    Shapes and dtypes are always checked against ``meta.json`` and every array against
    :func:`validate_arrays` (ids in range, finite features); with ``verify_checksums``
    every file's SHA-256 is recomputed. Any problem raises :class:`DatasetError` naming
    the offending file and how to rebuild the dataset.
    """
    data_dir = Path(data_dir)
    with hinted(data_dir, "dataset"):
        return _load_dataset(data_dir, verify_checksums, mmap)


def _load_dataset(data_dir: Path, verify_checksums: bool, mmap: bool) -> GraphDataset:
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
        if str(array.dtype) != DTYPES[key]:
            raise DatasetError(f"{path}: dtype {array.dtype}, expected {DTYPES[key]}")
        arrays[key] = array
    ds = GraphDataset(name=meta["name"], num_classes=int(meta["stats"]["num_classes"]),
                      fingerprint=dataset_fingerprint(meta["files"]), **arrays)
    validate_arrays(ds, where=str(data_dir))
    return ds


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
