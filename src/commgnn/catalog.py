"""Every figure the pipeline can build, and where its module lives (the application layer:
it reads the systems' packages).

A paper's figures live in ``systems/<paper>/figures/<paper>_<what>.py`` and are listed,
with the paper's figure they regenerate, in that package's ``INDEX``; the figures across
systems are ``compare`` (:mod:`commgnn.report.figures.compare`), ``claims`` (the ledger,
:mod:`commgnn.ledger`) and ``figure_index`` (:mod:`commgnn.figure_index`).
"""

from __future__ import annotations

import importlib
from types import ModuleType

from commgnn.core.errors import ConfigError
from commgnn.systems.grappa.figures import INDEX as GRAPPA
from commgnn.systems.greendygnn.figures import INDEX as GREENDYGNN
from commgnn.systems.hopgnn.figures import INDEX as HOPGNN
from commgnn.systems.rapidgnn.figures import INDEX as RAPIDGNN

#: The figures across systems: module -> (paper, figure, what it shows).
ACROSS: dict[str, tuple[str, str, str]] = {
    "compare": ("—", "no paper has it", "every system side by side"),
    "claims": ("all four", "headline claims", "the claims ledger"),
}
#: module -> (paper, the paper's figure or table, what it shows), papers first.
INDEX: dict[str, tuple[str, str, str]] = {**RAPIDGNN, **GREENDYGNN, **GRAPPA, **HOPGNN,
                                          **ACROSS}
#: Every figure ``commgnn figure NAME`` builds.
FIGURES: tuple[str, ...] = (*INDEX, "figure_index")
#: Where the modules of the figures across systems are.
_MODULES = {"compare": "commgnn.report.figures.compare", "claims": "commgnn.ledger",
            "figure_index": "commgnn.figure_index"}


def figure_module_name(name: str) -> str:
    """The dotted module of figure ``name`` (:class:`ConfigError` for an unknown one)."""
    if name not in FIGURES:
        raise ConfigError(f"unknown figure {name!r}; known: {FIGURES}")
    if name in _MODULES:
        return _MODULES[name]
    paper = name.split("_", 1)[0]
    return f"commgnn.systems.{paper}.figures.{name}"


def figure_module(name: str) -> ModuleType:
    """The module of figure ``name``: ``make(inputs, out_png)`` and, optionally,
    ``runs_behind(spec)``."""
    return importlib.import_module(figure_module_name(name))
