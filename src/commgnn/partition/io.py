"""On-disk partition directories.

=================  ==============================================================
file               content
=================  ==============================================================
book.npz           ``owner`` (int32) and ``local_id`` (int64) per node; plain .npy
                   members, no pickles, fixed zip timestamps (byte-reproducible)
halo_<p>.npy       int64 sorted halo node ids of part (or chunk) ``p``
stats.json         :func:`commgnn.partition.stats.partition_stats` output
meta.json          format version, normalised spec, method, num_parts, workers, chunks,
                   halo_hops, seed, dataset identity (with its fingerprint), SHA-256 of
                   every file above and the partition's ``fingerprint``
                   (:func:`partition_fingerprint`)
timing.json        wall-clock seconds of the partitioning run; the only file that is
                   not deterministic, so it is outside the checksums
=================  ==============================================================

:func:`write_partition` writes into a temporary sibling directory and renames it into place.
:func:`load_partition` verifies checksums (by default) and structural consistency and raises
:class:`PartitionError` naming the offending file and how to rebuild the partition; given
the dataset it is used with, it refuses a partition of another dataset (another
fingerprint, or none recorded) with :class:`~commgnn.core.errors.StaleInputError`.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import numpy as np

from commgnn.core.files import atomic_directory, json_text, read_json_object
from commgnn.core.provenance import check_inputs, digest, hinted
from commgnn.data.store import GraphDataset, fingerprint_of, sha256_file
from commgnn.partition.book import LOCAL_DTYPE, OWNER_DTYPE, PartitionBook
from commgnn.partition.core import Partition, PartitionError, normalize_spec

FORMAT_VERSION = 1
BOOK_FILE = "book.npz"
STATS_FILE = "stats.json"
META_FILE = "meta.json"
TIMING_FILE = "timing.json"
_ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def halo_file(part: int) -> str:
    return f"halo_{part}.npy"


def _json_text(obj: dict) -> str:
    return json_text(obj, indent=2) + "\n"


def save_npz_deterministic(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Like :func:`numpy.savez` but byte-reproducible (fixed member timestamps, no pickles)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as archive:
        for key in sorted(arrays):
            info = zipfile.ZipInfo(f"{key}.npy", date_time=_ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            with archive.open(info, "w", force_zip64=True) as handle:
                np.lib.format.write_array(handle, np.ascontiguousarray(arrays[key]),
                                          allow_pickle=False)


def write_partition(p: Partition, out_dir: str | Path) -> Path:
    """Write ``p`` atomically to ``out_dir`` (an existing directory there is replaced)."""
    out_dir = Path(out_dir)
    with atomic_directory(out_dir) as tmp:
        save_npz_deterministic(tmp / BOOK_FILE, {
            "owner": np.ascontiguousarray(p.book.owner, dtype=OWNER_DTYPE),
            "local_id": np.ascontiguousarray(p.book.local_id, dtype=LOCAL_DTYPE),
        })
        names = [BOOK_FILE]
        for part, halo in enumerate(p.halos):
            np.save(tmp / halo_file(part), np.ascontiguousarray(halo, dtype=np.int64),
                    allow_pickle=False)
            names.append(halo_file(part))
        (tmp / STATS_FILE).write_text(_json_text(p.stats))
        names.append(STATS_FILE)
        meta = {
            "format_version": FORMAT_VERSION,
            "spec": p.spec,
            "method": p.method,
            "num_parts": p.num_parts,
            "workers": p.workers,
            "chunks": p.chunks,
            "halo_hops": p.halo_hops,
            "seed": p.seed,
            "dataset": p.dataset,
            "checksums": {name: sha256_file(tmp / name) for name in names},
        }
        meta["fingerprint"] = partition_fingerprint(meta)
        (tmp / META_FILE).write_text(_json_text(meta))
        (tmp / TIMING_FILE).write_text(_json_text(p.timing))
    return out_dir


def partition_fingerprint(meta: dict) -> str:
    """A partition's fingerprint from its ``meta.json``: a digest of its dataset's
    fingerprint, its spec and its files' SHA-256 (what presample records)."""
    return digest({"dataset": meta["dataset"].get("fingerprint"), "spec": meta["spec"],
                   "checksums": meta["checksums"]})


def _read_json(path: Path) -> dict:
    return read_json_object(path, PartitionError)


def read_partition_meta(part_dir: str | Path) -> dict:
    """Read and sanity-check ``meta.json`` of a partition directory."""
    part_dir = Path(part_dir)
    if not part_dir.is_dir():
        raise PartitionError(f"{part_dir}: not a directory")
    meta_path = part_dir / META_FILE
    meta = _read_json(meta_path)
    if meta.get("format_version") != FORMAT_VERSION:
        raise PartitionError(f"{meta_path}: format_version {meta.get('format_version')!r}, "
                             f"expected {FORMAT_VERSION}")
    required = ("spec", "num_parts", "halo_hops", "dataset", "checksums")
    missing = [key for key in required if key not in meta]
    if missing:
        raise PartitionError(f"{meta_path}: lacks keys {missing}")
    num_parts = meta["num_parts"]
    expected = {BOOK_FILE, STATS_FILE, *(halo_file(q) for q in range(num_parts))}
    absent = sorted(expected - set(meta["checksums"]))
    if absent:
        raise PartitionError(f"{meta_path}: 'checksums' lacks entries {absent}")
    return meta


def _load_npy(path: Path) -> np.ndarray:
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise PartitionError(f"{path}: unreadable or truncated ({exc})") from exc


def _load_book(path: Path, num_parts: int, num_nodes: int) -> PartitionBook:
    try:
        with np.load(path, allow_pickle=False) as archive:
            missing = [k for k in ("owner", "local_id") if k not in archive.files]
            if missing:
                raise PartitionError(f"{path}: lacks arrays {missing}")
            owner, local_id = archive["owner"], archive["local_id"]
    except PartitionError:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise PartitionError(f"{path}: unreadable or truncated ({exc})") from exc
    for name, array, dtype in (("owner", owner, OWNER_DTYPE), ("local_id", local_id,
                                                               LOCAL_DTYPE)):
        if array.shape != (num_nodes,) or array.dtype != dtype:
            raise PartitionError(f"{path}: {name} has shape/dtype {array.shape}/{array.dtype}, "
                                 f"expected ({num_nodes},)/{np.dtype(dtype)}")
    try:
        book = PartitionBook.from_owner(owner, num_parts)
    except ValueError as exc:
        raise PartitionError(f"{path}: {exc}") from exc
    if not np.array_equal(book.local_id, local_id):
        raise PartitionError(f"{path}: local_id is inconsistent with owner")
    return book


def load_partition(part_dir: str | Path, verify_checksums: bool = True,
                   dataset: GraphDataset | None = None) -> Partition:
    """Load a directory written by :func:`write_partition`.

    Raises :class:`PartitionError` naming the file that is missing, corrupt (checksum,
    truncation, bad JSON) or inconsistent with ``meta.json``, and how to rebuild it. With
    ``dataset`` (the one it is used with), a partition made from another dataset (or
    recording no dataset fingerprint) is a :class:`~commgnn.core.errors.StaleInputError`.
    """
    part_dir = Path(part_dir)
    with hinted(part_dir, "partition"):
        return _load_partition(part_dir, verify_checksums, dataset)


def check_partition_dataset(part_dir: Path, meta: dict, dataset: GraphDataset) -> None:
    """Refuse a partition (its ``meta``) made from another dataset than ``dataset``."""
    check_inputs(part_dir, "partition", {"dataset": meta["dataset"].get("fingerprint")},
                 {"dataset": (fingerprint_of(dataset), f"dataset {dataset.name!r}")})
    if int(meta["dataset"]["num_nodes"]) != dataset.num_nodes:  # a forged fingerprint
        raise PartitionError(f"{part_dir / META_FILE}: partition of "
                             f"{meta['dataset']['num_nodes']} nodes, dataset "
                             f"{dataset.name!r} has {dataset.num_nodes}")


def _load_partition(part_dir: Path, verify_checksums: bool,
                    dataset: GraphDataset | None) -> Partition:
    meta = read_partition_meta(part_dir)
    meta_path = part_dir / META_FILE
    if dataset is not None:
        check_partition_dataset(part_dir, meta, dataset)
    for name, sha256 in sorted(meta["checksums"].items()):
        path = part_dir / name
        if not path.is_file():
            raise PartitionError(f"{path}: missing")
        if verify_checksums and sha256_file(path) != sha256:
            raise PartitionError(f"{path}: checksum mismatch (file is corrupt or was modified)")
    try:
        spec = normalize_spec(meta["spec"])
    except ValueError as exc:
        raise PartitionError(f"{meta_path}: invalid spec ({exc})") from exc
    num_parts = int(meta["num_parts"])
    num_nodes = int(meta["dataset"]["num_nodes"])
    book = _load_book(part_dir / BOOK_FILE, num_parts, num_nodes)
    halos = []
    for part in range(num_parts):
        path = part_dir / halo_file(part)
        halo = _load_npy(path)
        if halo.ndim != 1 or halo.dtype != np.int64:
            raise PartitionError(f"{path}: shape/dtype {halo.shape}/{halo.dtype}, expected "
                                 "1-D int64")
        if halo.size and (halo.min() < 0 or halo.max() >= num_nodes
                          or np.any(np.diff(halo) <= 0) or np.any(book.owner[halo] == part)):
            raise PartitionError(f"{path}: not a sorted set of nodes outside part {part}")
        halos.append(halo)
    stats = _read_json(part_dir / STATS_FILE)
    timing_path = part_dir / TIMING_FILE
    timing = _read_json(timing_path) if timing_path.exists() else {}
    return Partition(spec=spec, book=book, halos=halos, stats=stats,
                     dataset=dict(meta["dataset"]), timing=timing,
                     fingerprint=partition_fingerprint(meta))
