"""The committed stand-ins table (benchmarks/results/standins.csv, made by
benchmarks/standins.py) meets the targets the stand-ins are held to: at full scale, METIS ÷
Random neighbour traffic within 25 % of Grappa Table 1's at 4 parts, GraphSAGE within 5
points of the published accuracy, sizes and degrees as published. Regenerating it with a
generator that misses one fails here."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

TABLE = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "standins.csv"
FULL_SCALE = ("arxiv-like", "reddit-like", "products-like", "uk-like", "in-like")


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return pd.read_csv(TABLE)


def _rows(table: pd.DataFrame, statistic: str) -> pd.DataFrame:
    return table[(table["statistic"] == statistic) & table["dataset"].isin(FULL_SCALE)]


def test_every_stand_in_is_in_the_table_at_full_scale(table):
    assert set(FULL_SCALE) <= set(table["dataset"])


@pytest.mark.parametrize("dataset", ["products-like", "reddit-like"])
def test_metis_cuts_the_traffic_as_grappa_table_1_says(table, dataset):
    row = _rows(table, "metis_random_traffic_4").set_index("dataset").loc[dataset]
    assert abs(row["measured"] / row["published"] - 1) <= 0.25, row


def test_graphsage_reaches_the_published_accuracy(table):
    rows = _rows(table, "sage_test_acc").dropna(subset=["published"])
    assert set(rows["dataset"]) == {"arxiv-like", "reddit-like", "products-like"}
    for _, row in rows.iterrows():
        assert abs(row["measured"] - row["published"]) <= 0.05, row.to_dict()


@pytest.mark.parametrize("statistic", ["nodes", "csr_entries", "feature_dim", "avg_degree"])
def test_sizes_and_degrees_are_the_published_ones(table, statistic):
    rows = _rows(table, statistic).dropna(subset=["published"])
    assert len(rows) == 5
    for _, row in rows.iterrows():
        assert row["measured"] == pytest.approx(row["published"], rel=0.02), row.to_dict()
