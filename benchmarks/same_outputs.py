"""Two results directories of one config compared on everything that does not derive from
a timing: the bytes of every dataset, partition and presample, and every table's and
figure table's rows and columns, timing-derived columns aside.

For a change that must not change what the pipeline computes (a refactoring): run the
same config at the commit before and after into two results directories, then

    .venv/bin/python benchmarks/same_outputs.py BEFORE AFTER [--out report.md]

It exits 1 when a non-timing value differs. A column counts as timing-derived by its
name (:data:`TIMING`: times, energy, power, dilation, speedups, the host); rows of runs
whose work itself follows measured times (GreenDyGNN's calibrated controller, HopGNN's
merge search: :data:`TIMED_SYSTEMS`) are compared on their configuration columns only,
and the report says so.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path

import pandas as pd

#: Column names that derive from a timing (or name the host and code that ran).
TIMING = re.compile(
    r"(time|_s$|_s_|_ms$|_ms_|energy|_j$|_j_|joule|power|_w$|watt|dilation|probe|wall|rtt|"
    r"speedup|overhead|throughput|seconds|duration|fetch_wait|busy|stall|collective_wait|"
    r"reference_step|distance|commit|date|host|testbed|attempt|resumed|failed|meter|"
    r"^ours|^value|spread|verdict|reason|^shows_ours|delay_inferred|window|hit_rate|"
    r"elapsed|clock|started|setting|fit_|alpha|beta|gamma|error|reward|epsilon|loss|"
    # energy and ratios of times or energies; calibration fits of measured round trips
    r"_kj$|^vs_|_vs_|^mean$|^geomean$|measured|fitted|"
    # measured memory (peak RSS) and the prefetch queue's peak, which follows the race of
    # its producer and consumer
    r"rss|peak_mem|staged|device_feature)",
    re.IGNORECASE)
#: Columns of a table whose values come from other tables compared here (the ledger's
#: values are its claims' figure tables'): {file: columns}; their differing rows are listed.
DERIVED = {"claims.csv": ("our_value",)}
#: Files that record timings only.
TIMING_FILES = ("timing.json",)
#: Systems (base names) whose runs' work follows measured times: their count columns may
#: differ between two runs of one config.
TIMED_SYSTEMS = re.compile(r"^(greendygnn-dqn|greendygnn-heuristic|hopgnn)")
#: Columns that say what a run is (compared for every run).
CONFIG_COLUMNS = ("run_id", "system", "base_system", "dataset", "partitioning", "model",
                  "batch_size", "network", "seed", "workers", "epochs", "layers")


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def tree_digests(root: Path) -> dict[str, str]:
    """relative path → sha256 of every file under ``root``."""
    return {str(p.relative_to(root)): file_digest(p) for p in sorted(root.rglob("*"))
            if p.is_file()}


def compare_trees(before: Path, after: Path, kind: str) -> list[str]:
    """Problems: files of ``kind`` (datasets, partitions, presample) that differ."""
    problems = []
    a, b = tree_digests(before / kind), tree_digests(after / kind)
    for name in sorted(set(a) | set(b)):
        if name.endswith(("meta.json", ".log", *TIMING_FILES)):
            continue  # records the commit and timings; compared as tables elsewhere
        if a.get(name) != b.get(name):
            problems.append(f"{kind}/{name}: " + ("missing after" if name not in b else
                                                  "missing before" if name not in a else
                                                  "bytes differ"))
    return problems


def _equal(x: object, y: object) -> bool:
    if pd.isna(x) and pd.isna(y):
        return True
    try:
        return abs(float(x) - float(y)) <= 1e-9 * max(1.0, abs(float(x)))
    except (TypeError, ValueError):
        return str(x) == str(y)


def _relative(table: pd.DataFrame, results: Path) -> pd.DataFrame:
    """``table`` with every path under ``results`` written relative to it."""
    prefix = f"{results}/"
    return table.apply(lambda column: column.map(
        lambda v: v.replace(prefix, "") if isinstance(v, str) else v))


def compare_table(before: Path, after: Path, roots: tuple[Path, Path] | None = None,
                  renamed: dict[str, str] | None = None) -> tuple[list[str], list[str]]:
    """(problems, timing-derived columns that differ) of one CSV table; ``roots``: the two
    results directories (paths under them compared relative to them); ``renamed``:
    ``{column before: column after}``."""
    a, b = pd.read_csv(before), pd.read_csv(after)
    if roots is not None:
        a, b = _relative(a, roots[0]), _relative(b, roots[1])
    a = a.rename(columns=renamed or {})
    problems, timed = [], []
    if set(a.columns) != set(b.columns):
        problems.append(f"{after.name}: columns differ: {sorted(set(a.columns) ^ set(b.columns))}")
        return problems, timed
    b = b[list(a.columns)]
    if len(a) != len(b):
        problems.append(f"{after.name}: {len(a)} rows before, {len(b)} after")
        return problems, timed
    key = next((c for c in ("system", "entry", "id") if c in a.columns), None)
    system = a[key].astype(str) if key else pd.Series([""] * len(a))
    for column in a.columns:
        differing = [i for i in range(len(a)) if not _equal(a.at[i, column], b.at[i, column])]
        if not differing:
            continue
        if TIMING.search(str(column)) or (after.name in DERIVED and column in DERIVED[after.name]):
            timed.append(f"{column} ({len(differing)} rows"
                         + (f": {', '.join(system[differing])})" if key == "id" else ")"))
            continue
        untimed = [i for i in differing if column in CONFIG_COLUMNS
                   or not TIMED_SYSTEMS.match(system[i])]
        if untimed:
            i = untimed[0]
            problems.append(f"{after.name}: column {column!r} differs in {len(untimed)} "
                            f"row(s), e.g. row {i} ({system[i]}): {a.at[i, column]!r} → "
                            f"{b.at[i, column]!r}")
        else:
            timed.append(f"{column} (rows of {sorted(set(system[differing]))}, whose work "
                         "follows measured times)")
    return problems, timed


def compare(before: Path, after: Path, renamed: dict[str, str] | None = None
            ) -> tuple[list[str], list[str]]:
    problems: list[str] = []
    notes: list[str] = []
    for kind in ("datasets", "partitions", "presample"):
        problems += compare_trees(before, after, kind)
    tables = sorted({p.relative_to(before) for p in before.glob("tables/*.csv")} |
                    {p.relative_to(before) for p in before.glob("figures/*.csv")} |
                    {p.relative_to(after) for p in after.glob("tables/*.csv")} |
                    {p.relative_to(after) for p in after.glob("figures/*.csv")})
    for relative in tables:
        if not (before / relative).is_file() or not (after / relative).is_file():
            problems.append(f"{relative}: only " + ("after" if (after / relative).is_file()
                                                    else "before"))
            continue
        found, timed = compare_table(before / relative, after / relative, (before, after),
                                     renamed)
        problems += found
        if timed:
            notes.append(f"{relative}: timing-derived columns differ: {', '.join(map(str, timed))}")
    return problems, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--out", type=Path, help="write the report (Markdown) here too")
    parser.add_argument("--renamed", action="append", default=[], metavar="OLD=NEW",
                        help="a column renamed between the two (repeatable)")
    args = parser.parse_args(argv)
    renamed = dict(pair.split("=", 1) for pair in args.renamed)
    problems, notes = compare(args.before, args.after, renamed)
    lines = [f"# Same outputs: {args.before} vs {args.after}", "",
             *(f"Renamed: `{old}` → `{new}`" for old, new in renamed.items()), "",
             f"{len(problems)} non-timing difference(s)", ""]
    lines += [f"- {p}" for p in problems] + ["", "Timing-derived differences (expected):", ""]
    lines += [f"- {n}" for n in notes]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
