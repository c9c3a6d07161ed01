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

The campaign's clock goes with its runs: ``save`` also archives every workload probe
(``dilation/<dataset>/<workload>.json``, the time dilation every run of that workload divides
by) and ``restore`` puts it back over the one a fresh machine's setup measured, so the
campaign keeps one clock per workload across machines (a fresh probe of one workload moved
f from 79.2 to 115.6 while the runs' own probes stayed in the campaign's range). ``save``
refuses a probe other than the archived one, or than the one the archived runs of its
workload divided by, naming it: runs on two clocks would mix.
The clock is per CPU: a probe measured on one CPU model says nothing of another's speed, and
a run whose workload probe came from another CPU divides by its own probe instead
(train/dilation.py), so a campaign that moved to another machine type would silently leave
its clock. The archive keeps the first CPU's probe under ``dilation/`` and each other CPU's
under ``clock-hosts/<cpu>-t<threads per worker>/dilation/``; ``restore`` puts back the one
measured on a CPU like this machine's (the one a worker of its workload gets here), keeps this
machine's own probe where the archive has none for its CPU, saying so, and ``save`` archives
that one as its CPU's clock.
For a campaign archived before its probe was, ``clock`` rebuilds it: the probe this machine
measured, with ``probe_s`` set to the one every archived run of that workload divided by
(their ``compute_step_probe_s``; refused when they disagree), saved into the archive:

    python benchmarks/run_archive.py clock benchmarks/runs/bench-x results/bench-x

Where the archived runs of a workload divided by different probes (a run made on a fresh
machine's clock before ``clock`` existed), ``clock`` refuses, naming the values and how many
runs used each, unless ``--probe-s KEY=SECONDS`` picks one of them for workload ``KEY``
(never a value no archived run used); the runs on the other clock stay as they are.

A run without ``summary.json`` (unfinished) is refused, naming it; nothing is half-written.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path

from commgnn.core.files import write_json_atomic
from commgnn.train.workload import host_identity

ARCHIVE_ROOT = Path(__file__).parent / "runs"
RUN_FILES = ("summary.json", "epochs.jsonl")
#: Under an archive: the clocks of the CPUs after its first (``dilation/`` holds the first's).
HOST_CLOCKS = "clock-hosts"


def _members(directory: Path) -> list[Path]:
    """The files of a run or control directory that are archived (relative to it)."""
    if (directory / "summary.json").is_file():
        names = [Path(n) for n in RUN_FILES if (directory / n).is_file()]
        return names + sorted(p.relative_to(directory) for p in directory.glob("steps_w*.jsonl"))
    if directory.name in {"calibration", "validation", "policy"} and directory.is_dir():
        return sorted(p.relative_to(directory) for p in directory.rglob("*") if p.is_file())
    raise SystemExit(f"{directory}: no summary.json (an unfinished run?) and not a control "
                     "directory (calibration, validation, policy)")


def _probes(results: Path) -> list[Path]:
    """The workload probes (the clock) under ``results``, relative to it."""
    return sorted(p.relative_to(results) for p in (results / "dilation").glob("*/*.json"))


def host_slug(host: dict) -> str:
    """A CPU's directory name under :data:`HOST_CLOCKS`: its model and threads per worker."""
    text = f"{host.get('cpu', 'unknown')}-t{host.get('threads_per_worker', 'x')}"
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _host_of(path: Path) -> dict | None:
    return json.loads(path.read_text()).get("host")


def _archived_clock(stored: Path, relative: Path, host: dict | None) -> Path:
    """Where ``stored`` keeps the clock of probe ``relative`` for CPU ``host``: ``dilation/``
    when it holds none yet or one of that CPU, else :data:`HOST_CLOCKS`."""
    first = stored / relative
    if not first.is_file() or _host_of(first) == host:
        return first
    return stored / HOST_CLOCKS / host_slug(host or {}) / relative


def _host_here(results: Path, relative: Path, archived: Path) -> dict | None:
    """This machine's CPU for probe ``relative``: what a worker of the archived probe's
    workload gets here, else (a probe without its worker count) the host its fresh probe
    records, else None."""
    workers = json.loads(archived.read_text()).get("workers")
    if workers:
        return host_identity(int(workers))
    fresh = results / relative
    return _host_of(fresh) if fresh.is_file() else None


def _clock_plan(results: Path, stored: Path) -> list[tuple[Path, Path]]:
    """The probes of ``results`` to archive under ``stored`` (each under its CPU's clock);
    SystemExit naming the first that differs from the archived one of its CPU, or (none
    archived for any CPU) from the probe the archived runs of its workload divided by: its
    runs would be on another clock."""
    plan = []
    recorded = _recorded_probes(stored)
    for relative in _probes(results):
        source = results / relative
        probe = json.loads(source.read_text())
        target = _archived_clock(stored, relative, probe.get("host"))
        if target.is_file():
            if target.read_bytes() != source.read_bytes():
                archived = json.loads(target.read_text()).get("probe_s")
                raise SystemExit(
                    f"{source}: probe_s {probe.get('probe_s')!r}, the archive's clock "
                    f"{target} has {archived!r}; restore the archive before running "
                    "(runs on two clocks would mix)")
            continue
        theirs = recorded.get(probe.get("workload_key"), set())
        # under HOST_CLOCKS: a new CPU's first clock (the archived runs used another CPU's)
        if target == stored / relative and theirs and theirs != {probe.get("probe_s")}:
            raise SystemExit(
                f"{source}: probe_s {probe.get('probe_s')!r}, the archived runs of its workload "
                f"divided by {sorted(theirs)}; run `clock` and restore before running "
                "(runs on two clocks would mix)")
        plan.append((source, target))
    return plan


def _recorded_probes(archive: Path) -> dict[str, set[float]]:
    """Workload key -> the workload probes (``compute_step_probe_s``) its archived runs
    divided by."""
    return {key: set(counts) for key, counts in _recorded_probe_counts(archive).items()}


def _recorded_probe_counts(archive: Path) -> dict[str, dict[float, int]]:
    """Workload key -> {workload probe its archived runs divided by: how many runs}."""
    recorded: dict[str, dict[float, int]] = {}
    for summary in archive.glob("runs/**/summary.json"):
        s = json.loads(summary.read_text())
        if s.get("workload_key") and s.get("time_dilation_source") == "workload probe":
            counts = recorded.setdefault(s["workload_key"], {})
            counts[s["compute_step_probe_s"]] = counts.get(s["compute_step_probe_s"], 0) + 1
    return recorded


def save(results: Path, directories: list[Path], archive_root: Path = ARCHIVE_ROOT) -> list[Path]:
    """Archive ``directories`` (each under ``results``) and the workload probes not yet
    archived; returns the files written."""
    plan: list[tuple[Path, Path]] = _clock_plan(results, archive_root / results.name)
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
    """Write every archived file back under ``results``; returns the files written.

    Once all are written, each file gets a modification time 1 µs after the one before it,
    in the order written (the clock, then the sorted paths: a calibration before the policy
    trained on it, control before runs), and so do the directories above it up to
    ``results`` and the ``.snakemake_timestamp`` Snakemake keeps in a directory output it
    made (it reads a directory output's time from that file, else from the directory);
    Snakemake's benchmark records under ``results/benchmarks`` come last. Snakemake
    (``--rerun-triggers mtime``) counts a job's benchmark record among its outputs, so on a
    machine that ran the jobs before, a stale record or timestamp file older than the
    restored inputs reran a restored policy and every run trained on it; and the kernel's
    coarse file clock would give files written in one burst equal times."""
    if not archive.is_dir():
        raise SystemExit(f"{archive}: no archive directory")
    written = []
    # the clock first: every run and control file is then newer than the probe it used
    for relative in _probes(archive):
        clock_file = _archived_clock(archive, relative,
                                     _host_here(results, relative, archive / relative))
        if clock_file.is_file():
            _copy(clock_file, results / relative)
            written.append(results / relative)
        else:
            print(f"{results / relative}: the archive's clock of this workload was measured "
                  f"on {_host_of(archive / relative)}, not on this machine's CPU: keeping "
                  "this machine's probe (`save` archives it as this CPU's clock)",
                  file=sys.stderr)
    for packed in sorted(p for p in archive.rglob("*") if p.is_file()
                         and p.relative_to(archive).parts[0] not in {"dilation", HOST_CLOCKS}):
        target = results / packed.relative_to(archive)
        zipped = packed.suffix == ".gz"
        target = target.with_suffix("") if zipped else target
        _copy(packed, target, unpack=zipped)
        written.append(target)
    stamp = time.time_ns()
    for target in written:
        stamp += 1000
        for path in (target, *(results / d for d in target.relative_to(results).parents[:-1])):
            os.utime(path, ns=(stamp, stamp))
            marker = path / ".snakemake_timestamp"   # a directory output's time, where kept
            if path is not target and marker.is_file():
                os.utime(marker, ns=(stamp, stamp))
    stamp += 1000
    for record in (results / "benchmarks").rglob("*.tsv"):
        os.utime(record, ns=(stamp, stamp))
    return written


def clock(archive: Path, results: Path, chosen: dict[str, float] | None = None) -> list[Path]:
    """Rebuild and archive the clock of a campaign archived without it: each workload probe
    under ``results`` (measured on this machine) with ``probe_s`` set to the
    ``compute_step_probe_s`` that every archived run of its workload divided by, the
    measurement here kept as ``probe_s_measured_here``; written back under ``results`` and
    into ``archive``. A probe the archive has already is left as it is. When the runs of a
    workload disagree, ``chosen[workload key]`` picks one of their values (matched to 1e-9
    relative); without it, or with a value none of them used, SystemExit naming their values
    and counts. Returns the archive files written."""
    chosen = chosen or {}
    recorded = _recorded_probe_counts(archive)
    unknown = sorted(set(chosen) - set(recorded))
    if unknown:
        raise SystemExit(f"{archive}: --probe-s names workload {unknown[0]}, which no archived "
                         f"run used (archived: {sorted(recorded)})")
    written = []
    for relative in _probes(results):
        if (archive / relative).is_file():
            continue
        probe = json.loads((results / relative).read_text())
        key = probe.get("workload_key")
        counts = recorded.get(key, {})
        step = _pick_probe(archive, key, counts, chosen.get(key))
        if step is not None:
            source = "compute_step_probe_s of the archived runs"
            if len(counts) > 1:
                source = (f"compute_step_probe_s of {counts[step]} of the "
                          f"{sum(counts.values())} archived runs (chosen with --probe-s)")
            probe = {**probe, "probe_s_measured_here": probe["probe_s"], "probe_s": step,
                     "probe_s_source": source}
            write_json_atomic(results / relative, probe)
        _copy(results / relative, archive / relative)
        written.append(archive / relative)
    return written


def _pick_probe(archive: Path, key: str | None, counts: dict[float, int],
                wanted: float | None) -> float | None:
    """The probe the archived runs of workload ``key`` divided by (``wanted`` among several);
    None when no archived run used the workload; SystemExit when it is not one clock."""
    def listing() -> str:
        return ", ".join(f"{value!r} ({n} runs)" for value, n in sorted(counts.items()))
    if wanted is not None:
        match = [v for v in counts if abs(v - wanted) <= 1e-9 * max(abs(v), abs(wanted))]
        if not match:
            raise SystemExit(f"{archive}: --probe-s {key}={wanted!r} is no probe the runs of "
                             f"that workload divided by: {listing()}")
        return match[0]
    if len(counts) > 1:
        raise SystemExit(f"{archive}: the runs of workload {key} divided by different probes "
                         f"{listing()}: no one clock; pick one with --probe-s {key}=SECONDS")
    return next(iter(counts), None)


def _key_seconds(text: str) -> tuple[str, float]:
    """``KEY=SECONDS`` of ``--probe-s``."""
    key, sep, value = text.partition("=")
    try:
        if not sep or not key:
            raise ValueError
        return key, float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--probe-s {text!r}: expected KEY=SECONDS") from None


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
    p = sub.add_parser("clock", help="rebuild and archive the workload probes of an archive "
                                     "made without them (from its runs' records)")
    p.add_argument("archive", type=Path, help="benchmarks/runs/<results dir name>")
    p.add_argument("results", type=Path)
    p.add_argument("--probe-s", type=_key_seconds, action="append", default=[],
                   metavar="KEY=SECONDS", help="where a workload's archived runs used several "
                   "probes, the one to keep (repeatable, one per workload key)")
    args = parser.parse_args(argv)
    if args.command == "save":
        written = save(args.results, args.directories, args.archive_root)
    elif args.command == "clock":
        written = clock(args.archive, args.results, dict(args.probe_s))
    else:
        written = restore(args.archive, args.results)
    print(f"{len(written)} files written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
