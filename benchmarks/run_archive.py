"""Keep a multi-session benchmark's run records in the repository, and put them back.

A campaign that outlives one session (issues 44 and 45 run for days on this host) loses its
``results/`` tree whenever the machine is fresh, while its collectors read the run
directories. ``save`` copies what the collectors and ``commgnn runs-table`` read — each run's
``summary.json``, ``epochs.jsonl`` and ``steps_w<rank>.jsonl``, or every file of another
directory (a GreenDyGNN control directory: calibration, validation, policy), each ``.jsonl``
gzipped — to ``benchmarks/runs/<results dir name>/`` under the
same relative paths; ``restore`` writes them back byte for byte, newer than the setup outputs
a fresh session regenerates, so Snakemake (``--rerun-triggers mtime``) keeps them:

    python benchmarks/run_archive.py save results/bench-x results/bench-x/runs/dgl/...
    python benchmarks/run_archive.py restore benchmarks/runs/bench-x results/bench-x

A run without ``summary.json`` (unfinished) is refused, naming it; nothing is half-written.
"""

from __future__ import annotations

import argparse
import gzip
import os
import shutil
import sys
from pathlib import Path

ARCHIVE_ROOT = Path(__file__).parent / "runs"
RUN_FILES = ("summary.json", "epochs.jsonl")


def _members(directory: Path) -> list[Path]:
    """The files of a run or control directory that are archived (relative to it)."""
    if (directory / "summary.json").is_file():
        names = [Path(n) for n in RUN_FILES if (directory / n).is_file()]
        return names + sorted(p.relative_to(directory) for p in directory.glob("steps_w*.jsonl"))
    if directory.name in {"calibration", "validation", "policy"} and directory.is_dir():
        return sorted(p.relative_to(directory) for p in directory.rglob("*") if p.is_file())
    raise SystemExit(f"{directory}: no summary.json (an unfinished run?) and not a control "
                     "directory (calibration, validation, policy)")


def save(results: Path, directories: list[Path], archive_root: Path = ARCHIVE_ROOT) -> list[Path]:
    """Archive ``directories`` (each under ``results``); returns the files written."""
    plan: list[tuple[Path, Path]] = []
    for directory in directories:
        try:
            relative = directory.resolve().relative_to(results.resolve())
        except ValueError:
            raise SystemExit(f"{directory}: not under the results directory {results}") from None
        for member in _members(directory):
            target = archive_root / results.name / relative / member
            if member.suffix == ".jsonl":
                target = target.with_name(target.name + ".gz")
            plan.append((directory / member, target))
    for source, target in plan:
        _copy(source, target, pack=target.suffix == ".gz")
    return [target for _, target in plan]


def _copy(source: Path, target: Path, pack: bool = False, unpack: bool = False) -> None:
    """``source`` to ``target`` (gzipped without a time stamp, or gunzipped), through a
    ``.partial`` file renamed into place: never a half-written target."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    if pack or unpack:
        with (gzip.open(source, "rb") if unpack else source.open("rb")) as raw, \
                (gzip.GzipFile(partial, "wb", mtime=0) if pack else partial.open("wb")) as out:
            shutil.copyfileobj(raw, out)
    else:
        shutil.copyfile(source, partial)
    os.replace(partial, target)


def restore(archive: Path, results: Path) -> list[Path]:
    """Write every archived file back under ``results``; returns the files written."""
    if not archive.is_dir():
        raise SystemExit(f"{archive}: no archive directory")
    written = []
    for packed in sorted(p for p in archive.rglob("*") if p.is_file()):
        target = results / packed.relative_to(archive)
        zipped = packed.suffix == ".gz"
        target = target.with_suffix("") if zipped else target
        _copy(packed, target, unpack=zipped)
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("save", help="archive run (or control) directories")
    p.add_argument("results", type=Path, help="the benchmark's results directory")
    p.add_argument("directories", nargs="+", type=Path)
    p.add_argument("--archive-root", type=Path, default=ARCHIVE_ROOT)
    p = sub.add_parser("restore", help="write an archive back under a results directory")
    p.add_argument("archive", type=Path, help="benchmarks/runs/<results dir name>")
    p.add_argument("results", type=Path)
    args = parser.parse_args(argv)
    if args.command == "save":
        written = save(args.results, args.directories, args.archive_root)
    else:
        written = restore(args.archive, args.results)
    print(f"{len(written)} files written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
