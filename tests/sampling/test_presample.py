"""Presampling to on-disk metadata blocks: equality with online sampling, determinism,
bitmasks, per-epoch frequencies, integrity checks and bounded memory."""

from __future__ import annotations

import gc
import shutil
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import torch

from commgnn.data.store import load_dataset, write_dataset
from commgnn.data.synthetic import generate_synthetic
from commgnn.partition import load_partition, partition_graph, write_partition
from commgnn.sampling.blockio import BlockFileError, BlockReader, iter_batches
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.presample import (
    PresampleError,
    blocks_file,
    frequencies,
    frequency_file,
    load_presampled,
    open_presampled,
    presample,
    read_presample_meta,
    verify,
)
from commgnn.sampling.schedule import epoch_seed_nodes, steps_per_epoch, worker_train_nodes
from commgnn.sampling.seeds import batch_seed

FANOUTS = [4, 3]
BATCH = 48
SEED = 11
EPOCHS = 3
WORKERS = 2


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("presample_inputs")
    ds = generate_synthetic({"preset": "tiny", "nodes": 1500, "seed": 3}, name="tiny")
    write_dataset(ds, root / "dataset")
    write_partition(partition_graph(ds, {"method": "metis", "parts": WORKERS, "seed": 0}),
                    root / "partition")
    return root / "dataset", root / "partition"


def run(inputs, out: Path, epochs: int = EPOCHS, **kwargs) -> dict:
    dataset_dir, partition_dir = inputs
    return presample(dataset_dir, partition_dir, out, fanouts=FANOUTS, batch_size=BATCH,
                     base_seed=SEED, epochs=epochs, **kwargs)


@pytest.fixture(scope="module")
def presampled(inputs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("presample_out") / "run_a"
    run(inputs, out)
    return out


def online_batches(inputs, worker: int, epoch: int):
    """The batches online training samples (as in ``commgnn.train.context``)."""
    dataset_dir, partition_dir = inputs
    ds = load_dataset(dataset_dir)
    owner = load_partition(partition_dir).book.owner
    sampler = NeighborSampler(ds.indptr, ds.indices, FANOUTS)
    train = worker_train_nodes(ds.train_idx, owner, worker)
    steps = steps_per_epoch(ds.train_idx, owner, WORKERS, BATCH)
    seeds = epoch_seed_nodes(train, steps, BATCH, SEED, worker, epoch)
    return [sampler.sample(s, batch_seed(SEED, worker, epoch, i)) for i, s in enumerate(seeds)]


def assert_same_batch(a, b) -> None:
    for x, y in ((a.seeds, b.seeds), (a.input_nodes, b.input_nodes)):
        assert x.dtype == y.dtype == torch.int64
        assert torch.equal(x, y)
    assert len(a.blocks) == len(b.blocks)
    for p, q in zip(a.blocks, b.blocks, strict=True):
        assert (p.num_src, p.num_dst) == (q.num_src, q.num_dst)
        assert p.indptr.dtype == q.indptr.dtype == torch.int64
        assert p.indices.dtype == q.indices.dtype == torch.int64
        assert torch.equal(p.indptr, q.indptr)
        assert torch.equal(p.indices, q.indices)


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def test_blocks_reproduce_online_sampler(inputs, presampled):
    meta = read_presample_meta(presampled)
    assert meta["params"]["workers"] == [0, 1]
    for worker in range(WORKERS):
        for epoch in range(EPOCHS):
            expected = online_batches(inputs, worker, epoch)
            got = list(load_presampled(presampled, worker, epoch))
            assert len(got) == len(expected) == meta["steps_per_epoch"]
            assert [g.step for g in got] == list(range(len(expected)))
            for g, e in zip(got, expected, strict=True):
                assert_same_batch(g.batch, e)


def test_two_runs_byte_identical(inputs, presampled, tmp_path):
    other = tmp_path / "run_b"
    run(inputs, other, threads=2)  # thread count must not change a byte
    a, b = tree_bytes(presampled), tree_bytes(other)
    assert sorted(a) == sorted(b)
    assert len(a) == 2 * WORKERS * EPOCHS + 1
    for name in a:
        assert a[name] == b[name], name


def test_worker_subset_gives_same_files(inputs, presampled, tmp_path):
    sub = tmp_path / "sub"
    meta = run(inputs, sub, epochs=2, workers=[1])
    assert meta["params"]["workers"] == [1]
    for epoch in range(2):
        for name in (blocks_file(1, epoch), frequency_file(1, epoch)):
            assert (sub / name).read_bytes() == (presampled / name).read_bytes()
    assert not (sub / blocks_file(0, 0)).exists()
    with pytest.raises(PresampleError, match="worker 0"):
        load_presampled(sub, 0, 0)
    with pytest.raises(PresampleError, match="epoch 2"):
        frequencies(sub, 1, 2)


def test_bitmask_and_meta_totals(inputs, presampled):
    owner = load_partition(inputs[1]).book.owner
    meta = read_presample_meta(presampled)
    for worker in range(WORKERS):
        stats = meta["workers"][str(worker)]
        for epoch in range(EPOCHS):
            local = remote = 0
            for item in load_presampled(presampled, worker, epoch):
                nodes = item.batch.input_nodes.numpy()
                assert item.local_mask.dtype == np.bool_
                np.testing.assert_array_equal(item.local_mask, owner[nodes] == worker)
                local += int(item.local_mask.sum())
                remote += int((~item.local_mask).sum())
            assert stats["local_rows"][epoch] == local
            assert stats["remote_rows"][epoch] == remote
            assert remote > 0 and local > 0
            assert stats["batches"][epoch] == meta["steps_per_epoch"]


def test_frequencies_are_per_epoch_recount(presampled):
    meta = read_presample_meta(presampled)
    for worker in range(WORKERS):
        cumulative: dict[int, int] = {}
        for epoch in range(EPOCHS):
            recount: dict[int, int] = {}
            for item in load_presampled(presampled, worker, epoch):
                for node in item.remote_nodes.tolist():
                    recount[node] = recount.get(node, 0) + 1
            ids, counts = frequencies(presampled, worker, epoch)
            assert ids.dtype == counts.dtype == np.int64
            assert np.all(np.diff(ids) > 0) and np.all(counts > 0)
            assert dict(zip(ids.tolist(), counts.tolist(), strict=True)) == recount
            assert int(counts.sum()) == meta["workers"][str(worker)]["remote_rows"][epoch]
            assert meta["workers"][str(worker)]["unique_remote"][epoch] == len(ids)
            for node, c in recount.items():
                cumulative[node] = cumulative.get(node, 0) + c
            if epoch > 0:  # not accumulated across epochs
                assert dict(zip(ids.tolist(), counts.tolist(), strict=True)) != cumulative


def test_random_access_matches_sequential(presampled):
    sequential = list(load_presampled(presampled, 1, 2))
    with open_presampled(presampled, 1, 2) as reader:
        assert (reader.worker, reader.epoch, reader.num_layers) == (1, 2, len(FANOUTS))
        np.testing.assert_array_equal(reader.steps, np.arange(len(sequential)))
        for step in reversed(range(len(sequential))):
            item = reader.read(step)
            assert item.step == step
            assert_same_batch(item.batch, sequential[step].batch)
            np.testing.assert_array_equal(item.local_mask, sequential[step].local_mask)
        with pytest.raises(KeyError):
            reader.read(len(sequential))


def test_verify_passes(presampled):
    summary = verify(presampled)
    assert summary["batches"] == WORKERS * EPOCHS * read_presample_meta(presampled)[
        "steps_per_epoch"]


@pytest.fixture
def copy_out(presampled, tmp_path) -> Path:
    out = tmp_path / "copy"
    shutil.copytree(presampled, out)
    return out


def test_corrupt_byte_names_file_and_record(copy_out):
    path = copy_out / blocks_file(0, 1)
    with BlockReader(path) as reader:
        start, end = reader.record_span(3)
    data = bytearray(path.read_bytes())
    data[(start + end) // 2] ^= 0x40
    path.write_bytes(bytes(data))
    batches = iter_batches(path)
    for _ in range(3):  # records before the damage still read fine (lazy reading)
        next(batches)
    with pytest.raises(BlockFileError, match=r"w0_e1\.blocks: record 3: checksum mismatch"):
        next(batches)
    with BlockReader(path) as reader, pytest.raises(BlockFileError, match="record 3"):
        reader.read(3)
    with pytest.raises(BlockFileError, match=r"w0_e1\.blocks: record 3"):
        verify(copy_out)


def test_corrupt_length_field_detected(copy_out):
    path = copy_out / blocks_file(1, 0)
    with BlockReader(path) as reader:
        start, _ = reader.record_span(2)
    data = bytearray(path.read_bytes())
    data[start] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(BlockFileError, match=r"w1_e0\.blocks: record 2"):
        list(iter_batches(path))


@pytest.mark.parametrize("cut", ["middle", "tail"])
def test_truncation_detected(copy_out, cut):
    path = copy_out / blocks_file(1, 1)
    with BlockReader(path) as reader:
        start, end = reader.record_span(4)
    size = path.stat().st_size
    keep = (start + end) // 2 if cut == "middle" else size - 5
    with open(path, "r+b") as handle:
        handle.truncate(keep)
    pattern = r"w1_e1\.blocks: record 4: truncated" if cut == "middle" else r"w1_e1\.blocks"
    with pytest.raises(BlockFileError, match=pattern):
        iter_batches(path)
    with pytest.raises(BlockFileError, match=r"w1_e1\.blocks"):
        load_presampled(copy_out, 1, 1)
    with pytest.raises(BlockFileError, match="w1_e1"):
        verify(copy_out)


def test_truncated_at_record_boundary(copy_out):
    path = copy_out / blocks_file(0, 0)
    with BlockReader(path) as reader:
        _, end = reader.record_span(len(reader) - 1)
    with open(path, "r+b") as handle:
        handle.truncate(end)
    with pytest.raises(BlockFileError, match=r"w0_e0\.blocks: truncated: index and trailer"):
        BlockReader(path)


def test_missing_files_give_clear_errors(copy_out, tmp_path):
    (copy_out / blocks_file(0, 2)).unlink()
    with pytest.raises(BlockFileError, match=r"w0_e2\.blocks: missing"):
        load_presampled(copy_out, 0, 2)
    with pytest.raises(BlockFileError, match=r"w0_e2\.blocks: missing"):
        verify(copy_out)
    with pytest.raises(BlockFileError, match="missing"):
        iter_batches(tmp_path / "nowhere.blocks")
    with pytest.raises(PresampleError, match=r"meta\.json: missing"):
        load_presampled(tmp_path / "not_presampled", 0, 0)
    (copy_out / frequency_file(1, 1)).unlink()
    with pytest.raises(PresampleError, match=r"w1_e1\.npz: missing"):
        frequencies(copy_out, 1, 1)


def test_bad_parameters_and_partition(inputs, tmp_path):
    with pytest.raises(PresampleError, match="workers"):
        run(inputs, tmp_path / "x", workers=[WORKERS])
    with pytest.raises(PresampleError, match="epochs"):
        run(inputs, tmp_path / "x", epochs=0)
    assert not (tmp_path / "x").exists()
    ds = load_dataset(inputs[0])
    write_partition(partition_graph(ds, {"method": "chunk", "parts": 2, "chunks": 3}),
                    tmp_path / "chunk")
    with pytest.raises(PresampleError, match="chunk"):
        presample(inputs[0], tmp_path / "chunk", tmp_path / "y", fanouts=FANOUTS,
                  batch_size=BATCH, base_seed=SEED, epochs=1)
    assert not any(p.name.startswith(".y.tmp") for p in tmp_path.iterdir())


def traced_peak(fn) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_presample_memory_does_not_grow_with_epochs(inputs, tmp_path, monkeypatch):
    import commgnn.partition.io as partition_io
    from commgnn.data.store import sha256_file

    # load_partition hashes with a fixed 16 MiB read buffer that would mask everything else.
    monkeypatch.setattr(partition_io, "sha256_file",
                        lambda path: sha256_file(path, chunk_bytes=1 << 16))
    run(inputs, tmp_path / "warm", epochs=1)  # JIT caches, imports
    peak2 = traced_peak(lambda: run(inputs, tmp_path / "e2", epochs=2))
    peak8 = traced_peak(lambda: run(inputs, tmp_path / "e8", epochs=8))
    files = {e: sum(p.stat().st_size for p in (tmp_path / f"e{e}").rglob("*.blocks"))
             for e in (2, 8)}
    print(peak2, peak8, files)
    # Buffering the extra 6 epochs' records would add at least their on-disk size.
    assert peak8 - peak2 < (files[8] - files[2]) / 4, (peak2, peak8, files)
    assert peak8 < 1.5 * peak2 + 256 * 1024, (peak2, peak8)
