"""The figure index: every paper figure or table the pipeline regenerates, mapped to the
rule and the output file that hold it (the README's table is this one's text; a test
keeps them the same). ``make`` lists the figures a run built (its inputs are their
CSVs), each built or not applicable to the run's systems."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.report.figure_tables import not_applicable_reason, read_figure_table
from commgnn.report.figures.plotting import save_table

#: module -> (paper, the paper's figure or table, what it shows).
INDEX: dict[str, tuple[str, str, str]] = {
    "rapidgnn_fig3": ("RapidGNN", "Fig. 3", "frequency of remote feature accesses per node"),
    "rapidgnn_table2": ("RapidGNN", "Table 2",
                        "step and network speedup vs DGL-METIS, DGL-Random, GCN"),
    "rapidgnn_fig4": ("RapidGNN", "Fig. 4", "remote feature MB per step vs DGL-METIS"),
    "rapidgnn_fig5": ("RapidGNN", "Fig. 5", "remote fetches per epoch vs cache size"),
    "rapidgnn_fig6": ("RapidGNN", "Fig. 6", "epoch-time speedup at 3 and 4 machines"),
    "rapidgnn_fig7": ("RapidGNN", "Fig. 7", "GPU and CPU memory per worker"),
    "rapidgnn_table3": ("RapidGNN", "Table 3", "CPU and GPU energy, power, duration"),
    "rapidgnn_fig8": ("RapidGNN", "Fig. 8", "energy per epoch and mean power"),
    "rapidgnn_fig9": ("RapidGNN", "Fig. 9", "training accuracy per epoch"),
    "greendygnn_fig2": ("GreenDyGNN", "§II-C (Fig. 2 analogue)",
                        "energy vs rebuild window, clean and congested"),
    "greendygnn_fig4": ("GreenDyGNN", "Fig. 4", "energy under congestion by method"),
    "greendygnn_fig5": ("GreenDyGNN", "Fig. 5", "congestion overhead vs each clean run"),
    "greendygnn_fig7": ("GreenDyGNN", "Fig. 7", "rebuild window and hit rate per epoch"),
    "greendygnn_fig8": ("GreenDyGNN", "Fig. 8", "simulator validation error"),
    "greendygnn_fig9": ("GreenDyGNN", "Fig. 9", "cumulative energy under congestion"),
    "greendygnn_table1": ("GreenDyGNN", "Table I", "energy and epoch time under congestion"),
    "greendygnn_table2": ("GreenDyGNN", "Table II, Fig. 11",
                          "ablation: without RL, without cost weights"),
    "greendygnn_policy": ("GreenDyGNN", "§IV-C2", "DQN learning curve, simulated energy"),
    "greendygnn_calibration": ("GreenDyGNN", "Algorithm 1, §IV-B", "calibration fits"),
    "grappa_table1": ("Grappa", "Table 1", "neighbour traffic of an epoch, by partitions"),
    "grappa_table3": ("Grappa", "Table 3", "epoch time and accuracy by system and depth"),
    "grappa_table4": ("Grappa", "Table 4", "mean test accuracy by depth"),
    "grappa_table5": ("Grappa", "Table 5", "Cluster-GCN vs Grappa, GCN-2"),
    "grappa_table7": ("Grappa", "Table 7 (and Table 10)", "ablations' test accuracy"),
    "grappa_table8": ("Grappa", "Table 8", "partitioning and switching overheads"),
    "grappa_fig4": ("Grappa", "Fig. 4", "epoch time vs partitions"),
    "hopgnn_table1": ("HopGNN", "Table 1", "micrograph vs subgraph locality"),
    "hopgnn_fig11": ("HopGNN", "Figs. 11, 12", "epoch time of DGL, P3, Naive, HopGNN"),
    "hopgnn_fig13": ("HopGNN", "Fig. 13", "technique ladder +MG, +PG, All"),
    "hopgnn_fig14": ("HopGNN", "Fig. 14", "miss rates, DGL vs micrographs"),
    "hopgnn_fig16": ("HopGNN", "Fig. 16", "requests and rows removed by pre-gathering"),
    "hopgnn_table3": ("HopGNN", "Table 3", "accuracy of DGL, LO and HopGNN"),
    "compare": ("—", "no paper has it", "every system side by side"),
    "claims": ("all four", "headline claims", "the claims ledger"),
}
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
