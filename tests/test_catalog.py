"""The figure catalogue: every figure found by name, with its caption beside it."""

from __future__ import annotations

import pytest

from commgnn import catalog
from commgnn.core.errors import ConfigError


def test_every_figure_has_its_module_and_each_papers_figure_its_caption():
    for name in catalog.FIGURES:
        assert callable(catalog.figure_module(name).make), name
        if name not in (*catalog.ACROSS, "figure_index"):
            assert catalog.figure_caption(name).strip(), name
            paper = name.split("_", 1)[0]
            assert catalog.figure_module_name(name) == \
                f"commgnn.systems.{paper}.figures.{name}"


def test_an_unknown_figure_is_refused_naming_it():
    with pytest.raises(ConfigError, match="unknown figure 'rapidgnn_fig99'"):
        catalog.figure_module("rapidgnn_fig99")
