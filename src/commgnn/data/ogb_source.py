"""OGB node-property-prediction graphs (``ogbn-arxiv``, ``ogbn-products``, ``ogbn-papers100M``).

(The module is not called ``ogb.py`` so that it does not shadow the ``ogb`` package.)

:func:`download_ogb` fetches and extracts the official archive with the ``ogb`` package's
own machinery (``ogb.utils.url.download_url`` / ``extract_zip`` and the URL from its
``master.csv``), leaving the layout ``ogb.nodeproppred.NodePropPredDataset`` expects::

    <root>/<ogbn_name>/raw/edge.csv.gz          (E, 2) src,dst      [CSV datasets]
                       raw/num-node-list.csv.gz one row per graph (exactly one here)
                       raw/num-edge-list.csv.gz
                       raw/node-feat.csv.gz     (N, d)
                       raw/node-label.csv.gz    (N, 1)
                       raw/data.npz             edge_index (2, E), node_feat, num_nodes_list,
                                                num_edges_list              [binary datasets]
                       raw/node-label.npz       node_label (N, 1)           [binary datasets]
                       split/<split>/{train,valid,test}.csv.gz

:func:`convert_ogb_raw` turns that into a :class:`~commgnn.data.store.GraphDataset`. Edges are
symmetrised, de-duplicated and stripped of self-loops (``ogbn-arxiv`` is a directed citation
graph; like the usual GNN baselines we train on its undirected version).

Unlabelled nodes: ``ogbn-papers100M`` stores NaN as the label of the ~98.6% of papers without
one. Those nodes get label 0 so that ``labels`` is a valid int64 class array, and they must
not be in any split; a split that contains a NaN-labelled node raises
:class:`~commgnn.data.store.DatasetError`. ``num_classes`` comes from the ``ogb`` package's
``master.csv`` ('num classes'), not from the observed labels.

Heterogeneous (``ogbn-mag``) and multi-task (``ogbn-proteins``) datasets are not supported.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from commgnn.data.store import DatasetError, GraphDataset, load_npz, symmetrize_csr, validate_arrays

SPLIT_FILES = {"train": "train.csv.gz", "valid": "valid.csv.gz", "test": "test.csv.gz"}
_READ_ERRORS = (OSError, EOFError, ValueError, zlib.error, UnicodeDecodeError,
                pd.errors.ParserError, pd.errors.EmptyDataError)


def _master() -> pd.DataFrame:
    """The ``ogb`` package's ``nodeproppred/master.csv``.

    Located with ``find_spec`` rather than imported: importing ``ogb.nodeproppred`` pulls in
    torch (seconds) and ``ogb`` itself starts a version-check thread.
    """
    spec = importlib.util.find_spec("ogb")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the 'ogb' package is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / "nodeproppred" / "master.csv"
    return pd.read_csv(path, index_col=0, keep_default_na=False)


def canonical_name(name: str) -> str:
    """``'arxiv'``, ``'ogbn_arxiv'`` or ``'ogbn-arxiv'`` -> ``'ogbn-arxiv'``."""
    name = name.strip().replace("_", "-")
    return name if name.startswith("ogbn-") else f"ogbn-{name}"


def ogb_meta(name: str) -> dict[str, str]:
    """The ``master.csv`` column of a supported homogeneous single-task dataset."""
    name = canonical_name(name)
    master = _master()
    if name not in master:
        raise ValueError(f"unknown OGB node dataset {name!r}; master.csv lists "
                         f"{list(master.columns)}")
    meta = {str(k): str(v) for k, v in master[name].items()}
    if meta["is hetero"] == "True":
        raise ValueError(f"{name} is heterogeneous; only homogeneous graphs are supported")
    if int(meta["num tasks"]) != 1 or "multiclass" not in meta["task type"]:
        raise ValueError(f"{name} is a {meta['num tasks']}-task {meta['task type']} dataset; "
                         "only single-label multiclass datasets are supported")
    return meta


def dataset_dir_name(name: str) -> str:
    """Directory OGB extracts a dataset into, e.g. ``ogbn_arxiv``."""
    return canonical_name(name).replace("-", "_")


def download_ogb(name: str, root: str | Path, url: str | None = None) -> Path:
    """Download and extract the raw OGB archive of ``name`` into ``root/<ogbn_name>``.

    ``url`` overrides the ``master.csv`` URL (mirrors, tests). Returns the dataset
    directory. Any failure (no network, bad archive) raises :class:`DatasetError`; nothing
    partial is left at the target directory.
    """
    from ogb.utils.url import download_url, extract_zip  # deferred: imports ogb

    meta = ogb_meta(name)
    url = url or meta["url"]
    root = Path(root)
    target = root / dataset_dir_name(name)
    root.mkdir(parents=True, exist_ok=True)
    archive = root / url.rpartition("/")[2]
    try:
        downloaded = Path(download_url(url, str(root), log=False))
    except Exception as exc:  # URLError, HTTPError, RuntimeError('Stopped downloading ...')
        archive.unlink(missing_ok=True)
        raise DatasetError(f"{archive}: download of {url} failed "
                           f"({type(exc).__name__}: {exc})") from exc
    staging = root / f".{target.name}.extract"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        try:
            extract_zip(str(downloaded), str(staging), log=False)
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise DatasetError(f"{downloaded}: not a valid zip archive ({exc})") from exc
        extracted = staging / meta["download_name"]
        if not extracted.is_dir():
            raise DatasetError(f"{downloaded}: archive has no top-level folder "
                               f"'{meta['download_name']}'")
        if target.exists():
            shutil.rmtree(target)
        os.replace(extracted, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        downloaded.unlink(missing_ok=True)
    return target


def _read_csv(path: Path, dtype=None) -> np.ndarray:
    if not path.is_file():
        raise DatasetError(f"{path}: missing")
    try:
        frame = pd.read_csv(path, compression="gzip", header=None, dtype=dtype)
    except _READ_ERRORS as exc:
        raise DatasetError(f"{path}: truncated or corrupt ({type(exc).__name__}: {exc})") \
            from exc
    return frame.to_numpy()


def _single_count(values: np.ndarray, path: Path) -> int:
    values = np.asarray(values).reshape(-1)
    if values.shape[0] != 1:
        raise DatasetError(f"{path}: {values.shape[0]} graphs listed, expected exactly 1")
    return int(values[0])


def _read_raw_csv(raw: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    edge_path = raw / "edge.csv.gz"
    edges = _read_csv(edge_path, dtype=np.int64)
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise DatasetError(f"{edge_path}: expected 2 columns, got shape {edges.shape}")
    num_nodes = _single_count(_read_csv(raw / "num-node-list.csv.gz", dtype=np.int64),
                              raw / "num-node-list.csv.gz")
    num_edges = _single_count(_read_csv(raw / "num-edge-list.csv.gz", dtype=np.int64),
                              raw / "num-edge-list.csv.gz")
    if num_edges != edges.shape[0]:
        raise DatasetError(f"{edge_path}: {edges.shape[0]} edges, num-edge-list.csv.gz "
                           f"says {num_edges}")
    features = _read_csv(raw / "node-feat.csv.gz", dtype=np.float32)
    labels = _read_csv(raw / "node-label.csv.gz", dtype=np.float64)
    return edges.T, features, labels, num_nodes


def _read_raw_binary(raw: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    data_path = raw / "data.npz"
    data = load_npz(data_path, ("edge_index", "num_nodes_list", "num_edges_list", "node_feat"))
    num_nodes = _single_count(data["num_nodes_list"], data_path)
    num_edges = _single_count(data["num_edges_list"], data_path)
    edge_index = data["edge_index"]
    if edge_index.ndim != 2 or edge_index.shape[0] != 2 or edge_index.shape[1] != num_edges:
        raise DatasetError(f"{data_path}: edge_index shape {edge_index.shape}, expected "
                           f"(2, {num_edges})")
    labels = load_npz(raw / "node-label.npz", ("node_label",))["node_label"]
    return edge_index, data["node_feat"], labels, num_nodes


def convert_ogb_raw(dataset_dir: str | Path, name: str,
                    split_type: str | None = None) -> GraphDataset:
    """Convert an extracted OGB dataset directory (``raw/`` + ``split/``) to a GraphDataset.

    ``split_type`` defaults to the ``master.csv`` split of ``name`` (``time`` for arxiv).
    """
    meta = ogb_meta(name)
    name = canonical_name(name)
    dataset_dir = Path(dataset_dir)
    raw = dataset_dir / "raw"
    if meta["binary"] == "True":
        edge_index, features, labels_raw, num_nodes = _read_raw_binary(raw)
        feat_path, label_path = raw / "data.npz", raw / "node-label.npz"
    else:
        edge_index, features, labels_raw, num_nodes = _read_raw_csv(raw)
        feat_path, label_path = raw / "node-feat.csv.gz", raw / "node-label.csv.gz"

    if num_nodes <= 0:
        raise DatasetError(f"{raw}: graph has {num_nodes} nodes")
    edge_index = np.asarray(edge_index, dtype=np.int64)
    if edge_index.size and (edge_index.min() < 0 or edge_index.max() >= num_nodes):
        raise DatasetError(f"{raw}: edge endpoints outside [0, {num_nodes})")
    features = np.asarray(features, dtype=np.float32)
    if features.ndim != 2 or features.shape[0] != num_nodes:
        raise DatasetError(f"{feat_path}: features shape {features.shape}, expected "
                           f"({num_nodes}, d)")
    labels_raw = np.asarray(labels_raw, dtype=np.float64)
    if labels_raw.ndim == 2 and labels_raw.shape[1] == 1:
        labels_raw = labels_raw[:, 0]
    if labels_raw.shape != (num_nodes,):
        raise DatasetError(f"{label_path}: labels shape {labels_raw.shape}, expected "
                           f"({num_nodes}, 1)")
    num_classes = int(meta["num classes"])
    unlabelled = np.isnan(labels_raw)
    known = labels_raw[~unlabelled]
    if known.size and (np.any(known != np.round(known)) or known.min() < 0
                       or known.max() >= num_classes):
        raise DatasetError(f"{label_path}: labels are not integers in [0, {num_classes})")
    labels = np.where(unlabelled, 0.0, labels_raw).astype(np.int64)

    split_dir = dataset_dir / "split" / (split_type or meta["split"])
    splits = {}
    for key, filename in SPLIT_FILES.items():
        path = split_dir / filename
        idx = _read_csv(path, dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= num_nodes):
            raise DatasetError(f"{path}: node ids outside [0, {num_nodes})")
        if np.any(unlabelled[idx]):
            raise DatasetError(f"{path}: {int(unlabelled[idx].sum())} split nodes have no "
                               "label (NaN)")
        splits[key] = np.unique(idx)
        if splits[key].shape[0] != idx.shape[0]:
            raise DatasetError(f"{path}: duplicate node ids")

    indptr, indices = symmetrize_csr(num_nodes, edge_index[0], edge_index[1])
    ds = GraphDataset(name=name, indptr=indptr, indices=indices, features=features,
                      labels=labels, train_idx=splits["train"], val_idx=splits["valid"],
                      test_idx=splits["test"], num_classes=num_classes)
    validate_arrays(ds, where=str(dataset_dir))
    return ds


def has_raw_files(dataset_dir: str | Path, name: str) -> bool:
    """Whether ``dataset_dir`` already holds the extracted raw graph of ``name``."""
    raw = Path(dataset_dir) / "raw"
    marker = "data.npz" if ogb_meta(name)["binary"] == "True" else "edge.csv.gz"
    return (raw / marker).is_file()


def load_ogb(name: str, root: str | Path, url: str | None = None) -> GraphDataset:
    """Download ``name`` into ``root`` unless already there, then convert it."""
    dataset_dir = Path(root) / dataset_dir_name(name)
    if not has_raw_files(dataset_dir, name):
        dataset_dir = download_ogb(name, root, url=url)
    return convert_ogb_raw(dataset_dir, name)
