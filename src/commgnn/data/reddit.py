"""Reddit (Hamilton et al., 2017) from the archive DGL and PyG download.

``reddit.zip`` (https://data.dgl.ai/dataset/reddit.zip) holds two files:

* ``reddit_data.npz`` -- ``feature`` (N, 602) float, ``label`` (N,) int (41 subreddits),
  ``node_types`` (N,) with 1 = train, 2 = validation, 3 = test (and ``node_ids``, unused);
* ``reddit_graph.npz`` -- the adjacency saved by ``scipy.sparse.save_npz`` (COO).

Both are read with ``np.load(..., allow_pickle=False)``. The graph is symmetrised,
de-duplicated and stripped of self-loops by :func:`~commgnn.data.store.symmetrize_csr`.
``num_classes`` is ``max(label) + 1``.

:func:`download_reddit` fetches the archive into a temporary file next to the target,
checks its SHA-256 against :data:`DEFAULT_SHA256` (a mismatch deletes the file and raises
:class:`~commgnn.data.store.DatasetError` naming it and both digests; ``sha256=None``
records the digest in ``<root>/reddit.zip.sha256`` and warns), then extracts it to
``<root>/reddit``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import urllib.request
import warnings
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from commgnn.data.store import (
    DatasetError,
    GraphDataset,
    load_npz,
    sha256_file,
    symmetrize_csr,
    validate_arrays,
)

DEFAULT_URL = "https://data.dgl.ai/dataset/reddit.zip"
#: SHA-256 of the DGL archive (1,397,962,821 bytes) as published independently by several
#: packages that verify it on download (e.g. the Julia DataDeps registration in
#: yuehhua/GraphMLDatasets.jl). Not re-measured here: this machine has no network access.
DEFAULT_SHA256: str | None = "9a16353c28f8ddd07148fc5ac9b57b818d7911ea0fbe9052d66d49fc32b372bf"
ARCHIVE_NAME = "reddit.zip"
EXTRACT_DIR = "reddit"
DATA_FILE = "reddit_data.npz"
GRAPH_FILE = "reddit_graph.npz"
TRAIN_TYPE, VAL_TYPE, TEST_TYPE = 1, 2, 3
_CHUNK = 1 << 22


def _fetch(url: str, dest: Path, timeout: float = 60.0) -> None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response, open(dest, "wb") as out:
            shutil.copyfileobj(response, out, _CHUNK)
    except Exception as exc:  # URLError, HTTPError, timeouts, disk errors
        raise DatasetError(f"{dest}: download of {url} failed "
                           f"({type(exc).__name__}: {exc})") from exc


def _safe_extract(archive: Path, dest: Path) -> None:
    try:
        with zipfile.ZipFile(archive) as zf:
            for member in zf.namelist():
                target = (dest / member).resolve()
                if not target.is_relative_to(dest.resolve()):
                    raise DatasetError(f"{archive}: member {member!r} escapes the archive")
            bad = zf.testzip()
            if bad is not None:
                raise DatasetError(f"{archive}: member {bad!r} fails its CRC check")
            zf.extractall(dest)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise DatasetError(f"{archive}: not a valid zip archive ({exc})") from exc


def find_reddit_files(directory: str | Path) -> Path | None:
    """The folder under ``directory`` holding both npz files (top level or one below)."""
    directory = Path(directory)
    subdirs = sorted(p for p in directory.glob("*") if p.is_dir() and not p.name.startswith("."))
    candidates = [directory, *subdirs]
    for folder in candidates:
        if (folder / DATA_FILE).is_file() and (folder / GRAPH_FILE).is_file():
            return folder
    return None


def download_reddit(root: str | Path, url: str = DEFAULT_URL,
                    sha256: str | None = DEFAULT_SHA256) -> Path:
    """Download ``url``, verify its SHA-256, extract it; return the folder with the npz files.

    With ``sha256=None`` the digest is written to ``<root>/reddit.zip.sha256`` and a warning
    is issued instead of verifying.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{ARCHIVE_NAME}.", suffix=".part", dir=root)
    os.close(fd)
    tmp = Path(tmp_name)
    staging = root / f".{EXTRACT_DIR}.extract"
    try:
        _fetch(url, tmp)
        digest = sha256_file(tmp)
        if sha256 is None:
            (root / f"{ARCHIVE_NAME}.sha256").write_text(f"{digest}  {url}\n")
            warnings.warn(f"{url}: no expected SHA-256 given; downloaded archive has sha256 "
                          f"{digest} (recorded in {root / (ARCHIVE_NAME + '.sha256')})",
                          stacklevel=2)
        elif digest != sha256.lower():
            tmp.unlink(missing_ok=True)
            raise DatasetError(f"{tmp} (from {url}): SHA-256 mismatch: expected {sha256.lower()}, "
                               f"got {digest}; the file was deleted")
        shutil.rmtree(staging, ignore_errors=True)
        _safe_extract(tmp, staging)
        found = find_reddit_files(staging)
        if found is None:
            raise DatasetError(f"{url}: archive lacks {DATA_FILE} and/or {GRAPH_FILE}")
        target = root / EXTRACT_DIR
        if target.exists():
            shutil.rmtree(target)
        os.replace(found, target)
    finally:
        tmp.unlink(missing_ok=True)
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _graph_edges(path: Path) -> tuple[int, np.ndarray, np.ndarray]:
    """``(num_nodes, src, dst)`` of a ``scipy.sparse.save_npz`` file, read without pickle."""
    arrays = load_npz(path, ("format", "shape"))
    fmt = arrays["format"].item()
    fmt = fmt.decode("ascii") if isinstance(fmt, bytes) else str(fmt)
    shape = tuple(int(s) for s in arrays["shape"])
    if len(shape) != 2 or shape[0] != shape[1]:
        raise DatasetError(f"{path}: adjacency shape {shape} is not square")
    try:
        if fmt == "coo":
            src = np.asarray(arrays["row"], dtype=np.int64).reshape(-1)
            dst = np.asarray(arrays["col"], dtype=np.int64).reshape(-1)
        elif fmt in ("csr", "csc"):
            cls = sp.csr_matrix if fmt == "csr" else sp.csc_matrix
            coo = cls((arrays["data"], arrays["indices"], arrays["indptr"]), shape=shape).tocoo()
            src = np.asarray(coo.row, dtype=np.int64)
            dst = np.asarray(coo.col, dtype=np.int64)
        else:
            raise DatasetError(f"{path}: unsupported sparse format {fmt!r}")
    except KeyError as exc:
        raise DatasetError(f"{path}: {fmt} matrix lacks array {exc}") from exc
    except (ValueError, TypeError) as exc:
        raise DatasetError(f"{path}: inconsistent {fmt} matrix ({exc})") from exc
    if src.shape != dst.shape:
        raise DatasetError(f"{path}: row/col lengths differ ({src.shape[0]} vs {dst.shape[0]})")
    for arr in (src, dst):
        if arr.size and (arr.min() < 0 or arr.max() >= shape[0]):
            raise DatasetError(f"{path}: edge endpoints outside [0, {shape[0]})")
    return shape[0], src, dst


def convert_reddit(extracted_dir: str | Path) -> GraphDataset:
    """Build the GraphDataset from a folder holding ``reddit_data.npz`` and ``reddit_graph.npz``."""
    extracted_dir = Path(extracted_dir)
    data_path = extracted_dir / DATA_FILE
    graph_path = extracted_dir / GRAPH_FILE
    data = load_npz(data_path, ("feature", "label", "node_types"))
    features = np.asarray(data["feature"], dtype=np.float32)
    labels = np.asarray(data["label"]).reshape(-1)
    node_types = np.asarray(data["node_types"]).reshape(-1)
    num_nodes = features.shape[0] if features.ndim == 2 else -1
    if num_nodes <= 0 or labels.shape != (num_nodes,) or node_types.shape != (num_nodes,):
        raise DatasetError(f"{data_path}: inconsistent shapes feature {features.shape}, "
                           f"label {labels.shape}, node_types {node_types.shape}")
    if not np.issubdtype(labels.dtype, np.integer) and (
            not np.all(np.isfinite(labels)) or np.any(labels != np.round(labels))):
        raise DatasetError(f"{data_path}: labels are not integers")
    labels = labels.astype(np.int64)
    if labels.min() < 0:
        raise DatasetError(f"{data_path}: negative labels")
    if not np.all(np.isin(node_types, (TRAIN_TYPE, VAL_TYPE, TEST_TYPE))):
        raise DatasetError(f"{data_path}: node_types outside {{1, 2, 3}}")

    graph_nodes, src, dst = _graph_edges(graph_path)
    if graph_nodes != num_nodes:
        raise DatasetError(f"{graph_path}: {graph_nodes} nodes, {data_path.name} has "
                           f"{num_nodes}")
    indptr, indices = symmetrize_csr(num_nodes, src, dst)
    ds = GraphDataset(
        name="reddit",
        indptr=indptr,
        indices=indices,
        features=features,
        labels=labels,
        train_idx=np.flatnonzero(node_types == TRAIN_TYPE).astype(np.int64),
        val_idx=np.flatnonzero(node_types == VAL_TYPE).astype(np.int64),
        test_idx=np.flatnonzero(node_types == TEST_TYPE).astype(np.int64),
        num_classes=int(labels.max()) + 1,
    )
    validate_arrays(ds, where=str(extracted_dir))
    return ds


def load_reddit(root: str | Path, url: str = DEFAULT_URL,
                sha256: str | None = DEFAULT_SHA256) -> GraphDataset:
    """Convert ``<root>/reddit`` (or files directly in ``root``), downloading them if missing."""
    folder = find_reddit_files(Path(root)) if Path(root).is_dir() else None
    if folder is None:
        folder = download_reddit(root, url=url, sha256=sha256)
    return convert_reddit(folder)
