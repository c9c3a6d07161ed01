"""A figure's CSV as the report reads it: its rows, or why the figure does not apply.

A figure whose runs lack what it needs (a system, a baseline beside it, a partitioning
method) raises :class:`commgnn.core.errors.NotApplicable`; ``commgnn figure`` then draws the
reason and writes the CSV as one ``not_applicable`` column holding it, so the jobs after
it (the claims ledger, the figure index) read why instead of failing on a missing or
empty table. Kept free of matplotlib and torch.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

#: The one column of a figure CSV written for a figure that does not apply.
NOT_APPLICABLE = "not_applicable"
#: Why a figure with no rows at all (no columns either) does not apply.
NO_ROWS = "the runs behind it give it no rows"


def not_applicable_table(reason: str) -> pd.DataFrame:
    """The CSV of a figure that does not apply, holding ``reason``."""
    return pd.DataFrame({NOT_APPLICABLE: [reason]})


def not_applicable_reason(table: pd.DataFrame) -> str | None:
    """Why the figure of ``table`` does not apply (None: it does)."""
    if list(table.columns) == [NOT_APPLICABLE]:
        return str(table[NOT_APPLICABLE].iloc[0]) if len(table) else NO_ROWS
    return None


def figure_table(data: pd.DataFrame) -> pd.DataFrame:
    """What ``commgnn figure`` writes for a figure's data: the data, or, for a frame
    with neither rows nor columns (nothing a reader could tell apart from a broken
    file), the not-applicable table."""
    if data.empty and len(data.columns) == 0:
        return not_applicable_table(NO_ROWS)
    return data


def read_figure_table(path: str | Path) -> pd.DataFrame:
    """A figure CSV (an empty file, as older runs wrote for a figure with nothing to show,
    reads as the not-applicable table)."""
    try:
        return pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return not_applicable_table(NO_ROWS)
