"""Words for settings that every figure, caption and ledger row names the same way: the
reach of a run's congestion (which traffic classes it delayed: the summary's
``congestion_reach``) and BGL's cache (``cache_rows``: GreenDyGNN's BGL has none, the FIFO
cache is the measured option). Light (pandas only): figure jobs import it."""

from __future__ import annotations

import math

import pandas as pd

#: A runs table from before the ``congestion_reach`` column: the reach of a congested run
#: is not known (the default reach changed; see ``commgnn.network.congestion``).
UNKNOWN = "unknown"


def reach_column(runs: pd.DataFrame) -> pd.Series:
    """Each run's ``congestion_reach``; where a runs table does not record it (an older
    one): ``none`` for a run without congestion, else :data:`UNKNOWN`."""
    clean = (runs["congestion"].fillna("none") == "none") if "congestion" in runs else \
        pd.Series(False, index=runs.index)
    fallback = clean.map({True: "none", False: UNKNOWN})
    if "congestion_reach" not in runs:
        return fallback
    recorded = runs["congestion_reach"]
    return recorded.where(recorded.notna() & (recorded.astype(str) != ""), fallback)


def reach_words(reach) -> str:
    """A reach as it follows a congestion's name: `` on all traffic``, `` on fetch+sampling
    traffic``, `` (reach not recorded)`` (:data:`UNKNOWN`), "" (``none``: no congestion)."""
    if reach is None or (isinstance(reach, float) and math.isnan(reach)) or reach == UNKNOWN:
        return " (reach not recorded)"
    if reach == "none":
        return ""
    return f" on {reach} traffic"


def reaches(runs: pd.DataFrame) -> list[str]:
    """The reaches of the congested runs among ``runs`` (sorted; empty: none congested)."""
    return sorted({str(r) for r in reach_column(runs) if str(r) != "none"})


def bgl_cache(cache_rows) -> str:
    """BGL's cache setting in words: ``no cache`` (0, GreenDyGNN's BGL: a 0 % hit rate in
    its Fig. 7), ``FIFO 20,000 rows``; ``cache not recorded`` when unknown."""
    if cache_rows is None or (isinstance(cache_rows, float) and math.isnan(cache_rows)):
        return "cache not recorded"
    try:
        rows = int(float(cache_rows))
    except (TypeError, ValueError):
        return f"cache {cache_rows}"
    return "no cache" if rows == 0 else f"FIFO {rows:,} rows"


def bgl_label(name: str, cache_rows) -> str:
    """``name`` with BGL's cache setting: ``BGL (no cache)``, ``BGL (FIFO 20,000 rows)``."""
    return f"{name} ({bgl_cache(cache_rows)})"
