"""Policy training in the simulator and the ``dqn`` controller that deploys it."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from control_toys import toy_calibration

from commgnn.systems.greendygnn.controller import (
    WINDOWS,
    ControllerState,
    DQNController,
    WindowDecision,
    make_controller,
)
from commgnn.systems.greendygnn.costmodel import CostModel
from commgnn.systems.greendygnn.dqn import load_policy
from commgnn.systems.greendygnn.policy import train_policy
from commgnn.systems.greendygnn.simulator import Simulator

FAST = {"episodes": 300, "episode_epochs": 10, "hidden": [32], "warmup": 50,
        "eps_decay_episodes": 200, "target_sync": 50, "eval_profiles": 2,
        "switch_penalty": 0.0, "seed": 3}


def biggest_window_is_best() -> dict:
    """Clean steps 50 ms at W = 1 falling to 10 ms at W = 128 (interpolated in log2 W):
    the largest window is best under every congestion profile."""
    cal = toy_calibration(steps=10)
    cal["runs"]["step_s"] = [0.05, 0.01]
    return cal


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    out = tmp_path_factory.mktemp("policy")
    record = train_policy(biggest_window_is_best(), out, dict(FAST))
    return out, record


def state(rank: int = 0, previous: int = 16) -> ControllerState:
    return ControllerState(rank=rank, multipliers=[1.0, 1.5], owner_hit_rates=[1.0, 0.5],
                           global_hit_rate=0.5, stall_fraction=0.2, rebuild_fraction=0.1,
                           miss_fraction=0.5, delay_s=0.0, remaining_fraction=0.5,
                           previous=WindowDecision(previous), delays_s=[0.0, 0.0])


def test_policy_learns_the_obviously_best_window(trained) -> None:
    out, record = trained
    _, meta = load_policy(out / "policy.pt")
    assert meta["world"] == 2 and meta["windows"] == list(WINDOWS)
    early = np.mean(record["episode_rewards"][:20])
    late = np.mean(record["episode_rewards"][-20:])
    assert late > early
    # the greedy rollout on a clean run: the nominal first window (W = 16, as in a real
    # run), then W = 128 to the end — the best the policy can do
    model = CostModel(biggest_window_is_best())
    sim = Simulator(model, FAST["episode_epochs"])
    best = sim.episode(np.zeros((FAST["episode_epochs"], 2)),
                       [model.action(WINDOWS.index(16), 0),
                        model.action(WINDOWS.index(128), 0)])
    clean = record["evaluation"]["clean"]
    assert clean["best_static_window"] == 128
    assert clean["policy_j"] == pytest.approx(best.total_energy_j, rel=1e-9)
    assert clean["policy_j"] < clean["reference_j"]
    controller = DQNController(16, {"policy": str(out / "policy.pt")})
    assert controller.decide(state()).window in WINDOWS


def test_policy_training_is_deterministic(trained, tmp_path) -> None:
    out, record = trained
    again = train_policy(biggest_window_is_best(), tmp_path, dict(FAST))
    assert again["episode_rewards"] == record["episode_rewards"]
    a, _ = load_policy(out / "policy.pt")
    b, _ = load_policy(tmp_path / "policy.pt")
    for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True):
        assert torch.equal(x, y)


def test_without_cost_weights_only_uniform_templates(trained) -> None:
    out, _ = trained
    controller = DQNController(16, {"policy": str(out / "policy.pt"), "cost_weights": False})
    decision = controller.decide(state())
    assert decision.bias_owner is None and decision.weights == ()


def test_without_a_policy_file_the_heuristic_decides() -> None:
    controller = make_controller("dqn", 16, {"policy": None})
    assert controller.fallback is not None
    congested = state()
    congested.delay_s = 0.010
    congested.delays_s = [0.0, 0.010]
    assert controller.decide(congested) == make_controller("heuristic", 16).decide(congested)


def test_a_policy_for_another_cluster_size_is_refused(trained) -> None:
    out, _ = trained
    controller = DQNController(16, {"policy": str(out / "policy.pt")})
    four = ControllerState(rank=0, multipliers=[1.0] * 4, owner_hit_rates=[1.0] * 4,
                           global_hit_rate=1.0, stall_fraction=0, rebuild_fraction=0,
                           miss_fraction=0, delay_s=0, remaining_fraction=1,
                           previous=WindowDecision(16))
    with pytest.raises(ValueError, match="trained for 2 workers"):
        controller.decide(four)
