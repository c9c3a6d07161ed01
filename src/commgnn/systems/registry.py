"""Where systems are found, and the config checks their declarations drive.

Discovery: the ``system`` module of every package under ``commgnn.systems`` is imported, then every
``commgnn.systems`` entry point (a module, or a :class:`~commgnn.train.system.System`
subclass) of the installed distributions — how a system outside this package is added.
Defining a ``System`` subclass with a ``name`` registers it
(:data:`commgnn.train.system.SYSTEMS`); this module, above every system, imports them.
"""

from __future__ import annotations

import importlib
import pkgutil
from importlib import metadata
from typing import TYPE_CHECKING

import commgnn.systems as package
from commgnn.core.config import ConfigError
from commgnn.core.description import ENTRY_POINT_GROUP
from commgnn.train.system import SYSTEMS

if TYPE_CHECKING:
    from commgnn.train.system import System

_discovered = False


def discover() -> dict[str, type[System]]:
    """Import the built-in system modules and the entry points (once); the registry."""
    global _discovered
    if not _discovered:
        _discovered = True

        for module in pkgutil.iter_modules(package.__path__):
            if module.ispkg:  # systems/<name>/system.py holds the runtime
                importlib.import_module(f"commgnn.systems.{module.name}.system")
        for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
            entry.load()
    return SYSTEMS


def get_system(name: str) -> type[System]:
    systems = discover()
    try:
        return systems[name]
    except KeyError:
        raise ConfigError(f"unknown system {name!r}; known: {sorted(systems)}") from None


def resolve_system(config: dict, name: str, where: str) -> tuple[type[System], dict]:
    """The implementation and resolved options of the system called ``name`` in an
    experiment: a ``systems`` entry (a variant when it names another ``system``) or a
    registered system name."""
    entries = config.get("systems") or {}
    entry = dict(entries.get(name, {}))
    base = entry.get("system", name)
    systems = discover()
    if base not in systems:
        if name in entries:
            raise ConfigError(f"systems.{name}.system: unknown system {base!r}; known: "
                              f"{sorted(systems)}")
        raise ConfigError(f"{where}: {name!r} is neither a registered system "
                          f"{sorted(systems)} nor defined in 'systems'")
    cls = systems[base]
    return cls, {"system": base, **cls.resolve_options(entry, f"systems.{name}")}


def check_config(config: dict) -> None:
    """Check what the schema cannot: every ``systems`` entry's options against its
    system's declaration, every experiment's system names, and that each system accepts
    the partition methods it is paired with. Raises :class:`ConfigError`."""
    for name in config.get("systems") or {}:
        resolve_system(config, name, f"systems.{name}")
    partitionings = config.get("partitionings") or {}
    for index, experiment in enumerate(config.get("experiments") or []):
        for name in experiment.get("systems", []):
            cls, _ = resolve_system(config, name, f"experiments[{index}].systems")
            for part in experiment.get("partitionings", []):
                method = partitionings.get(part, {}).get("method")
                if method is not None and method not in cls.partition_methods:
                    raise ConfigError(
                        f"experiments[{index}]: system {name!r} does not train on "
                        f"partitioning {part!r} (method {method}); it accepts "
                        f"{', '.join(cls.partition_methods)}")
