"""RapidGNN's deterministic presampling (§3, Algorithm 1 line 3) streamed to disk.

For every worker ``w`` and epoch ``e`` the shared training schedule
(:mod:`commgnn.sampling.schedule`) gives the seed nodes of each step ``i``, and the step is
sampled with ``H(s_0, w, e, i)`` (:func:`~commgnn.sampling.seeds.batch_seed`), exactly as
online training does (``commgnn.train.context.WorkerContext.sample``). The batches are
streamed to one block file per (worker, epoch) (:mod:`commgnn.sampling.blockio`), so
memory does not grow with the number of epochs or batches.

Output directory
----------------
=========================  ==============================================================
``w{w}_e{e}.blocks``       the ordered batches of worker ``w`` in epoch ``e`` with their
                           local/remote bitmask (:mod:`commgnn.sampling.blockio`)
``frequency/w{w}_e{e}.npz``  ``ids`` (int64, sorted) and ``counts`` (int64): every remote
                           input node of worker ``w`` in epoch ``e`` and the number of
                           the epoch's batches that use it (per epoch, not cumulative);
                           plain .npy members, no pickles, fixed zip timestamps
``meta.json``              parameters, dataset/partition identity (with the fingerprints
                           presampling read them with), steps per epoch, per-worker
                           per-epoch statistics (among them ``sampling_rpcs/rows/bytes``:
                           the remote neighbour-list traffic distributed sampling would
                           cost, paid here, offline), the SHA-256, size and batch count of
                           every file above and the presample's ``fingerprint``
                           (:func:`presample_fingerprint`)
=========================  ==============================================================

Loading checks cheaply before any training (:func:`check_presample`): the dataset's and
the partition's fingerprints against those recorded (another or none:
:class:`~commgnn.core.errors.StaleInputError`), the run's parameters, and that each of the
worker's files has the size ``meta.json`` records (a truncated file fails at setup).
Records are CRC-checked and their ids bounds-checked as they are read (:mod:`blockio`),
frequency files on load; every error names the file and how to rebuild the presample.

The directory is written under a temporary sibling name and renamed into place, so a crash
never leaves a directory that looks complete. The output depends only on the dataset, the
partition and the parameters (not on ``threads``, paths or time): two runs give
byte-identical directories. Epochs are numbered from 0 like the training loop's.
"""

from __future__ import annotations

import logging
import zipfile
import zlib
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from commgnn.core.blocks import MiniBatch
from commgnn.core.counts import FetchCounts
from commgnn.core.errors import InputError
from commgnn.core.files import atomic_directory, json_text, read_json_object
from commgnn.core.progress import Progress
from commgnn.core.provenance import check_inputs, digest, hinted
from commgnn.data.store import META_FILE as DATASET_META
from commgnn.data.store import GraphDataset, load_dataset, sha256_file
from commgnn.partition import Partition, load_partition
from commgnn.partition.io import META_FILE as PARTITION_META
from commgnn.partition.io import save_npz_deterministic
from commgnn.sampling import blockio
from commgnn.sampling.blockio import BlockFileError, BlockReader, BlockWriter, PresampledBatch
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.schedule import epoch_seed_nodes, steps_per_epoch, worker_train_nodes
from commgnn.sampling.seeds import batch_seed
from commgnn.sampling.traffic import sampling_traffic

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
META_FILE = "meta.json"
FREQUENCY_DIR = "frequency"

__all__ = [
    "FORMAT_VERSION",
    "BlockFileError",
    "FrequencyFileError",
    "PresampleError",
    "PresampledBatch",
    "blocks_file",
    "frequencies",
    "frequency_file",
    "load_presampled",
    "open_presampled",
    "presample",
    "presample_fingerprint",
    "read_presample_meta",
    "verify",
]


class PresampleError(InputError):
    """A presample directory is missing, incomplete or inconsistent, or bad parameters."""


class FrequencyFileError(BlockFileError, PresampleError):
    """A frequency file is truncated, corrupt or holds ids out of range (a block-file
    error and a presample error alike)."""


def blocks_file(worker: int, epoch: int) -> str:
    """Path of worker ``worker``'s epoch ``epoch`` block file, relative to the output dir."""
    return f"w{worker}_e{epoch}.blocks"


def frequency_file(worker: int, epoch: int) -> str:
    """Path of the remote-access frequency file, relative to the output dir."""
    return f"{FREQUENCY_DIR}/w{worker}_e{epoch}.npz"


def _int_param(name: str, value, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        raise PresampleError(f"presample: {name} must be an integer >= {lo}, got {value!r}")
    return int(value)


def _sample_stream(sampler: NeighborSampler, seed_nodes: list[np.ndarray], base_seed: int,
                   worker: int, epoch: int,
                   pool: ThreadPoolExecutor | None, window: int
                   ) -> Iterator[tuple[int, MiniBatch]]:
    """``(step, batch)`` in step order; with a pool, at most ``window`` batches in flight."""

    def job(step: int) -> MiniBatch:
        return sampler.sample(seed_nodes[step], batch_seed(base_seed, worker, epoch, step))

    if pool is None:
        for step in range(len(seed_nodes)):
            yield step, job(step)
        return
    pending: deque = deque()
    submitted = 0
    try:
        for step in range(len(seed_nodes)):
            while submitted < len(seed_nodes) and len(pending) < window:
                pending.append(pool.submit(job, submitted))
                submitted += 1
            yield step, pending.popleft().result()
    finally:
        for future in pending:
            future.cancel()


def _presample_epoch(tmp: Path, sampler: NeighborSampler, owner: np.ndarray,
                     counts: np.ndarray, train_nodes: np.ndarray, files: dict, *, steps: int,
                     batch_size: int, base_seed: int, worker: int, epoch: int,
                     pool: ThreadPoolExecutor | None, window: int) -> dict:
    """Stream one (worker, epoch) to disk; return its statistics and add its files' entries
    to ``files``. ``counts`` must be all zero (and is again on return)."""
    seed_nodes = epoch_seed_nodes(train_nodes, steps, batch_size, base_seed, worker, epoch)
    local_rows = remote_rows = max_input = edges = 0
    sampling = FetchCounts()
    path = tmp / blocks_file(worker, epoch)
    with BlockWriter(path, num_layers=sampler.num_layers, worker=worker, epoch=epoch) as out:
        for step, batch in _sample_stream(sampler, seed_nodes, base_seed, worker, epoch,
                                          pool, window):
            nodes = batch.input_nodes.numpy()
            mask = owner[nodes] == worker
            remote = nodes[~mask]
            counts[remote] += 1  # input nodes are distinct within a batch
            num_local = int(np.count_nonzero(mask))
            local_rows += num_local
            remote_rows += nodes.shape[0] - num_local
            max_input = max(max_input, int(nodes.shape[0]))
            edges += sum(block.num_edges for block in batch.blocks)
            sampling.add(sampling_traffic(batch, owner, worker))
            out.write(step, batch, mask)
    files[blocks_file(worker, epoch)] = {"sha256": out.sha256, "bytes": out.nbytes,
                                         "batches": len(seed_nodes)}
    ids = np.flatnonzero(counts).astype(np.int64)
    freq = counts[ids].astype(np.int64)
    counts[ids] = 0  # ready for the next epoch
    freq_path = tmp / frequency_file(worker, epoch)
    save_npz_deterministic(freq_path, {"ids": ids, "counts": freq})
    files[frequency_file(worker, epoch)] = {"sha256": sha256_file(freq_path),
                                            "bytes": freq_path.stat().st_size}
    return {"batches": len(seed_nodes), "local_rows": local_rows, "remote_rows": remote_rows,
            "unique_remote": int(ids.shape[0]), "max_input_nodes": max_input,
            "edges": edges, "sampling_rpcs": sampling.remote_rpcs,
            "sampling_rows": sampling.remote_rows, "sampling_bytes": sampling.remote_bytes}


def presample(dataset_dir: str | Path, partition_dir: str | Path, out_dir: str | Path, *,
              fanouts: Sequence[int], batch_size: int, base_seed: int, epochs: int,
              workers: Sequence[int] | None = None, threads: int = 1) -> dict:
    """Presample ``epochs`` epochs of every worker in ``workers`` (default: all) to ``out_dir``.

    ``fanouts``/``batch_size``/``base_seed`` are the training run's (``fanouts[l]`` for
    ``blocks[l]``); the step count per epoch is the shared schedule's
    :func:`~commgnn.sampling.schedule.steps_per_epoch` over *all* workers of the
    partition, so presampling a subset of workers gives the same files for them.
    ``threads > 1`` samples batches in a thread pool (files are identical). An existing
    ``out_dir`` is replaced. Returns the ``meta.json`` content.
    """
    batch_size = _int_param("batch_size", batch_size, 1)
    epochs = _int_param("epochs", epochs, 1)
    threads = _int_param("threads", threads, 1)
    if isinstance(base_seed, bool) or not isinstance(base_seed, (int, np.integer)):
        raise PresampleError(f"presample: base_seed must be an integer, got {base_seed!r}")
    base_seed = int(base_seed)
    fanouts = [_int_param("fanouts entries", k, -1) for k in fanouts]
    if not fanouts:
        raise PresampleError("presample: fanouts must not be empty")
    dataset_dir, partition_dir, out_dir = Path(dataset_dir), Path(partition_dir), Path(out_dir)
    ds = load_dataset(dataset_dir)
    part = load_partition(partition_dir, dataset=ds)
    if part.method == "chunk":
        raise PresampleError(f"{partition_dir}: presampling needs one part per worker "
                             "(method 'metis' or 'random'), not 'chunk'")
    if (part.dataset.get("num_nodes") != ds.num_nodes
            or part.dataset.get("num_edges") != ds.num_edges):
        raise PresampleError(f"{partition_dir}: partition of {part.dataset}, dataset "
                             f"{dataset_dir} has {ds.num_nodes} nodes/{ds.num_edges} edges")
    num_workers = part.workers
    if workers is None:
        workers = list(range(num_workers))
    workers = sorted({_int_param("workers entries", w, 0) for w in workers})
    if not workers or workers[-1] >= num_workers:
        raise PresampleError(f"presample: workers {workers} must be a non-empty subset of "
                             f"[0, {num_workers})")
    owner = np.asarray(part.book.owner)
    train_idx = np.asarray(ds.train_idx)
    steps = steps_per_epoch(train_idx, owner, num_workers, batch_size)
    sampler = NeighborSampler(ds.indptr, ds.indices, fanouts)
    counts = np.zeros(ds.num_nodes, dtype=np.int32)

    pool = ThreadPoolExecutor(threads, thread_name_prefix="presample") if threads > 1 else None
    try:
        with atomic_directory(out_dir) as tmp:
            (tmp / FREQUENCY_DIR).mkdir()
            per_worker: dict[str, dict[str, list]] = {}
            files: dict[str, dict] = {}
            progress = Progress("presample", len(workers) * epochs, "worker-epochs", log)
            for worker in workers:
                train_nodes = worker_train_nodes(train_idx, owner, worker)
                stats: dict[str, list] = {}
                for epoch in range(epochs):
                    entry = _presample_epoch(tmp, sampler, owner, counts, train_nodes, files,
                                             steps=steps, batch_size=batch_size,
                                             base_seed=base_seed, worker=worker, epoch=epoch,
                                             pool=pool, window=2 * threads)
                    entry["blocks"] = blocks_file(worker, epoch)
                    entry["frequency"] = frequency_file(worker, epoch)
                    for key, value in entry.items():
                        stats.setdefault(key, []).append(value)
                    progress.advance()
                per_worker[str(worker)] = stats
            meta = {
                "format_version": FORMAT_VERSION,
                "block_format_version": blockio.FORMAT_VERSION,
                "params": {"fanouts": fanouts, "batch_size": batch_size, "base_seed": base_seed,
                           "epochs": epochs, "workers": workers},
                "num_workers": num_workers,
                "steps_per_epoch": steps,
                "dataset": {"name": ds.name, "num_nodes": ds.num_nodes, "num_edges": ds.num_edges,
                            "meta_sha256": sha256_file(dataset_dir / DATASET_META),
                            "fingerprint": ds.fingerprint},
                "partition": {"spec": part.spec,
                              "meta_sha256": sha256_file(partition_dir / PARTITION_META),
                              "fingerprint": part.fingerprint},
                "workers": per_worker,
                "files": files,
            }
            meta["fingerprint"] = presample_fingerprint(meta)
            (tmp / META_FILE).write_text(json_text(meta, indent=2) + "\n")
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
    return meta


def presample_fingerprint(meta: dict) -> str:
    """A presample's fingerprint from its ``meta.json``: a digest of the fingerprints of
    its dataset and partition, its parameters and its files' SHA-256."""
    return digest({"dataset": meta.get("dataset", {}).get("fingerprint"),
                   "partition": meta.get("partition", {}).get("fingerprint"),
                   "params": meta["params"], "steps_per_epoch": meta["steps_per_epoch"],
                   "files": {name: entry.get("sha256")
                             for name, entry in meta["files"].items()}})


def read_presample_meta(out_dir: str | Path) -> dict:
    """``meta.json`` of a presample directory (checked for format and required keys)."""
    path = Path(out_dir) / META_FILE
    meta = read_json_object(path, PresampleError, " (not a presample directory?)")
    if meta.get("format_version") != FORMAT_VERSION:
        raise PresampleError(f"{path}: format_version "
                             f"{meta.get('format_version') if isinstance(meta, dict) else None!r}"
                             f", expected {FORMAT_VERSION}")
    missing = [k for k in ("params", "steps_per_epoch", "workers", "files") if k not in meta]
    if missing:
        raise PresampleError(f"{path}: lacks keys {missing}")
    return meta


def check_presample(out_dir: str | Path, *, fanouts: list[int], batch_size: int,
                    base_seed: int, epochs: int, steps: int | None,
                    dataset: GraphDataset | None = None, partition: Partition | None = None,
                    worker: int | None = None) -> dict:
    """``meta.json`` of ``out_dir``, refusing blocks a run with these settings cannot use
    (other fan-outs, batch size or seed; fewer epochs; another step count per epoch unless
    ``steps`` is None), made from another ``dataset`` or ``partition`` than the run's
    (StaleInputError), or whose files for ``worker`` do not have the sizes ``meta.json``
    records (truncated). Errors name the directory or file and how to rebuild it."""
    with hinted(out_dir, "presample"):
        meta = read_presample_meta(out_dir)
        if dataset is not None and partition is not None:
            _check_sources(Path(out_dir), meta, dataset, partition)
        _check_params(out_dir, meta, fanouts=fanouts, batch_size=batch_size,
                      base_seed=base_seed, epochs=epochs, steps=steps)
        if worker is not None:
            _check_sizes(Path(out_dir), meta, worker, epochs)
    return meta


def _check_sources(out_dir: Path, meta: dict, dataset: GraphDataset,
                   partition: Partition) -> None:
    """StaleInputError unless ``meta`` records ``dataset``'s and ``partition``'s
    fingerprints."""
    recorded = {name: (meta.get(name) or {}).get("fingerprint")
                for name in ("dataset", "partition")}
    check_inputs(out_dir, "presample", recorded,
                 {"dataset": (dataset.fingerprint, f"the run's dataset {dataset.name!r}"),
                  "partition": (partition.fingerprint, "the run's partition")})


def _check_sizes(out_dir: Path, meta: dict, worker: int, epochs: int) -> None:
    """Every block and frequency file of ``worker``'s first ``epochs`` epochs has the size
    ``meta.json`` records (one ``stat`` each: a truncated file fails before training)."""
    for epoch in range(epochs):
        _check_entry(out_dir, meta, worker, epoch)
        for name, error in ((blocks_file(worker, epoch), BlockFileError),
                            (frequency_file(worker, epoch), FrequencyFileError)):
            path = out_dir / name
            expected = meta["files"].get(name, {}).get("bytes")
            try:
                size = path.stat().st_size
            except FileNotFoundError:
                raise error(f"{path}: missing") from None
            if size != expected:
                raise error(f"{path}: {size} bytes, meta.json records {expected} "
                            "(truncated or modified)")


def _check_params(out_dir: str | Path, meta: dict, *, fanouts: list[int], batch_size: int,
                  base_seed: int, epochs: int, steps: int | None) -> None:
    """PresampleError unless the presample's parameters serve a run with these."""
    params = meta["params"]
    expected = {"fanouts": list(fanouts), "batch_size": batch_size, "base_seed": base_seed}
    for key, value in expected.items():
        if params[key] != value:
            raise PresampleError(f"{out_dir}: presampled with {key}={params[key]!r} but the "
                                 f"run uses {value!r}")
    if params["epochs"] < epochs:
        raise PresampleError(f"{out_dir}: {params['epochs']} epochs presampled, the run "
                             f"needs {epochs}")
    if steps is not None and meta["steps_per_epoch"] != steps:
        raise PresampleError(f"{out_dir}: {meta['steps_per_epoch']} steps per epoch "
                             f"presampled, the run's schedule has {steps}")


def check_run_presample(spec, inputs: dict[str, str], dataset: GraphDataset,
                        partition: Partition, worker: int) -> None:
    """:func:`check_presample` of the run's ``presample`` input for ``worker`` (its schedule's
    step count is checked later, at setup): what RapidGNN and GreenDyGNN check before any
    process group."""
    check_presample(inputs["presample"], fanouts=spec.get("fanouts"),
                    batch_size=spec.batch_size, base_seed=spec.seed,
                    epochs=spec.get("epochs"), steps=None, dataset=dataset,
                    partition=partition, worker=worker)


def _check_entry(out_dir: Path, meta: dict, worker: int, epoch: int) -> None:
    params = meta["params"]
    if worker not in params["workers"] or not 0 <= epoch < params["epochs"]:
        raise PresampleError(f"{out_dir}: no presampled data for worker {worker} epoch {epoch}"
                             f" (workers {params['workers']}, epochs 0..{params['epochs'] - 1})")


def _num_nodes(meta: dict) -> int | None:
    """The node count of the presample's dataset (the bound of every id it holds)."""
    value = (meta.get("dataset") or {}).get("num_nodes")
    return int(value) if isinstance(value, int) else None


def open_presampled(out_dir: str | Path, worker: int, epoch: int) -> BlockReader:
    """Random-access reader of ``(worker, epoch)``'s block file (e.g. for a prefetcher);
    its records' node ids are checked against the dataset's node count."""
    out_dir = Path(out_dir)
    with hinted(out_dir, "presample"):
        return _open_presampled(out_dir, worker, epoch)


def _open_presampled(out_dir: Path, worker: int, epoch: int) -> BlockReader:
    meta = read_presample_meta(out_dir)
    _check_entry(out_dir, meta, worker, epoch)
    reader = BlockReader(out_dir / blocks_file(worker, epoch), _num_nodes(meta))
    expected = meta["files"].get(blocks_file(worker, epoch), {}).get("batches")
    if (reader.worker, reader.epoch) != (worker, epoch) or len(reader) != expected:
        reader.close()
        raise BlockFileError(f"{reader.path}: holds worker {reader.worker} epoch "
                             f"{reader.epoch} with {len(reader)} batches, meta.json expects "
                             f"worker {worker} epoch {epoch} with {expected}")
    return reader


def load_presampled(out_dir: str | Path, worker: int, epoch: int
                    ) -> Iterator[PresampledBatch]:
    """Lazily yield ``(worker, epoch)``'s presampled batches in step order."""
    return blockio.iterate_and_close(open_presampled(out_dir, worker, epoch))


def frequencies(out_dir: str | Path, worker: int, epoch: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, counts)``: remote input nodes of ``(worker, epoch)`` and their batch counts.

    A truncated or corrupt file, or ids outside the dataset, is a
    :class:`FrequencyFileError` naming it."""
    out_dir = Path(out_dir)
    with hinted(out_dir, "presample"):
        meta = read_presample_meta(out_dir)
        _check_entry(out_dir, meta, worker, epoch)
        return _read_frequencies(out_dir / frequency_file(worker, epoch), _num_nodes(meta))


def _read_frequencies(path: Path, num_nodes: int | None) -> tuple[np.ndarray, np.ndarray]:
    if not path.is_file():
        raise PresampleError(f"{path}: missing")
    try:
        # Open the file ourselves: np.load leaks its handle when the zip is damaged.
        with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as archive:
            ids, counts = archive["ids"], archive["counts"]
    except (KeyError, ValueError, OSError, EOFError, zipfile.BadZipFile, zlib.error) as exc:
        raise FrequencyFileError(f"{path}: truncated or corrupt ({type(exc).__name__}: "
                                 f"{exc})") from exc
    if ids.shape != counts.shape or ids.ndim != 1:
        raise FrequencyFileError(f"{path}: ids/counts shapes {ids.shape}/{counts.shape} "
                                 "differ")
    if not (np.issubdtype(ids.dtype, np.integer) and np.issubdtype(counts.dtype, np.integer)):
        raise FrequencyFileError(f"{path}: ids/counts dtypes {ids.dtype}/{counts.dtype}, "
                                 "expected integers")
    bound = num_nodes if num_nodes is not None else np.iinfo(np.int64).max
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= bound):
        raise FrequencyFileError(f"{path}: node ids outside [0, {bound}): min "
                                 f"{int(ids.min())}, max {int(ids.max())}")
    return ids, counts


def verify(out_dir: str | Path) -> dict:
    """Recheck every file's SHA-256 and every block record's CRC; return counts.

    Raises :class:`BlockFileError` for a bad block file and :class:`PresampleError` for
    anything else (missing file, checksum mismatch of a frequency file).
    """
    out_dir = Path(out_dir)
    meta = read_presample_meta(out_dir)
    batches = 0
    for name, entry in sorted(meta["files"].items()):
        path = out_dir / name
        is_blocks = name.endswith(".blocks")
        error = BlockFileError if is_blocks else PresampleError
        if not path.is_file():
            raise error(f"{path}: missing")
        if is_blocks:
            with BlockReader(path, _num_nodes(meta)) as reader:
                count = reader.verify()
            if count != entry.get("batches"):
                raise BlockFileError(f"{path}: {count} batches, meta.json says "
                                     f"{entry.get('batches')}")
            batches += count
        if sha256_file(path) != entry["sha256"]:
            raise error(f"{path}: checksum mismatch (file is corrupt or was modified)")
    return {"files": len(meta["files"]), "batches": batches}
