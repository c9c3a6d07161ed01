"""The claims ledger (:mod:`commgnn.report.claims`): one row per headline claim of the
four papers — the claim, the paper's value, the workload we measured it on, our value ±
its spread, the verdict and its reason, the clock its runs were on, which traffic their
congestion delayed (its reach), where its energy came from, and the rule and output that
produced our value — drawn as a table (claim, values, verdict, reason, clock and reach)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from commgnn.report.claims import ledger
from commgnn.report.figures.plotting import save_table
from commgnn.systems.grappa import claims as claims_grappa
from commgnn.systems.greendygnn import claims as claims_greendygnn
from commgnn.systems.hopgnn import claims as claims_hopgnn
from commgnn.systems.rapidgnn import claims as claims_rapidgnn

CLAIMS = [*claims_rapidgnn.CLAIMS, *claims_greendygnn.CLAIMS, *claims_grappa.CLAIMS,
          *claims_hopgnn.CLAIMS]
#: The figure tables the claims read (the workflow passes those it builds).
READS = tuple(sorted({claim.figure for claim in CLAIMS}))


def _number(value: float) -> str:
    return "" if pd.isna(value) else f"{value:.3g}"


def make(inputs: list[Path], out_png: Path) -> pd.DataFrame:
    data = ledger(CLAIMS, inputs)
    shown = pd.DataFrame({
        "claim": data["id"], "paper": data["paper_value"],
        "ours": [_number(v) + ("" if pd.isna(s) else f" ± {s:.2g}")
                 for v, s in zip(data["our_value"], data["our_spread"], strict=True)],
        "verdict": data["verdict"], "reason": data["reason"].str.slice(0, 70),
        "clock": data["clock"], "reach": data["reach"]})
    save_table(shown, out_png, "Claims ledger: the papers' headline claims on this substrate",
               "no claims", width=16)
    return data
