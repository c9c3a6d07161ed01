"""Small file helpers shared by every writer and reader of pipeline outputs: directories
and JSON files written atomically, JSON objects read with errors that name the file.

Every JSON the project writes is strict (RFC 8259): :func:`json_text` writes a
non-finite float (NaN, ±Infinity: "not applicable", e.g. the hit rate of a run without a
cache) as ``null`` and dumps with ``allow_nan=False``, so any strict parser reads it."""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from commgnn.core.errors import InputError


@contextlib.contextmanager
def atomic_directory(out_dir: str | Path) -> Iterator[Path]:
    """Yield a temporary sibling of ``out_dir`` to fill; on success it replaces ``out_dir``
    (world-readable, like a normal directory), on any error it is removed."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o755)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def finite_or_null(value: Any) -> Any:
    """``value`` with every non-finite float (NaN, ±inf) inside dicts, lists and tuples
    replaced by ``None`` (JSON ``null``); anything else unchanged."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite_or_null(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_or_null(v) for v in value]
    return value


def json_text(data: Any, indent: int | None = None) -> str:
    """Strict, key-sorted JSON of ``data``: non-finite floats become ``null``
    (:func:`finite_or_null`), and ``allow_nan=False`` refuses anything else non-standard."""
    return json.dumps(finite_or_null(data), indent=indent, sort_keys=True, allow_nan=False)


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and a rename. An OS error (a full
    disk …) names ``path`` and leaves no temporary file behind."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with naming(path):
            tmp.write_text(text)
            os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


def write_json_atomic(path: Path, data: dict) -> None:
    """Write ``data`` as indented, key-sorted strict JSON (:func:`json_text`) atomically
    (:func:`write_text_atomic`)."""
    write_text_atomic(path, json_text(data, indent=2) + "\n")


@contextlib.contextmanager
def naming(path: str | Path) -> Iterator[None]:
    """Re-raise an OS error from the block (a full disk, a read-only file system …) with
    ``path`` as its file name, so the one-line report says which file failed."""
    try:
        yield
    except OSError as exc:
        if exc.filename:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc


def write_csv(frame: Any, path: str | Path) -> None:
    """``frame`` (a pandas DataFrame) to ``path`` without its index; an OS error names
    ``path``."""
    with naming(path):
        frame.to_csv(path, index=False)


def read_json_object(path: Path, error: type[InputError] = InputError,
                     missing_hint: str = "") -> dict:
    """A JSON object from ``path``; ``error`` (naming the file) if missing, corrupt or not
    an object."""
    if not path.is_file():
        raise error(f"{path}: missing{missing_hint}")
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise error(f"{path}: corrupt JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise error(f"{path}: expected a JSON object")
    return data
