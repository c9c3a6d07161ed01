"""The Double-DQN trainer on toy environments, its determinism and its policy files."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from commgnn.core.errors import InputError
from commgnn.systems.greendygnn.dqn import (
    DQNConfig,
    QNetwork,
    ReplayBuffer,
    _update,
    greedy_action,
    load_policy,
    save_policy,
    train_dqn,
)

SMALL = DQNConfig(hidden=(32,), episodes=200, gamma=0.9, batch_size=32, replay=2000,
                  target_sync=25, eps_decay_episodes=100, warmup=64, lr=3e-3)


class CounterEnv:
    """Horizon 5, the state is the time step one-hot, action 1 earns 1 and action 0 none."""

    state_dim = 5
    n_actions = 2

    def reset(self, rng: np.random.Generator) -> np.ndarray:
        self.t = 0
        return self._state()

    def _state(self) -> np.ndarray:
        s = np.zeros(self.state_dim, dtype=np.float32)
        s[min(self.t, self.state_dim - 1)] = 1.0
        return s

    def step(self, action: int) -> tuple[np.ndarray, float, bool]:
        self.t += 1
        return self._state(), float(action == 1), self.t >= 5


class FlagEnv:
    """Horizon 4, a random flag per step in the state (with a bias input): reward 1 when
    the action equals the flag. The flag is drawn from the reset generator."""

    state_dim = 2
    n_actions = 2

    def reset(self, rng: np.random.Generator) -> np.ndarray:
        self.rng, self.t = rng, 0
        return self._draw()

    def _draw(self) -> np.ndarray:
        self.flag = int(self.rng.integers(2))
        return np.array([1.0, float(self.flag)], dtype=np.float32)

    def step(self, action: int) -> tuple[np.ndarray, float, bool]:
        reward = float(action == self.flag)
        self.t += 1
        return self._draw(), reward, self.t >= 4


def _weights(network: QNetwork) -> list[torch.Tensor]:
    return [p.detach().clone() for p in network.state_dict().values()]


def test_learns_the_rewarding_action() -> None:
    result = train_dqn(CounterEnv(), SMALL)
    env = CounterEnv()
    states = [np.eye(5, dtype=np.float32)[t] for t in range(5)]
    assert [greedy_action(result.network, s) for s in states] == [1] * 5
    assert np.mean(result.episode_rewards[-20:]) > np.mean(result.episode_rewards[:20])
    assert result.episode_lengths == [5] * SMALL.episodes
    # Q(s_t, 1) is the discounted reward to go: the terminal step does not bootstrap
    with torch.no_grad():
        q = result.network(torch.from_numpy(np.stack(states)))[:, 1]
    to_go = [sum(SMALL.gamma ** k for k in range(5 - t)) for t in range(5)]
    assert q.tolist() == pytest.approx(to_go, abs=0.1)
    assert result.gradient_steps == 5 * SMALL.episodes - SMALL.warmup + 1
    # the greedy policy collects every reward
    state, total, done = env.reset(np.random.default_rng(0)), 0.0, False
    while not done:
        state, reward, done = env.step(greedy_action(result.network, state))
        total += reward
    assert total == 5.0


def test_learns_a_state_dependent_action() -> None:
    result = train_dqn(FlagEnv(), SMALL)
    network = result.network
    assert greedy_action(network, np.array([1.0, 0.0], dtype=np.float32)) == 0
    assert greedy_action(network, np.array([1.0, 1.0], dtype=np.float32)) == 1
    assert np.mean(result.episode_rewards[-20:]) > 3.5


def test_deterministic_under_a_seed_and_leaves_global_state() -> None:
    config = DQNConfig(hidden=(16,), episodes=40, batch_size=16, replay=500, target_sync=10,
                       eps_decay_episodes=30, warmup=20)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        torch.manual_seed(123)
        before = torch.random.get_rng_state()
        curves: list[list[float]] = []
        a = train_dqn(FlagEnv(), config, progress=lambda e, r: curves.append(
            [e, r, torch.get_num_threads()]))
        assert torch.equal(torch.random.get_rng_state(), before)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)
    # progress after every episode, training on one thread
    assert curves == [[e, r, 1] for e, r in enumerate(a.episode_rewards)]
    b = train_dqn(FlagEnv(), config)
    assert a.episode_rewards == b.episode_rewards
    assert all(torch.equal(x, y) for x, y in zip(_weights(a.network), _weights(b.network),
                                                 strict=True))
    c = train_dqn(FlagEnv(), DQNConfig(**{**config.to_dict(), "hidden": (16,), "seed": 1}))
    assert c.episode_rewards != a.episode_rewards or not all(
        torch.equal(x, y) for x, y in zip(_weights(a.network), _weights(c.network),
                                          strict=True))


def linear_pair() -> tuple[QNetwork, QNetwork]:
    """Linear Q-networks with Q_online(s') = [0, 1]·s' and Q_target(s') = [5, 2]·s'."""
    online, target = QNetwork(1, 2, ()), QNetwork(1, 2, ())
    with torch.no_grad():
        for net, w in ((online, [[0.0], [1.0]]), (target, [[5.0], [2.0]])):
            net.layers[0].weight.copy_(torch.tensor(w))
            net.layers[0].bias.zero_()
    return online, target


@pytest.mark.parametrize("done", [0.0, 1.0])
def test_double_dqn_target(done: float) -> None:
    """y = r + γ·(1 − done)·Q_target(s', argmax_a Q_online(s', a)): with linear Q-networks,
    one SGD step of rate 1 on the (quadratic part of the) Huber loss sets Q(s, a) to y."""
    online, target = linear_pair()
    # Q_online(s') = [0, 1] picks action 1, Q_target(s') = [5, 2]: the target uses 2 (plain
    # DQN would use 5, the online network 1)
    batch = (torch.zeros(1, 1), torch.tensor([0]), torch.tensor([0.5]), torch.ones(1, 1),
             torch.tensor([done]))
    _update(online, target, torch.optim.SGD(online.parameters(), lr=1.0), batch,
            DQNConfig(gamma=0.1))
    with torch.no_grad():
        q = online(torch.zeros(1, 1))[0]
    assert q.tolist() == pytest.approx([0.5 + 0.1 * 2.0 * (1 - done), 0.0])


def test_a_transition_of_several_steps_is_discounted_per_step() -> None:
    online, target = linear_pair()
    batch = (torch.zeros(1, 1), torch.tensor([0]), torch.tensor([0.5]), torch.ones(1, 1),
             torch.tensor([0.0]), torch.tensor([3.0]))
    _update(online, target, torch.optim.SGD(online.parameters(), lr=1.0), batch,
            DQNConfig(gamma=0.5))
    with torch.no_grad():
        q = online(torch.zeros(1, 1))[0]
    assert q.tolist() == pytest.approx([0.5 + 0.5 ** 3 * 2.0, 0.0])


def test_replay_buffer_and_defaults() -> None:
    config = DQNConfig()
    assert (config.hidden, config.replay, config.batch_size, config.target_sync,
            config.grad_clip) == ((256, 256), 50_000, 64, 100, 10.0)
    buffer = ReplayBuffer(3, 2)
    for i in range(5):
        buffer.add(np.full(2, i, np.float32), i % 2, float(i), np.zeros(2, np.float32),
                   i == 4)
    assert buffer.size == 3
    assert sorted(buffer.rewards.tolist()) == [2.0, 3.0, 4.0]
    s, a, r, s2, done, span = buffer.sample(8, np.random.default_rng(0))
    assert torch.equal(span, torch.ones(8))
    assert s.shape == s2.shape == (8, 2) and a.dtype == torch.int64
    assert set(r.tolist()) <= {2.0, 3.0, 4.0} and torch.equal(s[:, 0], r)
    assert torch.equal(a, (r % 2).long()) and not s2.any()
    assert torch.equal(done, (r == 4.0).float())


def test_policy_file_round_trip(tmp_path) -> None:
    torch.manual_seed(0)
    network = QNetwork(7, 4, (8, 6))
    meta = {"world": np.int64(2), "windows": (1, 2, 4), "env": {"noise": 0.1, "name": "x"}}
    path = tmp_path / "policy.pt"
    save_policy(path, network, meta)
    assert [p.name for p in tmp_path.iterdir()] == ["policy.pt"]
    raw = torch.load(path, weights_only=True)
    assert raw["metadata"]["hidden"] == [8, 6]
    loaded, loaded_meta = load_policy(path)
    assert loaded_meta == {"world": 2, "windows": [1, 2, 4], "env": {"noise": 0.1, "name": "x"},
                           "state_dim": 7, "n_actions": 4, "hidden": [8, 6]}
    states = torch.rand(32, 7)
    with torch.no_grad():
        assert torch.equal(loaded(states), network(states))
    assert all(greedy_action(loaded, s) == greedy_action(network, s) for s in states.numpy())
    with pytest.raises(ValueError, match=r"env\.bad"):
        save_policy(path, network, {"env": {"bad": object()}})
    assert [p.name for p in tmp_path.iterdir()] == ["policy.pt"]
    loaded_again, _ = load_policy(path)  # the refused save left the file intact
    with torch.no_grad():
        assert torch.equal(loaded_again(states), network(states))


@pytest.mark.parametrize("content", [None, b"", b"not a torch file", "wrong-shape"])
def test_unreadable_policy_file(tmp_path, content) -> None:
    path = tmp_path / "policy.pt"
    if content == "wrong-shape":
        save_policy(path, QNetwork(3, 2, (4,)), {})
        data = torch.load(path, weights_only=True)
        data["metadata"]["hidden"] = [5]
        torch.save(data, path)
    elif content is not None:
        path.write_bytes(content)
    with pytest.raises(InputError, match=r"policy\.pt") as info:
        load_policy(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_config_from_dict() -> None:
    config = DQNConfig.from_dict({"hidden": [64, 32], "episodes": 10, "seed": 3})
    assert config.hidden == (64, 32) and config.episodes == 10 and config.seed == 3
    assert DQNConfig.from_dict(config.to_dict()) == config
    assert config.to_dict()["hidden"] == [64, 32]
    with pytest.raises(ValueError, match="'batchsize'"):
        DQNConfig.from_dict({"batchsize": 32})
    with pytest.raises(ValueError, match="target_sync"):
        DQNConfig(target_sync=0)
