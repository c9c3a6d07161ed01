"""Presampled blocks are checked where they are loaded (issue 14, item 3): a truncated or
corrupt file is a BlockFileError naming it (not ``zipfile.BadZipFile`` and a peer's
misleading "eof"), a truncated file of the worker fails at setup, and every id a record
holds is bounds-checked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from commgnn.core.errors import CommgnnError
from commgnn.data.store import sha256_file
from commgnn.sampling.blockio import BlockFileError, BlockReader, BlockWriter
from commgnn.sampling.presample import (
    PresampleError,
    blocks_file,
    check_presample,
    frequencies,
    frequency_file,
    open_presampled,
)

pytestmark = pytest.mark.timeout(120)


@pytest.fixture()
def copy(tiny_presampled, tmp_path) -> Path:
    """A private copy of the tiny presample (the session fixture is never modified)."""
    return Path(shutil.copytree(tiny_presampled, tmp_path / "presample"))


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _settings(meta_dir: Path) -> dict:
    meta = json.loads((meta_dir / "meta.json").read_text())
    params = meta["params"]
    return {"fanouts": params["fanouts"], "batch_size": params["batch_size"],
            "base_seed": params["base_seed"], "epochs": params["epochs"],
            "steps": meta["steps_per_epoch"]}


def _rewrite(directory: Path, worker: int, epoch: int, step: int, damage) -> None:
    """Rewrite one block file with ``damage(batch)`` applied to ``step``'s batch, its
    meta.json entry updated (a consistent file whose CRCs pass: only the ids are bad)."""
    path = directory / blocks_file(worker, epoch)
    with BlockReader(path) as reader:
        batches = list(reader)
        layers = reader.num_layers
    with BlockWriter(path, num_layers=layers, worker=worker, epoch=epoch) as out:
        for item in batches:
            if item.step == step:
                damage(item.batch)
            out.write(item.step, item.batch, item.local_mask)
    meta = json.loads((directory / "meta.json").read_text())
    meta["files"][path.name].update(sha256=sha256_file(path), bytes=path.stat().st_size)
    (directory / "meta.json").write_text(json.dumps(meta))


def test_a_truncated_frequency_file_is_a_block_file_error_naming_it(copy):
    _truncate(copy / frequency_file(1, 0))
    with pytest.raises(BlockFileError, match=r"frequency/w1_e0\.npz: truncated or corrupt"):
        frequencies(copy, 1, 0)
    with pytest.raises(PresampleError, match="rule presample"):  # also a PresampleError
        frequencies(copy, 1, 0)


@pytest.mark.parametrize("name", [blocks_file(1, 2), frequency_file(1, 1)])
def test_a_truncated_file_of_the_worker_fails_at_setup(copy, name):
    _truncate(copy / name)
    check_presample(copy, **_settings(copy), worker=0)  # worker 0's files are intact
    with pytest.raises(BlockFileError, match=rf"{name.replace('.', chr(92) + '.')}: \d+ "
                                             r"bytes, meta\.json records \d+"):
        check_presample(copy, **_settings(copy), worker=1)


def test_node_ids_out_of_range_in_a_record_are_named(copy):
    def bad_input(batch):
        batch.input_nodes[-1] = 10**6

    _rewrite(copy, 0, 1, 2, bad_input)
    with open_presampled(copy, 0, 1) as reader:
        reader.read(1)  # the other records are fine
        with pytest.raises(BlockFileError, match=r"w0_e1\.blocks: record 2: .*input node "
                                                 r"ids outside \[0, 600\): .*max 1000000"):
            reader.read(2)


def test_a_block_csr_out_of_range_is_named(copy):
    def bad_edge(batch):
        batch.blocks[0].indices[0] = batch.blocks[0].num_src + 5

    _rewrite(copy, 1, 0, 0, bad_edge)
    with pytest.raises(BlockFileError, match=r"w1_e0\.blocks: record 0: .*block 0 indices "
                                             r"outside"):
        open_presampled(copy, 1, 0).read(0)


def test_a_real_run_names_the_corrupt_frequency_file(copy, tiny_inputs, tmp_path,
                                                     run_on_tiny, make_spec):
    """This used to end in an uncaught zipfile.BadZipFile. Both workers' files are
    damaged: the one that fails first must not be reported as a peer's lost connection."""
    for worker in (0, 1):
        path = copy / frequency_file(worker, 0)
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0xFF  # same size: found when read, not at setup
        path.write_bytes(bytes(data))
    spec = make_spec(system="rapidgnn", epochs=1, system_options={"n_hot": 50})
    with pytest.raises(CommgnnError, match=r"w[01]_e0\.npz: truncated or corrupt") as info:
        run_on_tiny(tmp_path, tiny_inputs, spec, presample=copy)
    assert "BadZipFile:" not in str(info.value).split("truncated or corrupt")[0]
