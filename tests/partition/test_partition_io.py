"""Write/load round trip, byte-reproducibility and error reporting."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from partgraphs import sbm_dataset

from commgnn.data.store import load_dataset, write_dataset
from commgnn.partition import PartitionError, load_partition, partition_graph, write_partition

SPEC_CHUNK = {"method": "chunk", "parts": 4, "chunks": 5, "chunk_method": "metis",
              "halo_hops": 2, "seed": 3}


@pytest.fixture(scope="module")
def ds():
    return sbm_dataset(num_nodes=800, blocks=4, avg_degree=8, seed=11)


@pytest.fixture(scope="module")
def written(ds, tmp_path_factory):
    p = partition_graph(ds, SPEC_CHUNK)
    out = write_partition(p, tmp_path_factory.mktemp("parts") / "chunk5")
    return p, out


def _files(directory):
    return sorted(path.name for path in directory.iterdir())


def test_layout_and_meta(written):
    p, out = written
    assert _files(out) == ["book.npz", "halo_0.npy", "halo_1.npy", "halo_2.npy", "halo_3.npy",
                           "halo_4.npy", "meta.json", "stats.json", "timing.json"]
    meta = json.loads((out / "meta.json").read_text())
    assert meta["method"] == "chunk" and meta["num_parts"] == 5
    assert meta["workers"] == 4 and meta["chunks"] == 5 and meta["halo_hops"] == 2
    assert meta["spec"] == p.spec
    assert set(meta["checksums"]) == {"book.npz", "stats.json",
                                      *(f"halo_{q}.npy" for q in range(5))}
    assert not list(out.parent.glob(".chunk5.tmp-*"))
    with np.load(out / "book.npz", allow_pickle=False) as book:
        assert sorted(book.files) == ["local_id", "owner"]


def test_round_trip(written):
    p, out = written
    q = load_partition(out)
    assert q.spec == p.spec and q.method == "chunk"
    assert (q.num_parts, q.workers, q.chunks, q.halo_hops) == (5, 4, 5, 2)
    assert np.array_equal(q.book.owner, p.book.owner)
    assert np.array_equal(q.book.local_id, p.book.local_id)
    assert all(np.array_equal(a, b) for a, b in zip(q.halos, p.halos, strict=True))
    assert q.stats == json.loads(json.dumps(p.stats))
    assert q.dataset == p.dataset
    assert set(q.timing) == {"assign_s", "book_halo_s", "stats_s", "total_s"}
    assert q.chunk_pairs(1) == p.chunk_pairs(1)


@pytest.mark.parametrize("spec", [
    {"method": "metis", "parts": 3, "balance_train": True, "seed": 9},
    {"method": "random", "parts": 3, "seed": 9},
    SPEC_CHUNK,
])
def test_same_seed_gives_byte_identical_files(ds, tmp_path, spec):
    a = write_partition(partition_graph(ds, spec), tmp_path / "a")
    b = write_partition(partition_graph(ds, spec), tmp_path / "b")
    names = [n for n in _files(a) if n != "timing.json"]
    assert names == [n for n in _files(b) if n != "timing.json"]
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_rewrite_replaces_directory(ds, tmp_path):
    out = tmp_path / "p"
    write_partition(partition_graph(ds, {"method": "random", "parts": 4}), out)
    write_partition(partition_graph(ds, {"method": "random", "parts": 2}), out)
    assert load_partition(out).num_parts == 2
    assert not (out / "halo_3.npy").exists()


@pytest.fixture
def copy(written, tmp_path):
    _, out = written
    target = tmp_path / "copy"
    shutil.copytree(out, target)
    return target


@pytest.mark.parametrize("name", ["meta.json", "book.npz", "halo_2.npy", "stats.json"])
def test_missing_file_is_named(copy, name):
    (copy / name).unlink()
    with pytest.raises(PartitionError, match=name.replace(".", r"\.")):
        load_partition(copy)


@pytest.mark.parametrize("name", ["book.npz", "halo_0.npy", "stats.json"])
def test_corrupt_file_is_named(copy, name):
    data = bytearray((copy / name).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (copy / name).write_bytes(bytes(data))
    with pytest.raises(PartitionError, match=rf"{name.replace('.', chr(92) + '.')}.*checksum"):
        load_partition(copy)


def test_truncated_file_without_checksums_is_named(copy):
    path = copy / "halo_1.npy"
    path.write_bytes(path.read_bytes()[:20])
    with pytest.raises(PartitionError, match=r"halo_1\.npy"):
        load_partition(copy, verify_checksums=False)
    (copy / "book.npz").write_bytes(b"not a zip")
    with pytest.raises(PartitionError, match=r"book\.npz"):
        load_partition(copy, verify_checksums=False)


def test_corrupt_meta_is_named(copy):
    (copy / "meta.json").write_text("{not json")
    with pytest.raises(PartitionError, match=r"meta\.json.*corrupt"):
        load_partition(copy)


def test_inconsistent_book_is_detected(copy):
    with np.load(copy / "book.npz") as book:
        owner, local_id = book["owner"], book["local_id"].copy()
    local_id[0] += 1
    np.savez(copy / "book.npz", owner=owner, local_id=local_id)
    with pytest.raises(PartitionError, match=r"book\.npz.*local_id"):
        load_partition(copy, verify_checksums=False)


def test_not_a_directory(tmp_path):
    with pytest.raises(PartitionError, match="not a directory"):
        load_partition(tmp_path / "nowhere")


def test_partition_of_memory_mapped_dataset(ds, tmp_path):
    mapped = load_dataset(write_dataset(ds, tmp_path / "ds"), mmap=True)
    assert not mapped.indices.flags.writeable
    for spec in ({"method": "metis", "parts": 3, "balance_train": True},
                 {"method": "chunk", "parts": 2, "chunk_method": "metis", "halo_hops": 2}):
        a = partition_graph(mapped, spec)
        b = partition_graph(ds, spec)
        assert np.array_equal(a.book.owner, b.book.owner)
        assert all(np.array_equal(x, y) for x, y in zip(a.halos, b.halos, strict=True))
        assert a.stats == b.stats
