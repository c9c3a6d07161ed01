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


def test_the_systems_descriptions_are_read_without_torch():
    """The report and the workflow read every system's description from its package,
    without its runtime (and torch)."""
    import subprocess
    import sys

    script = ("import sys\n"
              "from commgnn.catalog import declared_figures, system_declarations\n"
              "names = sorted(system_declarations())\n"
              "figures = declared_figures(names, {'runs': ['x']})\n"
              "print(len(names), len(figures), 'torch' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=True)
    systems, figures, torch_loaded = done.stdout.split()
    assert int(systems) == 10 and int(figures) > 0 and torch_loaded == "False"


def test_each_system_class_declares_what_its_package_describes():
    from commgnn.systems.registry import discover
    from commgnn.train.system import DESCRIBED

    described = catalog.system_descriptions()
    classes = discover()
    assert len(described) == 10 and set(described) <= set(classes)  # (and tests' toys)
    for name in described:
        cls = classes[name]
        assert cls.description is described[name]
        for attribute in DESCRIBED:
            assert getattr(cls, attribute) == getattr(described[name], attribute), \
                (name, attribute)
        assert cls.option_properties() == described[name].option_properties(), name


def test_a_systems_rules_fragment_adds_the_products_its_description_declares():
    """What a system's own steps make, it declares (SystemDescription.products and
    figure_products) and its rules.smk adds to the workflow's paths — and nothing else."""
    import re
    from pathlib import Path

    fragments = {Path(p).parent.name: Path(p).parent for p in catalog.system_rule_fragments()}
    for name, described in catalog.system_descriptions().items():
        declared = {("PIPELINE", p) for p in described.products} | \
            {("FIGURE", k) for k in described.figure_products}
        text = "".join(f.read_text() for f in fragments[name].glob("*.smk")) \
            if name in fragments else ""
        added = set(re.findall(r'(PIPELINE|FIGURE)_INPUT_PATHS\["(\w+)"\] =', text))
        assert added == declared, name
    assert {"greendygnn", "distdgl"} <= set(fragments)
