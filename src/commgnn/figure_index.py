"""The figure index: every paper figure or table the pipeline regenerates, mapped to the
rule and the output file that hold it (the README's table is this one's text; a test
keeps them the same). ``make`` lists the figures a run built (its inputs are their
CSVs), each built or not applicable to the run's systems."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn import catalog
from commgnn.report.figure_tables import not_applicable_reason, read_figure_table
from commgnn.report.figures.plotting import save_table

#: module -> (paper, the paper's figure or table, what it shows): every paper's figures
#: (``systems/<paper>/figures/__init__.py``), then the figures across systems.
INDEX = catalog.INDEX
SHARED = ("compare", "claims")


def rule_of(module: str) -> str:
    return module if module in SHARED else "system_figure"


def table(modules: list[str] | None = None, results: str = "results") -> pd.DataFrame:
    """The index rows (of ``modules``, default all), with their rule and output."""
    names = list(INDEX) if modules is None else [m for m in INDEX if m in modules]
    return pd.DataFrame([{"paper": INDEX[m][0], "figure": INDEX[m][1], "shows": INDEX[m][2],
                          "module": m, "rule": rule_of(m),
                          "output": f"{results}/figures/{m}.png"} for m in names])


def markdown() -> str:
    """The README's figure index."""
    lines = ["| paper | figure | shows | rule | output |", "|---|---|---|---|---|"]
    for _, r in table().iterrows():
        lines.append(f"| {r['paper']} | {r['figure']} | {r['shows']} | `{r['rule']}` | "
                     f"`{r['output']}` |")
    return "\n".join(lines)


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    """The index of the figures whose CSVs are ``inputs``, each with its status: built,
    or not applicable and why (:mod:`commgnn.report.figure_tables`)."""
    status = {}
    for path in map(Path, inputs):
        reason = not_applicable_reason(read_figure_table(path))
        status[path.stem] = "built" if reason is None else f"not applicable: {reason}"
    data = table(list(status), str(Path(out_png).parent.parent))
    data["status"] = data["module"].map(status)
    save_table(data[["paper", "figure", "shows", "rule", "output", "status"]], out_png,
               "Figure index: the papers' figures this run regenerated", "no figures",
               width=14)
    return data
