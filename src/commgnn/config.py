"""Configuration loading and validation against the pipeline's JSON schema.

The same schema (``commgnn/schemas/config.schema.yaml``, linked from ``workflow/schemas/``)
is enforced by Snakemake and by every CLI entry point, so a bad config fails before any
work starts, with the offending key path in the message.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from commgnn.errors import ConfigError

__all__ = ["ConfigError", "load_config", "schema", "subschema", "validate"]


@lru_cache(maxsize=1)
def schema() -> dict:
    """The pipeline config schema as a dict."""
    text = resources.files("commgnn").joinpath("schemas/config.schema.yaml").read_text()
    return yaml.safe_load(text)


def subschema(name: str) -> dict:
    """A ``$defs`` entry of the config schema, resolvable on its own."""
    full = schema()
    return {"$defs": full["$defs"], **full["$defs"][name]}


def _key_path(prefix: str, error: jsonschema.ValidationError) -> str:
    parts = [prefix, *(str(p) for p in error.absolute_path)]
    return ".".join(parts)


def _deepest(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """Descend into if/then/allOf context to the most specific error."""
    while error.context:
        error = max(error.context, key=lambda e: len(e.absolute_path))
    return error


def validate(data: Any, schema_dict: dict | None = None, prefix: str = "config") -> None:
    """Validate ``data``; raise :class:`ConfigError` listing every problem by key path."""
    validator_cls = jsonschema.validators.validator_for(schema_dict or schema())
    validator = validator_cls(schema_dict or schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = []
        for err in errors:
            err = _deepest(err)
            lines.append(f"{_key_path(prefix, err)}: {err.message}")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(dict.fromkeys(lines)))


def load_config(path: str | Path) -> dict:
    """Read a YAML config file, validate it and return it as a dict."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from exc
    validate(data, prefix=str(path))
    return data
