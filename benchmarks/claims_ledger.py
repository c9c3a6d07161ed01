"""The claims ledger over every committed benchmark: for each benchmark's runs table
(``benchmarks/results/<name>_runs.csv``) the figures a runs table can draw are drawn anew
from it, the benchmark's committed figure tables (``<name>_figures/*.csv``, which need run
directories or partitions) are added, and the ledger judges every claim; a claim no
benchmark measures stays "not measured".

Usage: python benchmarks/claims_ledger.py [OUT_PREFIX]   (default benchmarks/results/claims_ledger)
Writes OUT_PREFIX.csv (every claim × benchmark) and OUT_PREFIX.md (the measured rows).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pandas as pd
import provenance

from commgnn.catalog import figure_module
from commgnn.core.errors import NotApplicable
from commgnn.core.testbed import TESTBED_SEPARATOR, apart_from_energy
from commgnn.ledger import CLAIMS, READS
from commgnn.report.claims import VERDICTS, ledger
from commgnn.systems.registry import discover

RESULTS = Path(__file__).parent / "results"


def markdown_cell(value: object) -> str:
    """``value`` as one Markdown table cell: a pooled testbed's separator (" | ") or any
    other pipe escaped, so a row keeps its columns."""
    return str(value).replace("|", "\\|")


def runs_figures() -> list[str]:
    """The figures the claims read that a runs table may be enough to draw (those that
    also read partition statistics draw without them where they can)."""
    names = {"compare"}
    for system in discover().values():
        names |= {f for f, inputs in system.figures.items()
                  if "runs" in inputs and set(inputs) <= {"runs", "partition_stats"}}
    return sorted(names & set(READS))


def declared_by() -> dict[str, set[str]]:
    """Each figure's systems: those that declare it (the pipeline draws it only where the
    matrix runs one of them)."""
    owners: dict[str, set[str]] = {}
    for name, system in discover().items():
        for figure in system.figures:
            owners.setdefault(figure, set()).add(name)
    return owners


def draw(runs: Path, work: Path) -> tuple[dict[str, Path], dict[str, str]]:
    """The figures a runs table draws, and those whose runs lack what they need (why): a
    figure none of whose systems ran, or one that says so (NotApplicable); any other
    failure of a figure is an error."""
    tables, not_applicable = {}, {}
    ran = set(pd.read_csv(runs)["base_system"])
    owners = declared_by()
    for figure in runs_figures():
        if figure in owners and not owners[figure] & ran:
            not_applicable[figure] = f"no {'/'.join(sorted(owners[figure]))} runs"
            continue
        module = figure_module(figure)
        try:
            data = module.make([runs], work / f"{figure}.png")
        except NotApplicable as exc:
            not_applicable[figure] = str(exc)
            continue
        tables[figure] = work / f"{figure}.csv"
        data.to_csv(tables[figure], index=False)
    return tables, not_applicable


def benchmark_ledger(name: str, work: Path, manifest: dict[str, dict]) -> pd.DataFrame:
    """The ledger of one benchmark (its runs table, if it has one, and its committed
    figures), one ledger per testbed its results were made on (never pooled), but for the
    energy model: results differing only in it are one ledger, whose energy claims are
    judged only on runs of one energy model (``provenance`` names every testbed behind)."""
    source = RESULTS / f"{name}_runs.csv"
    runs = None
    if source.is_file():
        runs = pd.read_csv(source)
        recorded = manifest[source.name]["testbed"]
        if "testbed" not in runs:
            runs["testbed"] = recorded
        runs["testbed"] = runs["testbed"].fillna(recorded)
    committed = {p: manifest[str(p.relative_to(RESULTS))]["testbed"]
                 for p in sorted((RESULTS / f"{name}_figures").glob("*.csv"))}
    # one ledger per testbed but for the energy model, which splits only the energy claims
    # (commgnn.report.claims.judge refuses those over runs of two energy models)
    groups = sorted({apart_from_energy(t) for t in
                     [*committed.values(), *([] if runs is None else runs["testbed"])]})
    frames = []
    for index, group in enumerate(groups):
        here = work / str(index)
        here.mkdir()
        tables, not_applicable, inputs, made_on = {}, {}, [], set()
        if runs is not None:
            mine = runs[runs["testbed"].map(apart_from_energy) == group]
            if len(mine):
                inputs = [here / "runs.csv"]  # figure modules find the runs table by its name
                mine.to_csv(inputs[0], index=False)
                tables, not_applicable = draw(inputs[0], here)
                made_on |= set(mine["testbed"])
        for path, made in committed.items():
            if apart_from_energy(made) == group:
                tables.setdefault(path.stem, path)
                not_applicable.pop(path.stem, None)
                made_on |= set(made.split(TESTBED_SEPARATOR))
        data = ledger(CLAIMS, [*inputs, *tables.values()], not_applicable)
        rel = {str(path): f"{name}: {path.name}" for path in tables.values()}
        frames.append(data.assign(benchmark=name,
                                  provenance=TESTBED_SEPARATOR.join(sorted(made_on)),
                                  output=data["output"].map(lambda o, rel=rel: rel.get(o, o))))
    return pd.concat(frames, ignore_index=True)


def benchmarks() -> list[str]:
    """Every benchmark with a runs table or committed figure tables."""
    names = {p.name.removesuffix("_runs.csv") for p in RESULTS.glob("*_runs.csv")}
    names |= {p.name.removesuffix("_figures") for p in RESULTS.glob("*_figures") if p.is_dir()}
    return sorted(names)


def main(out_prefix: Path) -> pd.DataFrame:
    manifest = provenance.load()
    frames = []
    for name in benchmarks():
        with tempfile.TemporaryDirectory() as tmp:
            frames.append(benchmark_ledger(name, Path(tmp), manifest))
    data = pd.concat(frames, ignore_index=True)
    data.to_csv(out_prefix.with_suffix(".csv"), index=False)
    measured = data[~data["verdict"].isin(("not measured", "not applicable"))].sort_values(
        ["paper", "id", "benchmark"])
    lines = ["# Claims ledger over the committed benchmarks", "",
             "Generated by `benchmarks/claims_ledger.py`; every claim × benchmark × testbed is "
             "in `claims_ledger.csv` (a claim no benchmark measures is listed at the end). "
             "Each benchmark is judged on its own testbed (`PROVENANCE.json`; results made "
             "before runs recorded one are \"unversioned\", named by the commit that made "
             "them) and never pooled with another's; \"by construction\" rows cannot come "
             "out otherwise and are not evidence.", "",
             "| claim | benchmark | paper | ours | geomean | verdict | reason | clock | "
             "testbed |", "|---|---|---|---|---|---|---|---|---|"]
    for _, r in measured.iterrows():
        ours = "" if pd.isna(r["our_value"]) else f"{r['our_value']:.3g}"
        if not pd.isna(r["our_spread"]):
            ours += f" ± {r['our_spread']:.2g}"
        geomean = "" if pd.isna(r["geomean"]) else f"{r['geomean']:.3g}"
        clock = "" if pd.isna(r["clock"]) else r["clock"]
        cells = (r["id"], r["benchmark"], r["paper_value"], ours, geomean, r["verdict"],
                 r["reason"], clock, r["provenance"])
        lines.append("| " + " | ".join(markdown_cell(c) for c in cells) + " |")
    never = sorted(set(data["id"]) - set(measured["id"]))
    lines += ["", "Not measured by any benchmark: " + (", ".join(never) or "none") + "."]
    counts = measured.drop_duplicates("id")  # not used for the verdict: one row per claim
    lines += ["", f"{len(counts)} of {data['id'].nunique()} claims measured by a benchmark.",
              "", "Verdicts over the measured claim × benchmark rows: " + ", ".join(
                  f"{verdict} {n}" for verdict, n in
                  measured["verdict"].value_counts().reindex(VERDICTS).dropna()
                  .astype(int).items()) + "."]
    out_prefix.with_suffix(".md").write_text("\n".join(lines) + "\n")
    if out_prefix.parent.resolve() == RESULTS.resolve():  # derived: its provenance anew
        provenance.update(refresh={out_prefix.with_suffix(x).name for x in (".csv", ".md")})
    return data


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS / "claims_ledger")
