"""The runs table of the Grappa figures: each run's variant name."""

from __future__ import annotations

import pandas as pd

from commgnn.systems.grappa.figures.grappa_runs import variant


def test_variant_names_strict_isolation_apart_from_the_papers_halo():
    """A Grappa run without halo (``chunk_halo_hops: 0``) is ``Grappa-iso…``; with the k-hop
    halo (``depth`` or a depth by hand) it is Grappa; runs from before the option was
    renamed (no such column) keep their names."""
    row = {"base_system": "grappa", "partitioning": "chunk4", "option_estimator": "none"}
    assert variant(pd.Series({**row, "option_chunk_halo_hops": 0})) == "Grappa-iso-UW"
    assert variant(pd.Series({**row, "option_chunk_halo_hops": "depth"})) == "Grappa-UW"
    assert variant(pd.Series({**row, "option_chunk_halo_hops": 2})) == "Grappa-UW"
    assert variant(pd.Series(row)) == "Grappa-UW"
