"""The shared file writers: an OS error names the file it was writing (the CLI's one-line
``path: reason``), and an atomic JSON write that fails leaves the old file and no
temporary behind."""

from __future__ import annotations

import errno

import pandas as pd
import pytest

from commgnn.core.files import write_csv, write_json_atomic


def test_a_full_disk_names_the_json_file_and_keeps_the_old_one(small_disk):
    path = small_disk / "summary.json"
    write_json_atomic(path, {"ok": 1})
    with open(small_disk / "filler", "wb", buffering=0) as handle, pytest.raises(OSError):
        while True:
            handle.write(b"\0" * 65536)
    with pytest.raises(OSError) as caught:
        write_json_atomic(path, {"big": "x" * 200_000})
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.filename == str(path)
    assert path.read_text() == '{\n  "ok": 1\n}\n'
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler", "summary.json"]


def test_a_csv_that_cannot_be_written_is_named():
    with pytest.raises(OSError) as caught:  # pandas alone reports no file name
        write_csv(pd.DataFrame({"a": range(100_000)}), "/dev/full")
    assert caught.value.errno == errno.ENOSPC
    assert caught.value.filename == "/dev/full"
