"""The package's layers hold: no module imports from a layer above its own, and no import
circle, counting every import statement (function-level and ``TYPE_CHECKING`` ones too)."""

from __future__ import annotations

from pathlib import Path

import pytest

import commgnn
from commgnn.core.layers import (
    LAYERS,
    circles,
    import_graph,
    layer_of,
    uncommented_deferred_imports,
    upward_imports,
)

SRC = Path(commgnn.__file__).parent


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(SRC)


def test_every_module_is_in_a_layer(graph):
    assert {LAYERS[layer_of(m)][0] for m in graph} == {name for name, _ in LAYERS}


def test_no_module_imports_from_a_layer_above_its_own(graph):
    assert upward_imports(graph) == []


def test_no_import_circle(graph):
    assert circles(graph) == []


def test_the_checks_find_an_upward_import_and_a_circle():
    """The checks on a graph built by hand: they can fail."""
    toy = {"commgnn.core.spec": {"commgnn.train.loop"},
           "commgnn.train.loop": {"commgnn.train.system"},
           "commgnn.train.system": {"commgnn.train.loop", "commgnn.core.spec"}}
    assert upward_imports(toy) == [("commgnn.core.spec", "commgnn.train.loop")]
    assert circles(toy) == [["commgnn.core.spec", "commgnn.train.loop",
                             "commgnn.train.system"]]


def test_the_graph_counts_function_level_imports(tmp_path):
    package = tmp_path / "commgnn"
    (package / "core").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "core" / "__init__.py").write_text("")
    (package / "core" / "a.py").write_text("def f():\n    from commgnn.core import b\n")
    (package / "core" / "b.py").write_text("from typing import TYPE_CHECKING\n"
                                           "if TYPE_CHECKING:\n    from commgnn.core.a import f\n")
    assert import_graph(package) == {"commgnn": set(), "commgnn.core": set(),
                                     "commgnn.core.a": {"commgnn.core.b"},
                                     "commgnn.core.b": {"commgnn.core.a"}}


def test_every_deferred_import_says_why():
    assert uncommented_deferred_imports(SRC) == []


def test_a_deferred_import_without_a_comment_is_found(tmp_path):
    package = tmp_path / "commgnn"
    package.mkdir()
    (package / "a.py").write_text("def f():\n    import json\n\n\n"
                                  "def g():\n    import torch  # deferred: heavy\n")
    assert uncommented_deferred_imports(package) == ["commgnn.a:2"]
