"""One training run's complete description, and the expansion of the experiment matrix.

A :class:`RunSpec` is plain data (JSON round-trippable) so it can be handed to worker
processes on any launcher and recorded verbatim in the run's ``summary.json``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields

from commgnn.core.config import defaults
from commgnn.core.errors import ConfigError
from commgnn.core.paths import RUN_ID, fill

#: The ``training`` section's defaults, from the config schema (its one source);
#: ``eval_fanouts`` and ``interface`` have none there: None, not set.
TRAINING_DEFAULTS: dict = defaults("training", unset=("eval_fanouts", "interface"))

NETWORK_PRESET_NAMES = ("none", "1gbe", "10gbe", "25gbe")

#: An ``experiments`` entry's defaults, from the config schema.
EXPERIMENT_DEFAULTS: dict = defaults("experiment")


#: The training settings a named model (``models.<name>``) may override.
MODEL_OVERRIDES = ("hidden", "heads", "dropout")

#: The summary keys a run id is made of, in :func:`run_id`'s order.
RUN_KEYS = ("system", "dataset", "partitioning", "model", "batch_size", "network", "seed")


def run_id(system: str, dataset: str, partitioning: str, model: str, batch_size: int,
           network: str, seed: int) -> str:
    """A run's identity: its directory relative to ``<results>/runs/``
    (:data:`commgnn.core.paths.RUN_ID`)."""
    return fill(RUN_ID, system=system, dataset=dataset, partitioning=partitioning,
                model=model, batch=batch_size, network=network, seed=seed)


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


def network_spec(config: dict, name: str) -> dict:
    """Resolve a network name: a ``networks`` entry of the config, else a preset name."""
    named = config.get("networks", {})
    if name in named:
        return dict(named[name])
    if name in NETWORK_PRESET_NAMES:
        return {"preset": name}
    raise ValueError(f"network {name!r} is neither in 'networks' nor a preset "
                     f"{NETWORK_PRESET_NAMES}")


def run_spec_arg(text: str) -> RunSpec:
    """A run spec given on a command line as JSON (``--spec``)."""
    try:
        return RunSpec.from_json(text)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"--spec: not a run spec ({exc})") from exc
