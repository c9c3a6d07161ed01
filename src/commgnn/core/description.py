"""What a system is, without its runtime: name, colour, figure labels, options, the
pipeline products it needs, the partition methods it takes and the figures it declares.

Each system package says it in its ``__init__.py`` (``DESCRIPTION``), which imports no
torch: the report and the workflow read it there (:func:`commgnn.catalog.
system_descriptions`); the system's class (``system.py``) takes its declarations from it
(:class:`commgnn.train.system.System`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from commgnn.core.config import validate
from commgnn.core.errors import ConfigError

#: The entry-point group through which an installed distribution adds a system (a module, or
#: a :class:`~commgnn.train.system.System` subclass).
ENTRY_POINT_GROUP = "commgnn.systems"


@dataclass(frozen=True)
class SystemDescription:
    """A system's declarations.

    ``options``: JSON-schema ``properties`` of its own options (each with its ``default``
    where it has one); ``base``: the description whose options it extends (a system built
    on another's, e.g. ``bgl`` on ``default``). ``colour``: one of Paul Tol's muted palette
    (``report/palette.py``; None: one by its name). ``figure_labels``: a regular expression
    matching, at its start, how figures label a series it ran (its own name always counts).
    ``needs``: pipeline inputs its runs always read (:data:`~commgnn.core.declarations.
    PIPELINE_INPUTS`); ``figures``: ``{figure: input kinds}``, built whenever the experiment
    matrix runs it. ``uses_network``: False where its traffic is free by definition;
    ``external``: it trains outside commgnn's loop, in another framework. ``renamed``:
    ``{old option: new}``, refused with a line naming the new name. ``products`` and
    ``figure_products``: ``{name: what it is}`` of the pipeline inputs (for ``needs``) and
    the figure input kinds (for ``figures``) its own steps make — its package's
    ``rules.smk`` builds them and adds their paths to the workflow's
    ``PIPELINE_INPUT_PATHS`` and ``FIGURE_INPUT_PATHS``.
    """

    name: str
    colour: str | None = None
    figure_labels: str | None = None
    options: Mapping[str, dict] = field(default_factory=dict)
    base: SystemDescription | None = None
    needs: tuple[str, ...] = ()
    partition_methods: tuple[str, ...] = ("metis", "random")
    figures: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    uses_network: bool = True
    external: bool = False
    renamed: Mapping[str, str] = field(default_factory=dict)
    products: Mapping[str, str] = field(default_factory=dict)
    figure_products: Mapping[str, str] = field(default_factory=dict)

    def option_properties(self) -> dict[str, dict]:
        """Its option schemas, its base's first (its own override them)."""
        inherited = self.base.option_properties() if self.base is not None else {}
        return {**inherited, **self.options}

    def option_schema(self) -> dict:
        """JSON schema of a ``systems.<name>`` config entry for this system."""
        return {"type": "object", "additionalProperties": False,
                "properties": {"system": {"const": self.name}, **self.option_properties()}}

    def resolve_options(self, options: dict, where: str | None = None) -> dict:
        """``options`` validated (ConfigError naming ``where.<key>``), defaults filled in;
        without the ``system`` key."""
        where = where or f"systems.{self.name}"
        old = sorted(set(options) & set(self.renamed))
        if old:
            raise ConfigError(f"{where}.{old[0]}: renamed {self.renamed[old[0]]!r}")
        validate({**options, "system": self.name}, self.option_schema(), prefix=where)
        resolved = {key: prop["default"] for key, prop in self.option_properties().items()
                    if "default" in prop}
        resolved.update({k: v for k, v in options.items() if k != "system"})
        return resolved
