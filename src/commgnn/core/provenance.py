"""Fingerprints of the pipeline's artefacts, and the checks that a derived artefact was
made from the inputs given now.

The chain is dataset → partition → presample → calibration → policy. Every derived
artefact records the fingerprints of what it was derived from (``inputs``, or the
``fingerprint`` of its ``dataset``/``partition`` entry), and every loader that is given
those inputs compares: an artefact made from other inputs, or one recording none (made
before commgnn recorded provenance), is a :class:`~commgnn.core.errors.StaleInputError` naming
it, the input that differs and how to rebuild it; a corrupt one is an InputError with the
same hint (:func:`hinted`).

A fingerprint is the SHA-256 of canonical JSON (:func:`digest`) of an artefact's own
checksums, which its writer records anyway: a dataset's is that of its ``meta.json``
per-file SHA-256 entries, a partition's that of its dataset's fingerprint, spec and file
checksums, and so on. Checking provenance never rehashes a big array.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from commgnn.core.errors import InputError, StaleInputError

#: The Snakemake rule that builds each kind of artefact.
RULES = {"dataset": "dataset", "partition": "partition", "presample": "presample",
         "calibration": "calibrate", "policy": "train_policy"}
#: The file that marks a directory as an artefact of each kind (no hint to delete a
#: directory that is not one, e.g. a wrong path).
MARKERS = {"dataset": "meta.json", "partition": "meta.json", "presample": "meta.json",
           "calibration": "calibration.json", "policy": "policy.pt"}


def digest(data: Any) -> str:
    """SHA-256 (hex) of ``data`` as canonical JSON (sorted keys, no spaces, strict)."""
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def short(fingerprint: str | None) -> str:
    """The first 12 hex digits of a fingerprint, for messages."""
    return str(fingerprint)[:12] if fingerprint else "none"


def rebuild_hint(path: str | Path, kind: str) -> str:
    """How to rebuild an artefact of ``kind`` at ``path``."""
    return f"delete {path} and rerun snakemake (rule {RULES[kind]})"


@contextlib.contextmanager
def hinted(path: str | Path, kind: str) -> Iterator[None]:
    """Append :func:`rebuild_hint` to an :class:`InputError` raised inside (same class)
    when ``path`` is an artefact of ``kind`` (holds its marker file: corrupt, not absent)."""
    try:
        yield
    except InputError as exc:
        hint = rebuild_hint(path, kind)
        if hint in str(exc) or not (Path(path) / MARKERS[kind]).is_file():
            raise
        raise type(exc)(f"{exc}; {hint}") from exc


def check_inputs(artefact: str | Path, kind: str, recorded: Mapping[str, Any] | None,
                 expected: Mapping[str, tuple[str, str]], hint: str | None = None) -> None:
    """Refuse ``artefact`` (of ``kind``) unless ``recorded`` (input name → fingerprint)
    holds every ``expected`` input (name → (fingerprint now, where it comes from)).

    Raises :class:`StaleInputError` naming the artefact, the input and how to rebuild."""
    hint = hint or rebuild_hint(artefact, kind)
    recorded = recorded if isinstance(recorded, Mapping) else {}
    for name, (now, where) in expected.items():
        made_from = recorded.get(name)
        if not made_from:
            raise StaleInputError(f"{artefact}: records no {name} fingerprint (made before "
                                  f"commgnn recorded provenance); {hint}")
        if made_from != now:
            raise StaleInputError(f"{artefact}: stale: made from {name} {short(made_from)}, "
                                  f"but {where} is {short(now)}; {hint}")
