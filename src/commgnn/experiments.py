"""The experiment matrix of a config expanded into run specs, each checked against its
system's declarations (the application layer: it reads the systems' registry)."""

from __future__ import annotations

import inspect
import itertools

from commgnn.checks import config_problems
from commgnn.cluster import dataset_shape
from commgnn.core.config import ConfigError, listing
from commgnn.core.spec import (
    EXPERIMENT_DEFAULTS,
    MODEL_OVERRIDES,
    TRAINING_DEFAULTS,
    RunSpec,
    network_spec,
    split_model,
)


def model_options(config: dict, model: str, where: str) -> dict:
    """The ``models`` entry ``model`` (depth suffix aside) names, ``{}`` for a built-in;
    ConfigError naming ``where`` when it is neither."""
    from commgnn.models.gnn import MODEL_NAMES  # deferred: imports numpy, torch

    base = split_model(model)[0]
    named = config.get("models") or {}
    if base in named:
        return dict(named[base])
    if base in MODEL_NAMES:
        return {}
    raise ConfigError(f"{where}: {model!r}: {base!r} is neither a built-in model "
                      f"({', '.join(MODEL_NAMES)}) nor in 'models'")


def model_training(training: dict, model: str, where: str,
                   options: dict | None = None) -> dict:
    """``training`` for ``model``: a named model's overrides (``options``, its ``models``
    entry: ``hidden``, ``heads``, ``dropout``) replace the shared settings, and a depth
    suffix takes its fan-outs from ``depth_fanouts`` (ConfigError naming ``where`` when they
    are missing); ``eval_fanouts: training`` becomes the run's training fan-outs."""

    overrides = {k: options[k] for k in MODEL_OVERRIDES if k in (options or {})}
    if overrides:
        training = {**training, **overrides}
    training = _with_depth(training, model, where)
    if training.get("eval_fanouts") == "training":
        training = {**training, "eval_fanouts": list(training["fanouts"])}
    return training


def _with_depth(training: dict, model: str, where: str) -> dict:
    """``training`` with the fan-outs of ``model``'s depth suffix, if it has one."""
    _, depth = split_model(model)
    if depth is None or depth == len(training["fanouts"]):
        return training
    by_depth = {str(k): v for k, v in (training.get("depth_fanouts") or {}).items()}
    fanouts = by_depth.get(str(depth))
    if fanouts is None:
        raise ConfigError(f"{where}: model {model!r} needs training.depth_fanouts.{depth}")
    if len(fanouts) != depth:
        raise ConfigError(f"training.depth_fanouts.{depth}: {len(fanouts)} fan-outs for "
                          f"{depth} layers")
    return {**training, "fanouts": list(fanouts)}


def expand_experiments(config: dict) -> list[RunSpec]:
    """The cross product of every ``experiments`` entry, de-duplicated, in a stable order.

    Checks the config first (:func:`commgnn.systems.registry.check_config`, then every
    cross-field constraint of :func:`commgnn.checks.config_problems`), then each cell
    against its system (``System.run_problems``, with the dataset's shape; each line
    followed by the experiment and the run it comes from); each run's
    ``system_options`` are its system's resolved options (defaults filled in, ``system``
    naming the implementation). Raises :class:`~commgnn.core.config.ConfigError`.
    """
    # deferred: imports numpy, torch
    from commgnn.systems.registry import check_config, resolve_system

    check_config(config)
    problems = config_problems(config)
    if problems:
        raise ConfigError(listing(problems))
    training = {**TRAINING_DEFAULTS, **config.get("training", {})}
    runs: dict[str, RunSpec] = {}
    experiment_of: dict[str, int] = {}  # run id -> the first experiment that has it
    for index, exp in enumerate(config.get("experiments", [])):
        exp = {**EXPERIMENT_DEFAULTS, **exp}
        for key, section in (("datasets", "datasets"), ("partitionings", "partitionings")):
            missing = sorted(set(exp[key]) - set(config[section]))
            if missing:
                raise ConfigError(f"experiments[{index}].{key}: {missing} not defined in "
                                  f"'{section}'")
        cell_training = {**training, **({"epochs": exp["epochs"]} if "epochs" in exp else {})}
        for combo in itertools.product(exp["systems"], exp["datasets"], exp["partitionings"],
                                       exp["models"], exp["batch_sizes"], exp["networks"],
                                       exp["seeds"]):
            system, dataset, part, model, batch, net, seed = combo
            _, options = resolve_system(config, system, f"experiments[{index}].systems")
            try:
                network = network_spec(config, net)
            except ValueError as exc:
                raise ConfigError(f"experiments[{index}].networks: {exc}") from None
            where = f"experiments[{index}].models"
            named = model_options(config, model, where)
            spec = RunSpec(
                system=system, dataset=dataset, partitioning=part, model=model,
                batch_size=int(batch), network=net, network_spec=network,
                seed=int(seed), workers=int(config["partitionings"][part]["parts"]),
                training=model_training(cell_training, model, where, named),
                system_options=options, model_options=named,
            )
            first = runs.setdefault(spec.run_id, spec)
            experiment_of.setdefault(spec.run_id, index)
            if first != spec:
                raise ConfigError(f"experiments[{index}]: run {spec.run_id} is also in an "
                                  "earlier experiment with other settings (epochs)")
    problems = _run_problems(config, list(runs.values()), experiment_of)
    if problems:
        raise ConfigError(listing(problems))
    return list(runs.values())


def _run_problems(config: dict, runs: list[RunSpec], experiment_of: dict[str, int]
                  ) -> list[str]:
    """Every cell checked against its system (``System.run_problems``, given the dataset's
    shape where the config fixes it), each line followed by where it comes from: the
    experiment and the run (``run X and N other runs`` when a problem repeats over an
    experiment's cells)."""

    from commgnn.systems.registry import get_system  # deferred: imports numpy, torch

    shapes = {}
    for name, entry in (config.get("datasets") or {}).items():
        try:
            shapes[name] = dataset_shape(entry)
        except ValueError:  # no published shape: nothing to bound by
            shapes[name] = None
    found: dict[tuple[str, int], list[str]] = {}
    for spec in runs:
        cls = get_system(spec.base_system)
        if "shape" in inspect.signature(cls.run_problems).parameters:
            lines = cls.run_problems(spec, shape=shapes.get(spec.dataset))
        else:  # a system declared before the shape was passed
            lines = cls.run_problems(spec)
        for line in lines:
            found.setdefault((line, experiment_of[spec.run_id]), []).append(spec.run_id)
    problems = []
    for (line, index), run_ids in found.items():
        where = f"experiments[{index}]"
        if not any(run_id in line for run_id in run_ids):
            others = len(run_ids) - 1
            where += f", run {run_ids[0]}" + (f" and {others} other run{'s' * (others > 1)}"
                                               if others else "")
        problems.append(f"{line} ({where})")
    return problems
