"""Streaming on-disk format for one worker's presampled batches of one epoch.

RapidGNN §3 ("Precomputed metadata blocks") streams the presampled schedule to local
storage instead of keeping it in memory: per batch the seeds, the input-node ids and the
local/remote bitmask, plus (here) every block's CSR so training can rebuild the exact
:class:`~commgnn.core.blocks.MiniBatch` without sampling again. One file holds the
ordered batches of one (worker, epoch).

File layout (version 1, every integer little-endian)
----------------------------------------------------
::

    header   40 bytes   magic b"CGNNBLKS" | u32 version | u32 num_layers | i64 worker |
                        i64 epoch | u32 flags (0) | u32 crc32(previous 36 bytes)
    record   repeated   u64 payload_len | payload | u32 crc32(payload_len bytes + payload)
    index    16 * n     n x (i64 step | u64 offset of the record's payload_len field)
    trailer  32 bytes   magic b"CGNNEND\\0" | u64 n | u64 index offset |
                        u32 crc32(index + previous 24 trailer bytes) | u32 reserved (0)

A record's payload (``W`` = id width, 4 or 8 bytes; ``L`` = num_layers)::

    i64 step | i64 num_seeds | i64 num_input | u32 W | u32 L          (32 bytes)
    L x (i64 num_src | i64 num_dst | i64 num_edges)                   (blocks[0] first)
    seeds            num_seeds x intW
    input_nodes      num_input x intW
    L x (indptr (num_dst + 1) x intW | indices num_edges x intW)      (blocks[0] first)
    local mask       ceil(num_input / 8) bytes: np.packbits(mask, bitorder="little"),
                     bit i set <=> input_nodes[i] is owned by the worker; pad bits 0

``W`` is 4 when every id, count and CSR offset of the record is below ``2**31`` (always
for graphs the sampler accepts), else 8; the reader returns int64 either way. Nothing in
the file depends on time or the environment, so the same batches give byte-identical
files. Records are strictly increasing in ``step`` (normally ``0 .. steps-1``).

Guarantees
----------
* :class:`BlockWriter` streams: it holds at most one record (plus 16 bytes of index per
  batch) in memory, writes to a temporary sibling file and renames it into place on
  :meth:`~BlockWriter.close`, so a crash never leaves a file that looks complete.
* :class:`BlockReader` checks the header and the trailer/index on open (a truncated file
  has no valid trailer and is reported with the first incomplete record), then reads
  records lazily, each one checked against its CRC32 and the index, and its ids against
  their bounds (node ids in ``[0, num_nodes)`` when the reader is given the dataset's
  node count; every block's CSR within its layer): a min/max per array, so a record can
  never send an index out of range. Every problem raises :class:`BlockFileError` naming
  the file (and the record index where there is one).
  Reads use ``os.pread``, so one reader may serve several threads (e.g. a prefetcher).
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import struct
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from commgnn.core.blocks import Block, MiniBatch
from commgnn.core.errors import InputError

FORMAT_VERSION = 1
MAGIC = b"CGNNBLKS"
END_MAGIC = b"CGNNEND\x00"

_HEADER = struct.Struct("<8sIIqqI")  # magic, version, num_layers, worker, epoch, flags
_HEADER_CRC = struct.Struct("<I")
HEADER_SIZE = _HEADER.size + _HEADER_CRC.size  # 40
_LEN = struct.Struct("<Q")
_CRC = struct.Struct("<I")
_REC_HEAD = struct.Struct("<qqqII")  # step, num_seeds, num_input, width, num_layers
_LAYER = struct.Struct("<qqq")  # num_src, num_dst, num_edges
_INDEX_ENTRY = np.dtype([("step", "<i8"), ("offset", "<u8")])
_TRAILER = struct.Struct("<8sQQ")  # end magic, count, index offset
TRAILER_SIZE = _TRAILER.size + 8  # + crc + reserved = 32
_RECORD_OVERHEAD = _LEN.size + _CRC.size  # 12
_INT32_LIMIT = 1 << 31


class BlockFileError(InputError):
    """A presampled block file is missing, truncated, corrupt or inconsistent."""


@dataclass
class PresampledBatch:
    """One presampled step: the mini-batch exactly as the sampler returned it."""

    step: int
    batch: MiniBatch  # int64 CPU tensors
    local_mask: np.ndarray  # bool, (len(batch.input_nodes),): owned by the worker

    @property
    def remote_nodes(self) -> np.ndarray:
        """Global ids of the input nodes owned by other workers (in input order)."""
        return self.batch.input_nodes.numpy()[~self.local_mask]


def _as_numpy(values: torch.Tensor | np.ndarray) -> np.ndarray:
    if isinstance(values, torch.Tensor):
        values = values.detach().cpu().numpy()
    return np.asarray(values)


def _header_bytes(num_layers: int, worker: int, epoch: int) -> bytes:
    head = _HEADER.pack(MAGIC, FORMAT_VERSION, num_layers, worker, epoch, 0)
    return head + _HEADER_CRC.pack(zlib.crc32(head))


class BlockWriter:
    """Stream the batches of one (worker, epoch) into ``path`` (see the module docstring).

    Use as a context manager: the file appears at ``path`` only when the block exits
    without an exception (or :meth:`close` is called); on error the temporary file is
    removed. An existing file at ``path`` is replaced.
    """

    def __init__(self, path: str | Path, *, num_layers: int, worker: int, epoch: int,
                 fsync: bool = True) -> None:
        if num_layers < 1:
            raise ValueError(f"num_layers must be >= 1, got {num_layers}")
        self.path = Path(path)
        self.num_layers = int(num_layers)
        self.worker = int(worker)
        self.epoch = int(epoch)
        self._fsync = fsync
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.tmp-", dir=self.path.parent)
        self._tmp = Path(tmp)
        self._file = os.fdopen(fd, "wb")
        self._index: list[tuple[int, int]] = []
        self._offset = 0
        self._sha256 = hashlib.sha256()
        self._closed = False
        try:
            self._write(_header_bytes(self.num_layers, self.worker, self.epoch))
        except BaseException:
            self.abort()
            raise

    def __enter__(self) -> BlockWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    @property
    def count(self) -> int:
        """Records written so far."""
        return len(self._index)

    @property
    def sha256(self) -> str:
        """SHA-256 (hex) of the bytes written so far: of the whole file once closed."""
        return self._sha256.hexdigest()

    @property
    def nbytes(self) -> int:
        """Bytes written so far: the file size once closed."""
        return self._offset

    def _write(self, data) -> None:
        self._file.write(data)
        self._sha256.update(data)
        self._offset += memoryview(data).nbytes

    def write(self, step: int, batch: MiniBatch, local_mask: np.ndarray) -> None:
        """Append one batch (steps must be strictly increasing)."""
        if self._closed:
            raise ValueError(f"{self.path}: writer is closed")
        step = int(step)
        if self._index and step <= self._index[-1][0]:
            raise ValueError(f"{self.path}: step {step} after step {self._index[-1][0]}; "
                             "steps must be strictly increasing")
        if len(batch.blocks) != self.num_layers:
            raise ValueError(f"{self.path}: batch has {len(batch.blocks)} blocks, file holds "
                             f"{self.num_layers}")
        seeds = _as_numpy(batch.seeds)
        input_nodes = _as_numpy(batch.input_nodes)
        mask = _as_numpy(local_mask)
        if mask.dtype != np.bool_ or mask.shape != input_nodes.shape:
            raise ValueError(f"{self.path}: local_mask must be bool of shape "
                             f"{input_nodes.shape}, got {mask.dtype} {mask.shape}")
        layers = []
        arrays = [seeds, input_nodes]
        for block in batch.blocks:
            indptr = _as_numpy(block.indptr)
            indices = _as_numpy(block.indices)
            if indptr.shape != (block.num_dst + 1,):
                raise ValueError(f"{self.path}: indptr shape {indptr.shape} != "
                                 f"({block.num_dst + 1},)")
            layers.append((int(block.num_src), int(block.num_dst), int(indices.shape[0])))
            arrays += [indptr, indices]
        for array in arrays:
            if array.ndim != 1 or not np.issubdtype(array.dtype, np.integer):
                raise ValueError(f"{self.path}: batch arrays must be 1-D integer arrays")
        # Width: 4 bytes when every stored id/offset fits int32 (all values are >= 0).
        biggest = max([int(input_nodes.max(initial=0)), int(seeds.max(initial=0)),
                       *(max(src, edges) for src, _, edges in layers)])
        width = 4 if biggest < _INT32_LIMIT else 8
        dtype = np.dtype("<i4") if width == 4 else np.dtype("<i8")
        head = _REC_HEAD.pack(step, seeds.shape[0], input_nodes.shape[0], width,
                              self.num_layers)
        head += b"".join(_LAYER.pack(*layer) for layer in layers)
        packed = np.packbits(mask, bitorder="little")
        payload_len = len(head) + sum(a.shape[0] for a in arrays) * width + packed.nbytes
        length = _LEN.pack(payload_len)
        offset = self._offset
        self._write(length)
        crc = zlib.crc32(length)
        self._write(head)
        crc = zlib.crc32(head, crc)
        for array in arrays:  # one array converted at a time: constant extra memory
            data = np.ascontiguousarray(array, dtype=dtype)
            self._write(data)
            crc = zlib.crc32(data, crc)
        self._write(packed)
        crc = zlib.crc32(packed, crc)
        self._write(_CRC.pack(crc))
        self._index.append((step, offset))

    def close(self) -> Path:
        """Write the index and trailer, then rename the file into place."""
        if self._closed:
            return self.path
        try:
            index = np.array(self._index, dtype=_INDEX_ENTRY).tobytes()
            index_offset = self._offset
            self._write(index)
            trailer = _TRAILER.pack(END_MAGIC, len(self._index), index_offset)
            crc = zlib.crc32(trailer, zlib.crc32(index))
            self._write(trailer + struct.pack("<II", crc, 0))
            self._file.flush()
            if self._fsync:
                os.fsync(self._file.fileno())
            self._file.close()
            os.chmod(self._tmp, 0o644)
            os.replace(self._tmp, self.path)
        except BaseException:
            self.abort()
            raise
        self._closed = True
        return self.path

    def abort(self) -> None:
        """Discard the temporary file; nothing appears at ``path``."""
        self._closed = True
        with contextlib.suppress(OSError):
            self._file.close()
        with contextlib.suppress(FileNotFoundError):
            self._tmp.unlink()


def _check_range(name: str, values: np.ndarray, lo: int, hi: int) -> None:
    """``ValueError`` unless every value lies in ``[lo, hi)``."""
    if values.size and (int(values.min()) < lo or int(values.max()) >= hi):
        raise ValueError(f"{name} outside [{lo}, {hi}): min {int(values.min())}, "
                         f"max {int(values.max())}")


def _check_csr(layer: int, indptr: np.ndarray, indices: np.ndarray, num_src: int) -> None:
    """``ValueError`` unless block ``layer``'s CSR is well formed over ``num_src`` sources."""
    if (not indptr.size or indptr[0] != 0 or indptr[-1] != indices.shape[0]
            or np.any(np.diff(indptr) < 0)):
        raise ValueError(f"block {layer}: indptr is not a row pointer over "
                         f"{indices.shape[0]} edges")
    _check_range(f"block {layer} indices", indices, 0, num_src)


class BlockReader:
    """Random-access and sequential reader of a block file (see the module docstring).

    Opening checks the header and the trailer/index; records are read and checked lazily
    (with ``num_nodes``, node ids are checked against it too).
    """

    def __init__(self, path: str | Path, num_nodes: int | None = None) -> None:
        self.path = Path(path)
        self.num_nodes = num_nodes
        try:
            self._fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            raise BlockFileError(f"{self.path}: missing (not presampled?)") from None
        except OSError as exc:
            raise BlockFileError(f"{self.path}: cannot open ({exc})") from exc
        try:
            self._open()
        except BaseException:
            os.close(self._fd)
            self._fd = -1
            raise

    # -- opening ---------------------------------------------------------------------------
    def _pread(self, size: int, offset: int) -> bytes:
        chunks = []
        remaining = size
        while remaining > 0:
            chunk = os.pread(self._fd, remaining, offset)
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
            offset += len(chunk)
        return b"".join(chunks) if len(chunks) != 1 else chunks[0]

    def _error(self, what: str, record: int | None = None) -> BlockFileError:
        where = f"{self.path}: record {record}: " if record is not None else f"{self.path}: "
        return BlockFileError(where + what)

    def _open(self) -> None:
        self.size = os.fstat(self._fd).st_size
        if self.size < HEADER_SIZE:
            raise self._error(f"truncated ({self.size} bytes, header needs {HEADER_SIZE})")
        raw = self._pread(HEADER_SIZE, 0)
        magic, version, num_layers, worker, epoch, _flags = _HEADER.unpack_from(raw)
        if magic != MAGIC:
            raise self._error(f"not a block file (magic {magic!r}, expected {MAGIC!r})")
        if version != FORMAT_VERSION:
            raise self._error(f"format version {version}, this reader supports "
                              f"{FORMAT_VERSION}")
        (crc,) = _HEADER_CRC.unpack_from(raw, _HEADER.size)
        if crc != zlib.crc32(raw[:_HEADER.size]):
            raise self._error("header checksum mismatch (file is corrupt)")
        self.num_layers, self.worker, self.epoch = int(num_layers), int(worker), int(epoch)
        trailer = self._pread(TRAILER_SIZE, self.size - TRAILER_SIZE) \
            if self.size >= HEADER_SIZE + TRAILER_SIZE else b""
        if len(trailer) != TRAILER_SIZE or trailer[:8] != END_MAGIC:
            raise self._diagnose_truncation()
        _, count, index_offset = _TRAILER.unpack_from(trailer)
        index_bytes = count * _INDEX_ENTRY.itemsize
        if (index_offset < HEADER_SIZE
                or index_offset + index_bytes + TRAILER_SIZE != self.size):
            raise self._error(f"trailer inconsistent with the file size (count {count}, "
                              f"index at {index_offset}, {self.size} bytes): corrupt")
        index = self._pread(index_bytes, index_offset)
        (crc,) = _CRC.unpack_from(trailer, _TRAILER.size)
        if crc != zlib.crc32(trailer[:_TRAILER.size], zlib.crc32(index)):
            raise self._error("index/trailer checksum mismatch (file is corrupt)")
        entries = np.frombuffer(index, dtype=_INDEX_ENTRY)
        self.steps = entries["step"].astype(np.int64)
        self._offsets = np.append(entries["offset"].astype(np.int64), index_offset)
        if count and (self._offsets[0] != HEADER_SIZE
                      or np.any(np.diff(self._offsets) < _RECORD_OVERHEAD)
                      or np.any(np.diff(self.steps) <= 0)):
            raise self._error("index is inconsistent (offsets or steps out of order)")
        if not count and index_offset != HEADER_SIZE:
            raise self._error("index is inconsistent (no records but data present)")

    def _diagnose_truncation(self) -> BlockFileError:
        """No valid trailer: walk the records to name the first incomplete one."""
        offset, record = HEADER_SIZE, 0
        while offset + _LEN.size <= self.size:
            (length,) = _LEN.unpack(self._pread(_LEN.size, offset))
            end = offset + _RECORD_OVERHEAD + length
            if end > self.size:
                break
            raw = self._pread(_LEN.size + length, offset)
            (crc,) = _CRC.unpack(self._pread(_CRC.size, end - _CRC.size))
            if crc != zlib.crc32(raw):
                break
            offset, record = end, record + 1
        if offset == self.size:
            return self._error(f"truncated: index and trailer missing after {record} complete "
                               f"records ({self.size} bytes)")
        return self._error(f"truncated or damaged: no valid trailer; {record} complete records, "
                           f"then incomplete or invalid data at byte {offset} "
                           f"({self.size} bytes in file)", record)

    # -- access ----------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.steps.shape[0])

    def __enter__(self) -> BlockReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self.close()

    def close(self) -> None:
        if getattr(self, "_fd", -1) >= 0:
            os.close(self._fd)
            self._fd = -1

    def record_span(self, position: int) -> tuple[int, int]:
        """Byte range ``[start, end)`` of the ``position``-th record in the file."""
        if not 0 <= position < len(self):
            raise IndexError(f"{self.path}: record {position} outside [0, {len(self)})")
        return int(self._offsets[position]), int(self._offsets[position + 1])

    def position(self, step: int) -> int:
        """Position (record index) of ``step``; raises ``KeyError`` when absent."""
        pos = int(np.searchsorted(self.steps, step))
        if pos >= len(self) or self.steps[pos] != step:
            raise KeyError(f"{self.path}: no step {step}")
        return pos

    def read(self, step: int) -> PresampledBatch:
        """The batch of ``step`` (random access through the index)."""
        return self.read_at(self.position(step))

    def read_at(self, position: int) -> PresampledBatch:
        """The ``position``-th record of the file."""
        if self._fd < 0:
            raise ValueError(f"{self.path}: reader is closed")
        if not 0 <= position < len(self):
            raise IndexError(f"{self.path}: record {position} outside [0, {len(self)})")
        start, end = int(self._offsets[position]), int(self._offsets[position + 1])
        raw = self._pread(end - start, start)
        if len(raw) != end - start:
            raise self._error("truncated while reading", position)
        view = memoryview(raw)
        (length,) = _LEN.unpack_from(view)
        if length != end - start - _RECORD_OVERHEAD:
            raise self._error(f"length field {length} disagrees with the index "
                              f"({end - start - _RECORD_OVERHEAD}): corrupt", position)
        (crc,) = _CRC.unpack_from(view, end - start - _CRC.size)
        if crc != zlib.crc32(view[:-_CRC.size]):
            raise self._error("checksum mismatch (file is corrupt)", position)
        try:
            item = self._parse(view[_LEN.size:-_CRC.size])
        except (ValueError, struct.error) as exc:
            raise self._error(f"malformed payload ({exc})", position) from exc
        if item.step != self.steps[position]:
            raise self._error(f"step {item.step} disagrees with the index "
                              f"({self.steps[position]})", position)
        return item

    def _parse(self, payload: memoryview) -> PresampledBatch:
        step, num_seeds, num_input, width, num_layers = _REC_HEAD.unpack_from(payload)
        if width not in (4, 8) or num_layers != self.num_layers or min(num_seeds,
                                                                        num_input) < 0:
            raise ValueError(f"bad record head (width {width}, layers {num_layers})")
        pos = _REC_HEAD.size
        layers = []
        for _ in range(num_layers):
            layers.append(_LAYER.unpack_from(payload, pos))
            pos += _LAYER.size
        dtype = np.dtype("<i4") if width == 4 else np.dtype("<i8")

        def take(count: int) -> np.ndarray:
            nonlocal pos
            if count < 0 or pos + count * width > len(payload):
                raise ValueError("array extends past the record")
            array = np.frombuffer(payload, dtype=dtype, count=count, offset=pos)
            pos += count * width
            return array.astype(np.int64)

        seeds = take(num_seeds)
        input_nodes = take(num_input)
        bound = self.num_nodes if self.num_nodes is not None else np.iinfo(np.int64).max
        _check_range("seed ids", seeds, 0, bound)
        _check_range("input node ids", input_nodes, 0, bound)
        blocks = []
        for layer, (num_src, num_dst, num_edges) in enumerate(layers):
            indptr = take(num_dst + 1)
            indices = take(num_edges)
            _check_csr(layer, indptr, indices, num_src)
            blocks.append(Block(num_src=int(num_src), num_dst=int(num_dst),
                                indptr=torch.from_numpy(indptr),
                                indices=torch.from_numpy(indices)))
        mask_bytes = (num_input + 7) // 8
        if pos + mask_bytes != len(payload):
            raise ValueError(f"payload size {len(payload)} != {pos + mask_bytes} expected")
        mask = np.unpackbits(np.frombuffer(payload, dtype=np.uint8, count=mask_bytes,
                                           offset=pos), count=num_input,
                             bitorder="little").astype(bool)
        if blocks and (blocks[0].num_src != num_input or blocks[-1].num_dst != num_seeds
                       or any(a.num_dst != b.num_src for a, b in itertools.pairwise(blocks))):
            raise ValueError("block sizes are inconsistent")
        return PresampledBatch(step=int(step),
                               batch=MiniBatch(seeds=torch.from_numpy(seeds),
                                               input_nodes=torch.from_numpy(input_nodes),
                                               blocks=blocks),
                               local_mask=mask)

    def __iter__(self) -> Iterator[PresampledBatch]:
        for position in range(len(self)):
            yield self.read_at(position)

    def verify(self) -> int:
        """Read and check every record; return the record count."""
        for position in range(len(self)):
            self.read_at(position)
        return len(self)


def iter_batches(path: str | Path, num_nodes: int | None = None
                 ) -> Iterator[PresampledBatch]:
    """Lazily yield the batches of a block file in order (opening errors raise at once)."""
    return iterate_and_close(BlockReader(path, num_nodes))


def iterate_and_close(reader: BlockReader) -> Iterator[PresampledBatch]:
    """Yield every batch of an open reader in order, closing it when done or abandoned."""
    try:
        yield from reader
    finally:
        reader.close()
