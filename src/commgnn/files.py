"""Small file helpers shared by every writer and reader of pipeline outputs: directories
and JSON files written atomically, JSON objects read with errors that name the file."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from commgnn.errors import InputError


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


def write_json_atomic(path: Path, data: dict) -> None:
    """Write ``data`` as indented, key-sorted JSON via a temporary file and a rename."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


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
