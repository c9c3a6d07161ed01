"""Training GreenDyGNN's window policy (§IV-C2) in the calibrated simulator, and judging
it there against every static window.

:func:`train_policy` trains a Double DQN (:mod:`commgnn.systems.greendygnn.dqn`) on
:class:`~commgnn.systems.greendygnn.simulator.SimEnv` (domain-randomised congestion, random
controlled worker) and writes ``policy.pt`` (a torch state dict with its metadata, loaded
with ``weights_only=True``) and ``training.json`` (the learning curve, seconds, and a
simulated evaluation: the policy, the reference window and the best static action per
archetype, on held-out profiles).

The policy's metadata records ``inputs``: the fingerprints of the calibration it was
trained on and of what that was measured on (dataset, partition, presample;
:mod:`commgnn.core.provenance`). A run that gets the pipeline's policy refuses one trained for
another dataset or partition, or recording none (:func:`check_policy_inputs`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from commgnn.core.config import defaults
from commgnn.core.errors import InputError
from commgnn.core.files import write_json_atomic
from commgnn.core.progress import Progress
from commgnn.core.provenance import RULES, check_inputs
from commgnn.systems.greendygnn.controller import WINDOWS
from commgnn.systems.greendygnn.costmodel import (
    CostModel,
    calibration_fingerprint,
    read_calibration,
)
from commgnn.systems.greendygnn.dqn import (
    DQNConfig,
    greedy_action,
    load_policy,
    save_policy,
    train_dqn,
)
from commgnn.systems.greendygnn.simulator import ARCHETYPES, SimEnv, random_profile

#: Defaults of the ``control.policy`` config section (from the config schema): the
#: environment's, i.e. all but :class:`DQNConfig`'s fields (the rest of the section).
POLICY_DEFAULTS: dict[str, Any] = {
    key: value for key, value in defaults("control_policy").items()
    if key not in {f.name for f in fields(DQNConfig)}}
ENV_KEYS = tuple(POLICY_DEFAULTS)

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from commgnn.data.store import GraphDataset
    from commgnn.partition import Partition


def make_env(calibration: dict, settings: dict[str, Any]) -> SimEnv:
    s = {**POLICY_DEFAULTS, **settings}
    return SimEnv(CostModel(calibration), int(s["episode_epochs"]),
                  reference_window=int(s["reference_window"]),
                  switch_penalty=float(s["switch_penalty"]), obs_noise=float(s["obs_noise"]),
                  energy_noise=float(s["energy_noise"]))


def evaluate(env: SimEnv, network, profiles: int, seed: int) -> dict[str, Any]:
    """Simulated energy of the policy vs the reference and the best static action per
    archetype, on ``profiles`` held-out profiles each (noise off)."""
    env.obs_noise, env.energy_noise = 0.0, 0.0
    rng = np.random.default_rng(seed + 1_000_003)
    out: dict[str, Any] = {}
    for name in ARCHETYPES:
        policy_j, static_j, windows = [], [], []
        for _ in range(profiles):
            agent = int(rng.integers(env.model.world))
            profile, _ = random_profile(rng, env.sims[0].epochs, env.model.world, name,
                                        env.severities_ms)
            state = env.reset(rng, profile=profile, agent=agent)
            sim = env.sim
            chosen = [env.active]
            done = False
            while not done:
                state, _, done = env.step(greedy_action(network, state))
                chosen.append(env.active)
            episode = sim.episode(profile, chosen)
            policy_j.append(episode.total_energy_j)
            windows.append(float(np.mean([WINDOWS[a // env.model.world]
                                          for a in episode.actions])))
            static_j.append(sim.static_energy(profile))
        static = np.mean(static_j, axis=0)
        best = int(np.argmin(static))
        out[name] = {"policy_j": float(np.mean(policy_j)),
                     "reference_j": float(static[env.sims[0].reference]),
                     "best_static_j": float(static[best]),
                     "best_static_window": WINDOWS[best // env.model.world],
                     "best_static_template": best % env.model.world,
                     "policy_mean_window": float(np.mean(windows))}
    return out


def train_policy(calibration: dict, out_dir: str | Path, settings: dict[str, Any] | None
                 = None) -> dict[str, Any]:
    """Train, save ``policy.pt`` and ``training.json`` in ``out_dir``; return the latter."""
    settings = dict(settings or {})
    env_settings = {k: settings.pop(k) for k in list(settings) if k in ENV_KEYS}
    s = {**POLICY_DEFAULTS, **env_settings}
    config = DQNConfig.from_dict(settings)
    env = make_env(calibration, s)
    start = time.perf_counter()
    progress = Progress("train-policy", config.episodes, "episodes", log)
    result = train_dqn(env, config, lambda _episode, _reward: progress.advance())
    seconds = time.perf_counter() - start
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    inputs = {**(calibration.get("inputs") or {}),
              "calibration": calibration_fingerprint(calibration)}
    metadata = {"world": env.model.world, "windows": list(WINDOWS),
                "workload": calibration["workload"], "env": s, "dqn": config.to_dict(),
                "inputs": inputs}
    save_policy(out / "policy.pt", result.network, metadata)
    record = {"seconds": seconds, "episodes": len(result.episode_rewards),
              "gradient_steps": result.gradient_steps,
              "episode_rewards": result.episode_rewards,
              "episode_lengths": result.episode_lengths,
              "evaluation": evaluate(env, result.network, int(s["eval_profiles"]),
                                     config.seed),
              "env": s, "dqn": config.to_dict()}
    write_json_atomic(out / "training.json", record)
    return record


def policy_rebuild_hint(policy: str | Path) -> str:
    """How to rebuild the pipeline's policy ``policy`` (a ``policy.pt`` or its directory)
    and the calibration beside it, which a stale policy was trained on."""
    directory = Path(policy).parent if Path(policy).suffix == ".pt" else Path(policy)
    calibration = directory.parent / "calibration"
    return (f"delete {directory} and {calibration} and rerun snakemake (rules "
            f"{RULES['calibration']}, {RULES['policy']})")


def check_pipeline_policy(policy: str | Path, dataset: GraphDataset,
                          partition: Partition) -> None:
    """Refuse the pipeline's policy (``policy.pt`` or its directory) if it is unreadable
    (InputError) or was not trained for ``dataset`` and ``partition``, or on the
    calibration beside it (``../calibration``) as it is now (StaleInputError); both name
    it and how to rebuild it."""
    path = Path(policy) / "policy.pt" if Path(policy).is_dir() else Path(policy)
    hint = policy_rebuild_hint(path)
    try:
        _, metadata = load_policy(path)
    except InputError as exc:
        if not path.is_file():
            raise
        raise type(exc)(f"{exc}; {hint}") from exc
    expected = {"dataset": (dataset.fingerprint, f"the run's dataset {dataset.name!r}"),
                "partition": (partition.fingerprint, "the run's partition")}
    calibration = path.parent.parent / "calibration" / "calibration.json"
    if calibration.is_file():  # the pipeline's layout: the calibration it was trained on

        expected["calibration"] = (calibration_fingerprint(read_calibration(calibration)),
                                   str(calibration))
    check_inputs(path, "policy", metadata.get("inputs"), expected, hint=hint)
