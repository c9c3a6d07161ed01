"""The provenance of every committed result: ``benchmarks/results/PROVENANCE.json`` maps
each file under ``benchmarks/results/`` to what made it — the commit and the testbed
(:mod:`commgnn.core.testbed`: dataset generator, congestion model, time-dilation policy, energy
model).

A runs table whose runs recorded their testbed (a ``testbed`` column) gives it; the figure
tables a benchmark's collector draws from its runs (``<name>_figures/*``) are on the
testbed(s) of its runs table (``<name>_runs.csv``), whichever commit wrote them; any other
file made before results recorded one is "unversioned, made at <commit>" (the commit that
last wrote it, from git): such results pool with nothing made elsewhere. The claims ledger
(``benchmarks/claims_ledger.py``) reads the manifest and judges every testbed apart (but
for the energy model, which splits only the energy claims);
``tests/test_benchmark_provenance.py`` fails when a committed result has no entry.

    python benchmarks/provenance.py     # new files and files made anew, before committing

A file's entry is kept from run to run (its provenance is fixed when it is made) unless git
reports it changed or new in the working tree: a result collected anew (re-priced runs, say)
gets the commit and testbed of what made it now, so run this before committing it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd

from commgnn.core.testbed import TESTBED_SEPARATOR

RESULTS = Path(__file__).parent / "results"
MANIFEST = RESULTS / "PROVENANCE.json"


def result_files() -> list[str]:
    """Every committed result's path under ``results/`` (the manifest aside)."""
    return sorted(str(p.relative_to(RESULTS)) for p in RESULTS.rglob("*")
                  if p.is_file() and p != MANIFEST)



def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=RESULTS, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else ""


def last_commit(relative: str) -> str:
    """The commit that last wrote the file (the working tree's, marked, if uncommitted)."""
    path = RESULTS / relative
    if _git("status", "--porcelain", "--", str(path)):
        return (_git("describe", "--always", "--abbrev=10") or "unknown") + "+uncommitted"
    return _git("log", "-1", "--format=%h", "--abbrev=10", "--", str(path)) or "unknown"


def testbeds_of(relative: str, commit: str) -> str:
    """The testbed(s) of a result: a runs table's recorded ones, else unversioned."""
    path = RESULTS / relative
    if path.name.endswith("runs.csv"):
        runs = pd.read_csv(path)
        if "testbed" in runs and runs["testbed"].notna().all():
            return TESTBED_SEPARATOR.join(sorted(set(runs["testbed"])))
    return f"unversioned, made at {commit}"


def runs_table_of(relative: str) -> str | None:
    """The runs table a benchmark's figure file was drawn from (``<name>_figures/…`` →
    ``<name>_runs.csv``), if the benchmark has one."""
    parts = Path(relative).parts
    if len(parts) < 2 or not parts[0].endswith("_figures"):
        return None
    table = parts[0].removesuffix("_figures") + "_runs.csv"
    return table if (RESULTS / table).is_file() else None


def remade() -> set[str]:
    """The results git reports new or changed in the working tree (made anew since their
    last commit), relative to ``RESULTS``; none outside a git checkout."""
    listed = _git("ls-files", "--modified", "--others", "--exclude-standard", ".")
    return {name for name in listed.splitlines() if (RESULTS / name).is_file()}


def entry(relative: str) -> dict:
    commit = last_commit(relative)
    return {"commit": commit, "testbed": testbeds_of(relative, commit)}


def load() -> dict[str, dict]:
    return json.loads(MANIFEST.read_text()) if MANIFEST.is_file() else {}


def update(refresh: set[str] = frozenset()) -> dict[str, dict]:
    """Entries for new files and for ``refresh`` (files just made anew), the old ones kept
    (a result's provenance is fixed when it is made), gone files dropped."""
    known = load()
    manifest = {name: (entry(name) if name in refresh else known.get(name) or entry(name))
                for name in result_files()}
    for name, made in manifest.items():  # a benchmark's figures: its runs' testbed(s)
        table = runs_table_of(name)
        if table is not None:
            made["testbed"] = manifest[table]["testbed"]
    MANIFEST.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


if __name__ == "__main__":
    made = update(refresh=remade())
    print(f"{MANIFEST}: {len(made)} results")
