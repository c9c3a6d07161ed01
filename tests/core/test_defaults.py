"""The config schema is the one place a default is written: the Python constants of defaults
equal what the schema files say (the pipeline's and GreenDyGNN's part, read here on their
own, not with the helpers under test), and the helper (:func:`commgnn.core.config.defaults`)
derives a hand-computed toy case."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest
import yaml

import commgnn
from commgnn.core.config import defaults, schema, schema_file

PACKAGE = Path(commgnn.__file__).parent
SCHEMA_FILE = PACKAGE / "schemas" / "config.schema.yaml"
GREENDYGNN_PART = PACKAGE / "systems" / "greendygnn" / "schema.yaml"


@pytest.fixture(scope="module")
def raw() -> dict:
    """Both files' ``$defs`` (GreenDyGNN's part adds its own)."""
    base = yaml.safe_load(SCHEMA_FILE.read_text())
    part = yaml.safe_load(GREENDYGNN_PART.read_text())
    assert not set(base["$defs"]) & set(part["$defs"])
    return {**base, "$defs": {**base["$defs"], **part["$defs"]}}


def written(raw: dict, name: str) -> dict:
    """The ``default`` of each property of ``$defs/<name>`` that has one, in file order."""
    properties = raw["$defs"][name]["properties"]
    return {key: prop["default"] for key, prop in properties.items() if "default" in prop}


def assert_same(constant: dict, expected: dict) -> None:
    assert constant == expected
    assert list(constant) == list(expected)  # the order too


def test_training_defaults_are_the_schemas(raw):
    from commgnn.core.spec import TRAINING_DEFAULTS

    properties = raw["$defs"]["training"]["properties"]
    unset = ("eval_fanouts", "interface")  # no default in the schema: None, not set
    assert not any("default" in properties[key] for key in unset)
    expected = {key: prop.get("default") for key, prop in properties.items()
                if "default" in prop or key in unset}
    assert_same(TRAINING_DEFAULTS, expected)
    assert TRAINING_DEFAULTS["eval_fanouts"] is None and TRAINING_DEFAULTS["interface"] is None


def test_a_number_settings_default_is_a_float(raw):
    """YAML reads ``default: 60`` as an int; a ``number`` setting's default is a float, as
    the constants always had it (run specs record them as JSON: 60.0, not 60)."""
    from commgnn.core.spec import TRAINING_DEFAULTS

    numbers = [key for key, prop in raw["$defs"]["training"]["properties"].items()
               if prop.get("type") == "number" and "default" in prop]
    assert {"weight_decay", "rpc_timeout_s", "collective_timeout_s"} <= set(numbers)
    assert all(type(TRAINING_DEFAULTS[key]) is float for key in numbers)


def test_experiment_defaults_are_the_schemas(raw):
    from commgnn.core.spec import EXPERIMENT_DEFAULTS

    assert_same(EXPERIMENT_DEFAULTS, written(raw, "experiment"))
    assert EXPERIMENT_DEFAULTS == {"models": ["sage"], "batch_sizes": [1024],
                                   "networks": ["none"], "seeds": [0]}


def test_calibration_and_validation_defaults_are_the_schemas(raw):
    from commgnn.systems.greendygnn.calibrate import CALIBRATION_DEFAULTS, VALIDATION_DEFAULTS

    assert_same(CALIBRATION_DEFAULTS, written(raw, "control_calibration"))
    assert_same(VALIDATION_DEFAULTS, written(raw, "control_validation"))


def test_policy_defaults_are_the_schemas_environment_part(raw):
    from commgnn.systems.greendygnn.dqn import DQNConfig
    from commgnn.systems.greendygnn.policy import ENV_KEYS, POLICY_DEFAULTS

    section = written(raw, "control_policy")
    dqn = {f.name for f in fields(DQNConfig)}
    assert_same(POLICY_DEFAULTS, {k: v for k, v in section.items() if k not in dqn})
    assert ENV_KEYS == ("episode_epochs", "switch_penalty", "obs_noise", "energy_noise",
                        "reference_window", "eval_profiles")
    # the rest of the section is the DQN's, whose dataclass defaults agree too
    for f in fields(DQNConfig):
        value = section[f.name]
        assert (tuple(value) if isinstance(value, list) else value) == f.default, f.name


def test_snakemake_fills_in_the_same_defaults(tmp_path):
    """The helper reads defaults the way Snakemake fills them into the pipeline's config."""
    validate = pytest.importorskip("snakemake.utils").validate
    from commgnn.core.spec import EXPERIMENT_DEFAULTS, TRAINING_DEFAULTS
    from commgnn.systems.greendygnn.calibrate import CALIBRATION_DEFAULTS, VALIDATION_DEFAULTS
    from commgnn.systems.greendygnn.policy import POLICY_DEFAULTS

    config = {"datasets": {"d": {"source": "synthetic"}},
              "partitionings": {"p": {"method": "random", "parts": 2}},
              "training": {}, "control": {"calibration": {}, "validation": {}, "policy": {}},
              "experiments": [{"systems": ["default"], "datasets": ["d"],
                               "partitionings": ["p"]}]}
    validate(config, str(schema_file()))  # what the Snakefile validates against
    assert config["training"] == {k: v for k, v in TRAINING_DEFAULTS.items()
                                  if k not in ("eval_fanouts", "interface")}
    assert config["experiments"][0] == {"systems": ["default"], "datasets": ["d"],
                                        "partitionings": ["p"], **EXPERIMENT_DEFAULTS}
    assert config["control"]["calibration"] == CALIBRATION_DEFAULTS
    assert config["control"]["validation"] == VALIDATION_DEFAULTS
    assert POLICY_DEFAULTS.items() <= config["control"]["policy"].items()


TOY = {
    "type": "object",
    "properties": {
        "retries": {"type": "integer", "default": 2},
        "outer": {"type": "object", "properties": {"job": {"$ref": "#/$defs/job"}}},
    },
    "$defs": {
        "window": {"enum": [1, 4, 16], "default": 1},
        "job": {
            "type": "object",
            "properties": {
                "epochs": {"type": "integer", "default": 3},
                "timeout_s": {"type": "number", "default": 60},
                "host": {"type": "string"},
                "window": {"$ref": "#/$defs/window", "default": 4},
                "fallback": {"$ref": "#/$defs/window"},
                "sizes": {"type": "array", "items": {"type": "number"}, "default": [0, 8]},
                "extra": {"type": "object"},
            },
        },
    },
}


def test_defaults_of_a_hand_written_schema():
    job = defaults("job", TOY)
    # by hand: defaults in property order; the number's 60 a float, the array's items as
    # written; `window`'s own default beside its $ref (not the referenced 1); `fallback`
    # has none of its own (Snakemake would fill nothing), `host` and `extra` none at all
    assert job == {"epochs": 3, "timeout_s": 60.0, "window": 4, "sizes": [0, 8]}
    assert list(job) == ["epochs", "timeout_s", "window", "sizes"]
    assert type(job["timeout_s"]) is float and type(job["sizes"][0]) is int
    # a dotted path of properties reaches the same object through the $ref
    assert defaults("outer.job", TOY) == job
    assert defaults("", TOY) == {"retries": 2}
    assert defaults("outer", TOY) == {}
    # unset: settings without a default, as None, in their place
    assert list(defaults("job", TOY, unset=("host",))) == ["epochs", "timeout_s", "host",
                                                           "window", "sizes"]
    assert defaults("job", TOY, unset=("host",))["host"] is None


def test_defaults_refuses_what_it_cannot_derive():
    with pytest.raises(ValueError, match="no object"):
        defaults("outer.nothing", TOY)
    with pytest.raises(ValueError, match="unset"):
        defaults("job", TOY, unset=("epochs",))  # it has a default
    with pytest.raises(ValueError, match="unset"):
        defaults("job", TOY, unset=("nothing",))


def test_each_call_is_a_fresh_copy():
    first = defaults("training")
    first["fanouts"].append(99)
    assert defaults("training")["fanouts"] == [10, 25]
    assert defaults("job", TOY)["sizes"] == [0, 8] == TOY["$defs"]["job"]["properties"][
        "sizes"]["default"]


def test_the_merged_schema_holds_each_systems_part():
    """GreenDyGNN's part (its control section, its congestion kinds) merged into the
    pipeline's, and the file Snakemake validates against is that merged schema."""
    import json

    merged = schema()
    part = yaml.safe_load(GREENDYGNN_PART.read_text())
    assert set(part["$defs"]) <= set(merged["$defs"]) and "control" in merged["properties"]
    kinds = merged["$defs"]["congestion"]
    assert kinds["properties"]["kind"]["enum"] == ["none", "epochs", "time", "greendygnn",
                                                   "scenario"]
    assert {"if": {"properties": {"kind": {"const": "scenario"}}},
            "then": {"$ref": "#/$defs/congestion_scenario"}} in kinds["allOf"]
    assert json.loads(schema_file().read_text()) == merged
