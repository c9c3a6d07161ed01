"""Every figure the pipeline can build, where its module lives, which of them a config
builds, and what the report is told of each system (the application layer: it reads the
systems' packages).

A paper's figures live in ``systems/<paper>/figures/<paper>_<what>.py`` (each with
``make(inputs, out_png)``, which writes the figure, PNG and PDF beside it, and returns the
plotted data that ``commgnn figure`` writes as CSV) and are listed, with the paper's
figure they regenerate, in that package's ``INDEX``; the figures across
systems are ``compare`` (:mod:`commgnn.report.figures.compare`), ``claims`` (the ledger,
:mod:`commgnn.ledger`) and ``figure_index`` (:mod:`commgnn.figure_index`).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping, Sequence
from importlib import metadata, resources
from pathlib import Path
from types import ModuleType

import commgnn.systems
from commgnn.core.description import ENTRY_POINT_GROUP, SystemDescription
from commgnn.core.errors import ConfigError
from commgnn.systems.grappa.figures import INDEX as GRAPPA
from commgnn.systems.greendygnn.figures import INDEX as GREENDYGNN
from commgnn.systems.hopgnn.figures import INDEX as HOPGNN
from commgnn.systems.rapidgnn.figures import INDEX as RAPIDGNN

#: Where the system packages are.
SYSTEMS_DIR = Path(commgnn.systems.__file__).parent
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


def figure_caption(name: str) -> str:
    """The caption of a paper's figure ``name``: ``<name>.rst`` beside its module (the
    figures across systems have theirs in ``workflow/report/``)."""
    package = figure_module_name(name).rpartition(".")[0]
    return resources.files(package).joinpath(f"{name}.rst").read_text()


def system_commands() -> list:
    """``add_commands(subparsers)`` of every system package with ``cli.py`` (its own
    ``commgnn`` subcommands), in name order."""
    return [importlib.import_module(f"commgnn.systems.{path.parent.name}.cli").add_commands
            for path in sorted(SYSTEMS_DIR.glob("*/cli.py"))]


def system_rule_fragments() -> list[str]:
    """Every system's own pipeline steps: ``systems/<name>/rules.smk`` (absolute paths, in
    name order), which the Snakefile includes after ``workflow/rules/common.smk``."""
    return [str(path) for path in sorted(SYSTEMS_DIR.glob("*/rules.smk"))]


def figure_module(name: str) -> ModuleType:
    """The module of figure ``name``: ``make(inputs, out_png)`` and, optionally,
    ``runs_behind(spec)``."""
    return importlib.import_module(figure_module_name(name))


def declared_figures(base_systems: Iterable[str],
                     built: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """``{figure: input kinds}`` of every figure the systems declare (``System.figures``,
    first declaration first) whose every input kind has a path in ``built`` (kind → the
    paths the config makes: a figure reading GreenDyGNN's calibrations is not scheduled
    for a config with no ``controller: dqn`` run)."""
    described = system_descriptions()
    figures: dict[str, tuple[str, ...]] = {}
    for system in base_systems:
        for name, kinds in described[system].figures.items():
            figures.setdefault(name, tuple(kinds))
    return {name: kinds for name, kinds in figures.items()
            if all(built.get(kind) for kind in kinds)}


def claims_reads(figures: Iterable[str]) -> list[str]:
    """The figure tables the claims ledger reads among ``figures`` and the comparison
    (always built where anything ran)."""
    from commgnn.ledger import READS  # deferred: imports pandas (the papers' claims)

    built = set(figures)
    return [name for name in READS if name in built or name == "compare"]


def system_descriptions() -> dict[str, SystemDescription]:
    """Every built-in system's description (the ``DESCRIPTION`` of each package under
    ``commgnn.systems``: no torch), plus those of the systems that entry points add (whose
    modules, and torch with them, are then imported)."""
    described = {}
    for path in sorted(SYSTEMS_DIR.glob("*/__init__.py")):
        description = importlib.import_module(f"commgnn.systems.{path.parent.name}").DESCRIPTION
        described[description.name] = description
    if metadata.entry_points(group=ENTRY_POINT_GROUP):
        from commgnn.systems.registry import discover  # deferred: imports torch

        described.update({name: cls.description for name, cls in discover().items()})
    return dict(sorted(described.items()))


def system_declarations() -> dict[str, dict]:
    """``{system: {"colour", "figure_labels"}}`` from every system's description: what
    :func:`commgnn.report.palette.use_declarations` takes."""
    return {name: {"colour": d.colour, "figure_labels": d.figure_labels}
            for name, d in system_descriptions().items()}
