"""The block file format on its own: round trips, widths, atomic writes, bounded memory."""

from __future__ import annotations

import gc
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import torch

from commgnn.core.blocks import Block, MiniBatch
from commgnn.sampling.blockio import (
    HEADER_SIZE,
    TRAILER_SIZE,
    BlockFileError,
    BlockReader,
    BlockWriter,
    iter_batches,
)


def make_batch(rng: np.random.Generator, num_seeds: int, fanout: int, layers: int = 2,
               id_offset: int = 0) -> MiniBatch:
    """A structurally valid random batch (nested prefix layout, CSR by destination)."""
    num_known = num_seeds
    blocks = []
    for _ in range(layers):
        num_dst = num_known
        degs = rng.integers(0, fanout + 1, size=num_dst)
        indptr = np.zeros(num_dst + 1, dtype=np.int64)
        np.cumsum(degs, out=indptr[1:])
        new = int(rng.integers(0, indptr[-1] + 1))
        num_src = num_dst + new
        indices = rng.integers(0, max(num_src, 1), size=int(indptr[-1]), dtype=np.int64)
        blocks.append(Block(num_src, num_dst, torch.from_numpy(indptr),
                            torch.from_numpy(indices)))
        num_known = num_src
    blocks.reverse()
    input_nodes = rng.permutation(10 * num_known + 10)[:num_known].astype(np.int64) + id_offset
    return MiniBatch(seeds=torch.from_numpy(input_nodes[:num_seeds].copy()),
                     input_nodes=torch.from_numpy(input_nodes), blocks=blocks)


def write_file(path: Path, batches, masks, steps=None) -> Path:
    steps = range(len(batches)) if steps is None else steps
    with BlockWriter(path, num_layers=len(batches[0].blocks), worker=3, epoch=7) as writer:
        for step, batch, mask in zip(steps, batches, masks, strict=False):
            writer.write(step, batch, mask)
    return path


def same(a: MiniBatch, b: MiniBatch) -> bool:
    return (torch.equal(a.seeds, b.seeds) and torch.equal(a.input_nodes, b.input_nodes)
            and all(p.num_src == q.num_src and p.num_dst == q.num_dst
                    and torch.equal(p.indptr, q.indptr) and torch.equal(p.indices, q.indices)
                    for p, q in zip(a.blocks, b.blocks, strict=True)))


@pytest.mark.parametrize("id_offset", [0, 1 << 40])  # 4-byte and 8-byte records
def test_round_trip_and_determinism(tmp_path, id_offset):
    rng = np.random.default_rng(0)
    batches = [make_batch(rng, int(rng.integers(1, 30)), 4, id_offset=id_offset)
               for _ in range(6)]
    masks = [rng.random(len(b.input_nodes)) < 0.5 for b in batches]
    steps = [0, 2, 3, 5, 8, 13]
    a = write_file(tmp_path / "a.blocks", batches, masks, steps)
    b = write_file(tmp_path / "b.blocks", batches, masks, steps)
    assert a.read_bytes() == b.read_bytes()
    got = list(iter_batches(a))
    assert [g.step for g in got] == steps
    for g, batch, mask in zip(got, batches, masks, strict=True):
        assert same(g.batch, batch)
        assert g.batch.input_nodes.dtype == torch.int64
        np.testing.assert_array_equal(g.local_mask, mask)
    with BlockReader(a) as reader:
        assert (reader.worker, reader.epoch, len(reader)) == (3, 7, 6)
        assert same(reader.read(8).batch, batches[4])
        with pytest.raises(KeyError):
            reader.read(4)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.blocks", "b.blocks"]


def test_narrow_ids_take_less_space(tmp_path):
    rng = np.random.default_rng(1)
    batch = make_batch(rng, 20, 5)
    wide = make_batch(np.random.default_rng(1), 20, 5, id_offset=1 << 33)
    mask = np.zeros(len(batch.input_nodes), dtype=bool)
    small = write_file(tmp_path / "s.blocks", [batch], [mask]).stat().st_size
    large = write_file(tmp_path / "l.blocks", [wide], [mask]).stat().st_size
    assert small < large


def test_empty_file(tmp_path):
    path = tmp_path / "e.blocks"
    with BlockWriter(path, num_layers=2, worker=0, epoch=0):
        pass
    assert path.stat().st_size == HEADER_SIZE + TRAILER_SIZE
    assert list(iter_batches(path)) == []


def test_writer_is_atomic_and_checks_input(tmp_path):
    rng = np.random.default_rng(2)
    batch = make_batch(rng, 5, 3)
    mask = np.ones(len(batch.input_nodes), dtype=bool)
    path = tmp_path / "x.blocks"
    with pytest.raises(RuntimeError, match="boom"), \
            BlockWriter(path, num_layers=2, worker=0, epoch=0) as writer:
        writer.write(0, batch, mask)
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []
    with BlockWriter(path, num_layers=2, worker=0, epoch=0) as writer:
        writer.write(1, batch, mask)
        with pytest.raises(ValueError, match="strictly increasing"):
            writer.write(1, batch, mask)
        with pytest.raises(ValueError, match="local_mask"):
            writer.write(2, batch, mask[:-1])
        with pytest.raises(ValueError, match="blocks"):
            writer.write(2, MiniBatch(batch.seeds, batch.input_nodes, batch.blocks[:1]), mask)
    assert len(list(iter_batches(path))) == 1


def test_not_a_block_file(tmp_path):
    path = tmp_path / "junk.blocks"
    path.write_bytes(b"x" * 100)
    with pytest.raises(BlockFileError, match=r"junk\.blocks: not a block file"):
        BlockReader(path)
    path.write_bytes(b"x" * 10)
    with pytest.raises(BlockFileError, match=r"junk\.blocks: truncated"):
        BlockReader(path)


def test_corrupt_header_and_index(tmp_path):
    rng = np.random.default_rng(3)
    batches = [make_batch(rng, 8, 3) for _ in range(3)]
    masks = [np.ones(len(b.input_nodes), dtype=bool) for b in batches]
    path = write_file(tmp_path / "c.blocks", batches, masks)
    good = path.read_bytes()
    for pos, what in ((20, "header checksum"), (len(good) - TRAILER_SIZE - 3, "index")):
        data = bytearray(good)
        data[pos] ^= 0x10
        path.write_bytes(bytes(data))
        with pytest.raises(BlockFileError, match=what):
            BlockReader(path)


def test_writer_holds_one_record_at_most(tmp_path):
    """Streaming: the traced peak while writing many records stays near one record."""
    rng = np.random.default_rng(4)
    batch = make_batch(rng, 2000, 10)  # ~10^5 ids: ~0.5 MB per record at 4 bytes/id
    mask = rng.random(len(batch.input_nodes)) < 0.3
    ids = len(batch.input_nodes) + len(batch.seeds) + sum(
        len(b.indptr) + len(b.indices) for b in batch.blocks)
    path = tmp_path / "big.blocks"
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        with BlockWriter(path, num_layers=2, worker=0, epoch=0, fsync=False) as writer:
            for step in range(40):
                writer.write(step, batch, mask)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    record = path.stat().st_size / 40
    assert record > 4 * ids * 0.9
    assert peak < 2 * record, (peak, record)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        count = sum(1 for _ in iter_batches(path))
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert count == 40
    assert peak < 6 * record, (peak, record)  # raw bytes + int64 copies of one record
