"""One training run's complete description, and the expansion of the experiment matrix.

A :class:`RunSpec` is plain data (JSON round-trippable) so it can be handed to worker
processes on any launcher and recorded verbatim in the run's ``summary.json``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import asdict, dataclass, field, fields

TRAINING_DEFAULTS: dict = {
    "epochs": 3,
    "fanouts": [10, 25],
    "hidden": 128,
    "heads": 4,
    "dropout": 0.5,
    "lr": 0.003,
    "weight_decay": 0.0,
    "eval_every": 1,
    "eval_max_nodes": 2000,
    "eval_fanouts": None,
    "device": "auto",
    "transport": "auto",
    "master_addr": "127.0.0.1",
    "master_port": 0,
    "interface": None,
    "rpc_timeout_s": 60.0,
    "collective_timeout_s": 60.0,
    "checkpoint": True,
    "resume": True,
}

NETWORK_PRESET_NAMES = ("none", "1gbe", "10gbe", "25gbe")

EXPERIMENT_DEFAULTS: dict = {
    "models": ["sage"],
    "batch_sizes": [1024],
    "networks": ["none"],
    "seeds": [0],
}


#: The training settings a named model (``models.<name>``) may override.
MODEL_OVERRIDES = ("hidden", "heads", "dropout")

#: The summary keys a run id is made of, in :func:`run_id`'s order.
RUN_KEYS = ("system", "dataset", "partitioning", "model", "batch_size", "network", "seed")


def run_id(system: str, dataset: str, partitioning: str, model: str, batch_size: int,
           network: str, seed: int) -> str:
    """A run's identity: its directory relative to ``<results>/runs/``."""
    return f"{system}/{dataset}/{partitioning}/{model}_b{batch_size}_{network}_s{seed}"


@dataclass(frozen=True)
class RunSpec:
    """Everything a worker needs to run one experiment cell."""

    system: str
    dataset: str
    partitioning: str
    model: str
    batch_size: int
    network: str
    network_spec: dict
    seed: int
    workers: int
    training: dict = field(default_factory=lambda: dict(TRAINING_DEFAULTS))
    system_options: dict = field(default_factory=dict)
    #: The ``models.<name>`` entry the model names (empty for a built-in): ``model`` (a
    #: built-in) or ``conv`` (a torch_geometric.nn class), ``args``, and the overrides
    #: already merged into ``training``. Empty, it is left out of the JSON and the
    #: resume key, so specs and checkpoints from before named models are unchanged.
    model_options: dict = field(default_factory=dict)

    @property
    def base_system(self) -> str:
        """The implementation: a variant's ``system`` option, else the system name."""
        return self.system_options.get("system", self.system)

    @property
    def architecture(self) -> str:
        """The model's architecture, what :func:`~commgnn.models.gnn.build_model` builds:
        ``model`` without a depth suffix (``sage-3`` → ``sage``), or for a named model its
        built-in (``model``) or ``"conv"`` (a stack of its PyG ``conv``)."""
        if "conv" in self.model_options:
            return "conv"
        return self.model_options.get("model", split_model(self.model)[0])

    def model_kwargs(self) -> dict:
        """Keyword arguments of :func:`~commgnn.models.gnn.build_model` beyond the training
        settings: a named conv's ``conv`` and ``args``, a named built-in's ``args``."""
        args = dict(self.model_options.get("args") or {})
        if "conv" in self.model_options:
            return {"conv": self.model_options["conv"], "args": args}
        return args

    @property
    def run_id(self) -> str:
        """Relative path of the run under ``<results>/runs/``."""
        return run_id(self.system, self.dataset, self.partitioning, self.model,
                      self.batch_size, self.network, self.seed)

    def get(self, key: str):
        """A training setting, with the documented default."""
        return self.training.get(key, TRAINING_DEFAULTS[key])

    def resume_key(self) -> str:
        """Identity of the run for checkpoints: everything but the epoch count, so a run can
        be extended, while a changed setting never resumes from a stale checkpoint."""
        data = self._record()
        data["training"] = {k: v for k, v in data["training"].items() if k != "epochs"}
        return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()

    def _record(self) -> dict:
        data = asdict(self)
        if not data["model_options"]:
            del data["model_options"]
        return data

    def to_json(self) -> str:
        return json.dumps(self._record(), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> RunSpec:
        data = json.loads(text)
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"run spec: unknown keys {unknown}")
        return cls(**data)


def split_model(name: str) -> tuple[str, int | None]:
    """``"sage-3"`` → ``("sage", 3)``; ``"sage"`` → ``("sage", None)``; a named model's name
    is split the same way (``"sage_h16-3"`` → ``("sage_h16", 3)``)."""
    architecture, _, depth = name.partition("-")
    return architecture, int(depth) if depth else None


def model_options(config: dict, model: str, where: str) -> dict:
    """The ``models`` entry ``model`` (depth suffix aside) names, ``{}`` for a built-in;
    ConfigError naming ``where`` when it is neither."""
    from commgnn.config import ConfigError
    from commgnn.models.gnn import MODEL_NAMES

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
    are missing)."""
    from commgnn.config import ConfigError

    overrides = {k: options[k] for k in MODEL_OVERRIDES if k in (options or {})}
    if overrides:
        training = {**training, **overrides}
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


def network_spec(config: dict, name: str) -> dict:
    """Resolve a network name: a ``networks`` entry of the config, else a preset name."""
    named = config.get("networks", {})
    if name in named:
        return dict(named[name])
    if name in NETWORK_PRESET_NAMES:
        return {"preset": name}
    raise ValueError(f"network {name!r} is neither in 'networks' nor a preset "
                     f"{NETWORK_PRESET_NAMES}")


def expand_experiments(config: dict) -> list[RunSpec]:
    """The cross product of every ``experiments`` entry, de-duplicated, in a stable order.

    Checks the config first (:func:`commgnn.systems.registry.check_config`, then every
    cross-field constraint of :func:`commgnn.checks.config_problems`), then each cell
    against its system (``System.run_problems``, with the dataset's shape; each line
    followed by the experiment and the run it comes from); each run's
    ``system_options`` are its system's resolved options (defaults filled in, ``system``
    naming the implementation). Raises :class:`~commgnn.config.ConfigError`.
    """
    from commgnn.checks import config_problems
    from commgnn.config import ConfigError, listing
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
    import inspect

    from commgnn.cluster import dataset_shape
    from commgnn.systems.registry import get_system

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
