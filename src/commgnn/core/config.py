"""Configuration loading and validation against the pipeline's JSON schema.

The same schema — the pipeline's (``commgnn/schemas/config.schema.yaml``, linked from
``workflow/schemas/``) with each system's part merged in (``systems/<name>/schema.yaml``:
GreenDyGNN's control section and congestion kinds; :func:`schema`) — is enforced by
Snakemake (:func:`schema_file`) and by every CLI entry point, so a bad config fails before
any work starts, with the offending key path in the message.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from commgnn.core.errors import ConfigError

if TYPE_CHECKING:  # imported where used: importing commgnn.core.spec stays quick
    import jsonschema

__all__ = ["ConfigError", "defaults", "listing", "load_config", "read_yaml", "schema",
           "schema_file", "subschema", "validate"]

#: libyaml's parser where PyYAML has it (same documents, a tenth of the time)
_SCHEMA_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@lru_cache(maxsize=1)
def schema() -> dict:
    """The pipeline config schema as a dict (parsed once; do not modify it): the
    pipeline's (``schemas/config.schema.yaml``) with every system's part merged in
    (:func:`system_schema_parts`)."""
    package = resources.files("commgnn")
    merged = yaml.load(package.joinpath("schemas/config.schema.yaml").read_text(),
                       Loader=_SCHEMA_LOADER)  # a SafeLoader
    for name, part in system_schema_parts():
        _merge_part(merged, part, f"systems/{name}/schema.yaml")
    return merged


def system_schema_parts() -> list[tuple[str, dict]]:
    """``(system, part)`` of every system package with a ``schema.yaml`` (its config
    sections, ``properties`` and ``$defs``, and the congestion kinds it adds,
    ``congestion_kinds``: each described by ``$defs.congestion_<kind>``), read as data."""
    systems = resources.files("commgnn").joinpath("systems")
    return [(entry.name, yaml.load(entry.joinpath("schema.yaml").read_text(),
                                   Loader=_SCHEMA_LOADER))
            for entry in sorted(systems.iterdir(), key=lambda e: e.name)
            if entry.is_dir() and entry.joinpath("schema.yaml").is_file()]


def _merge_part(merged: dict, part: dict, where: str) -> None:
    """Merge a system's schema ``part`` into ``merged`` (a name defined twice is an
    error naming ``where``)."""
    for section in ("properties", "$defs"):
        clash = sorted(set(part.get(section, {})) & set(merged[section]))
        if clash:
            raise ValueError(f"{where}: {section} {clash} are defined already")
        merged[section].update(part.get(section, {}))
    congestion = merged["$defs"]["congestion"]
    for kind in part.get("congestion_kinds", []):
        congestion["properties"]["kind"]["enum"].append(kind)
        congestion["allOf"].append({"if": {"properties": {"kind": {"const": kind}}},
                                    "then": {"$ref": f"#/$defs/congestion_{kind}"}})


def schema_file() -> Path:
    """The merged schema (:func:`schema`) as a file, for Snakemake's ``validate`` (which
    fills in its defaults): written once per content under the temporary directory."""
    text = json.dumps(schema(), sort_keys=True)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"commgnn-config-schema-{digest}.json"
    if not path.is_file():
        staging = path.with_name(f"{path.name}.{os.getpid()}")
        staging.write_text(text)
        os.replace(staging, path)
    return path


def subschema(name: str) -> dict:
    """A ``$defs`` entry of the config schema, resolvable on its own."""
    full = schema()
    return {"$defs": full["$defs"], **full["$defs"][name]}


def _resolve(node: dict, root: dict) -> dict:
    """``node``, or the schema its (local, ``#/...``) ``$ref`` points to, transitively."""
    seen = []
    while "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/") or ref in seen:
            raise ValueError(f"config schema: cannot follow $ref {ref!r}")
        seen.append(ref)
        node = root
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def defaults(where: str, schema_dict: dict | None = None, *,
             unset: Iterable[str] = ()) -> dict:
    """The defaults the schema writes for the properties of one object, in the schema's
    order: the ``default`` of each property that has one, as Snakemake fills them in (a
    ``default`` beside the property's ``$ref``; one inside the referenced schema is not
    the property's). A ``number`` property's integer default is a float (YAML writes
    ``60`` for 60.0). Properties named in ``unset`` (which must have no default) are
    included as None: settings whose absence is their default.

    ``where`` is a ``$defs`` name (``"training"``, ``"control_policy"``) or a dotted path
    of properties from the top level (``"cluster"``, ``"control.calibration"``; ``""``:
    the top level), following every ``$ref``. A fresh deep copy each call: the lists in
    it may be changed freely."""
    root = schema() if schema_dict is None else schema_dict
    if where in root.get("$defs", {}):
        node = _resolve(root["$defs"][where], root)
    else:
        node = _resolve(root, root)
        for name in where.split(".") if where else ():
            try:
                node = _resolve(node["properties"][name], root)
            except KeyError:
                raise ValueError(f"config schema: no object {where!r}") from None
    properties = node.get("properties", {})
    unset = set(unset)
    wrong = sorted(name for name in unset
                   if name not in properties or "default" in properties[name])
    if wrong:
        raise ValueError(f"config schema: {where}: unset names {wrong}, which are no "
                         f"properties without a default")
    out = {}
    for name, prop in properties.items():
        if "default" in prop:
            value = copy.deepcopy(prop["default"])
            if prop.get("type") == "number" and type(value) is int:
                value = float(value)
            out[name] = value
        elif name in unset:
            out[name] = None
    return out


def _key_path(prefix: str, error: jsonschema.ValidationError) -> str:
    parts = [prefix, *(str(p) for p in error.absolute_path)]
    return ".".join(part for part in parts if part) or "(top level)"


def _deepest(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """Descend into if/then/allOf context to the most specific error."""
    while error.context:
        error = max(error.context, key=lambda e: len(e.absolute_path))
    return error


def listing(problems: list[str]) -> str:
    """Problems as one message: the line itself when there is one, else a count and one
    indented line each."""
    unique = list(dict.fromkeys(problems))
    if len(unique) == 1:
        return unique[0]
    return f"{len(unique)} problems:\n  " + "\n  ".join(unique)


def validate(data: Any, schema_dict: dict | None = None, prefix: str = "config") -> None:
    """Validate ``data``; raise :class:`ConfigError` listing every problem by key path."""
    import jsonschema  # deferred: ~70 ms, which importing the run spec need not pay

    validator_cls = jsonschema.validators.validator_for(schema_dict or schema())
    validator = validator_cls(schema_dict or schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        raise ConfigError(listing([f"{_key_path(prefix, err)}: {err.message}"
                                   for err in map(_deepest, errors)]))


class _StrictLoader(yaml.SafeLoader):
    """A safe YAML loader that refuses a mapping with the same key twice."""


def _mapping_without_duplicates(loader: _StrictLoader, node: yaml.MappingNode,
                                deep: bool = False) -> dict:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *anchor` may be overridden
            continue
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        if key in seen:
            raise ConfigError(f"{key_node.start_mark.name}:{line}: duplicate key {key!r} "
                              f"(first at line {seen[key]})")
        seen[key] = line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
                              _mapping_without_duplicates)


def read_yaml(path: str | Path) -> Any:
    """A YAML file's content; :class:`ConfigError` naming the file (and line) when it is
    missing, not YAML, or has a duplicate key in any mapping."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    try:
        with path.open() as stream:
            return yaml.load(stream, Loader=_StrictLoader)  # a SafeLoader
    except yaml.YAMLError as exc:
        detail = " ".join(str(exc).split())
        raise ConfigError(f"{path}: not valid YAML ({detail})") from exc


def load_config(path: str | Path) -> dict:
    """Read a YAML config file (duplicate keys are errors), validate it against the schema
    and return it; :class:`ConfigError` messages start with the file."""
    data = read_yaml(path)
    try:
        validate(data, prefix="")
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return data


def section_arg(text: str, schema_def: str, where: str) -> dict:
    """A config section given on a command line as JSON (``--spec``, ``--settings``),
    validated against the schema's ``schema_def`` (errors name ``where``)."""
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{where}: --spec is not valid JSON ({exc})") from exc
    validate(spec, subschema(schema_def), prefix=where)
    return spec
