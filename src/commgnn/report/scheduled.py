"""Which figures a config builds: those its systems declare whose inputs it makes.

The workflow (``workflow/rules/common.smk``) and the report tests call these, so a test of
one system's report stage schedules exactly what a config running that system alone would.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence


def declared_figures(base_systems: Iterable[str],
                     built: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """``{figure: input kinds}`` of every figure the systems declare (``System.figures``,
    first declaration first) whose every input kind has a path in ``built`` (kind → the
    paths the config makes: a figure reading GreenDyGNN's calibrations is not scheduled
    for a config with no ``controller: dqn`` run)."""
    from commgnn.systems.registry import get_system

    figures: dict[str, tuple[str, ...]] = {}
    for system in base_systems:
        for name, kinds in get_system(system).figures.items():
            figures.setdefault(name, tuple(kinds))
    return {name: kinds for name, kinds in figures.items()
            if all(built.get(kind) for kind in kinds)}


def claims_reads(figures: Iterable[str]) -> list[str]:
    """The figure tables the claims ledger reads among ``figures`` and the comparison
    (always built where anything ran)."""
    from commgnn.ledger import READS

    built = set(figures)
    return [name for name in READS if name in built or name == "compare"]
