"""Double DQN (GreenDyGNN §IV-C2), generic over an environment, deterministic under a
seed.

The paper's hyper-parameters are the defaults of :class:`DQNConfig`: a Q-network with two
hidden layers of 256 ReLU units, a replay buffer of 50,000 transitions, mini-batches of
64, a hard target-network sync every 100 gradient steps, the Huber loss on the Double-DQN
target ``y = r + γ·(1 − done)·Q_target(s', argmax_a Q_online(s', a))``, gradient-norm
clipping at 10, Adam and ε-greedy exploration decaying linearly per episode. Not in the
copy of the paper and chosen here: the learning rate (1e-3), ε's end point (0.05) and
decay length, the warm-up before the first update and the discount γ (0.99).

Determinism: the network is initialised and trained inside ``torch.random.fork_rng``
seeded with ``config.seed`` and on one thread (``torch.set_num_threads(1)``, restored
afterwards), and every other draw (ε-greedy, replay sampling, ``env.reset``) comes from
one ``numpy`` PCG64 generator of the same seed: same environment and config ⇒ the same
weights and rewards, bit for bit.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from commgnn.errors import InputError


class Env(Protocol):
    """What :func:`train_dqn` needs of an environment."""

    state_dim: int
    n_actions: int

    def reset(self, rng: np.random.Generator) -> np.ndarray: ...

    def step(self, action: int) -> tuple[np.ndarray, float, bool]: ...


@dataclass(frozen=True)
class DQNConfig:
    """Training settings (see the module docstring for their sources)."""

    hidden: tuple[int, ...] = (256, 256)
    episodes: int = 2000
    gamma: float = 0.99
    lr: float = 1e-3
    batch_size: int = 64
    replay: int = 50_000
    target_sync: int = 100
    eps_start: float = 1.0
    eps_end: float = 0.05
    eps_decay_episodes: int = 1000
    train_every: int = 1
    warmup: int = 500
    grad_clip: float = 10.0
    seed: int = 0

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DQNConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"DQN config: unknown keys {unknown}; known: {sorted(names)}")
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["hidden"] = list(self.hidden)
        return out


class QNetwork(nn.Module):
    """An MLP from the state to one Q-value per action."""

    def __init__(self, state_dim: int, n_actions: int, hidden: Sequence[int]) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        width = state_dim
        for h in hidden:
            layers += [nn.Linear(width, int(h)), nn.ReLU()]
            width = int(h)
        layers.append(nn.Linear(width, n_actions))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class ReplayBuffer:
    """A ring of ``capacity`` transitions in preallocated arrays."""

    def __init__(self, capacity: int, state_dim: int) -> None:
        self.capacity = int(capacity)
        self.states = np.zeros((capacity, state_dim), dtype=np.float32)
        self.next_states = np.zeros((capacity, state_dim), dtype=np.float32)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.done = np.zeros(capacity, dtype=np.float32)
        self.size = 0
        self._next = 0

    def add(self, s: np.ndarray, a: int, r: float, s2: np.ndarray, done: bool) -> None:
        i = self._next
        self.states[i], self.actions[i], self.rewards[i] = s, a, r
        self.next_states[i], self.done[i] = s2, float(done)
        self._next = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch: int, rng: np.random.Generator) -> tuple[torch.Tensor, ...]:
        idx = rng.integers(0, self.size, size=batch)
        return (torch.from_numpy(self.states[idx]), torch.from_numpy(self.actions[idx]),
                torch.from_numpy(self.rewards[idx]), torch.from_numpy(self.next_states[idx]),
                torch.from_numpy(self.done[idx]))


@dataclass
class TrainResult:
    network: QNetwork
    episode_rewards: list[float]
    episode_lengths: list[int]
    gradient_steps: int
    seconds: float


def greedy_action(network: QNetwork, state: np.ndarray) -> int:
    """The action of largest Q-value (ties: the first)."""
    with torch.no_grad():
        q = network(torch.from_numpy(np.asarray(state, dtype=np.float32)).unsqueeze(0))
    return int(torch.argmax(q[0]))


def _epsilon(config: DQNConfig, episode: int) -> float:
    frac = min(1.0, episode / max(1, config.eps_decay_episodes))
    return config.eps_start + frac * (config.eps_end - config.eps_start)


def train_dqn(env: Env, config: DQNConfig,
              progress: Callable[[int, float], None] | None = None) -> TrainResult:
    """Train a Double DQN on ``env`` for ``config.episodes`` episodes."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    start = time.perf_counter()
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            return _train(env, config, progress, start)
    finally:
        torch.set_num_threads(threads)


def _train(env: Env, config: DQNConfig, progress: Callable[[int, float], None] | None,
           start: float) -> TrainResult:
    rng = np.random.Generator(np.random.PCG64(config.seed))
    online = QNetwork(env.state_dim, env.n_actions, config.hidden)
    target = QNetwork(env.state_dim, env.n_actions, config.hidden)
    target.load_state_dict(online.state_dict())
    optimiser = torch.optim.Adam(online.parameters(), lr=config.lr)
    replay = ReplayBuffer(config.replay, env.state_dim)
    rewards, lengths = [], []
    transitions = updates = 0
    for episode in range(config.episodes):
        eps = _epsilon(config, episode)
        state = env.reset(rng)
        total, length, done = 0.0, 0, False
        while not done:
            if rng.random() < eps:
                action = int(rng.integers(env.n_actions))
            else:
                action = greedy_action(online, state)
            nxt, reward, done = env.step(action)
            replay.add(state, action, reward, nxt, done)
            state = nxt
            total += reward
            length += 1
            transitions += 1
            if (transitions >= config.warmup and replay.size >= config.batch_size
                    and transitions % config.train_every == 0):
                _update(online, target, optimiser, replay.sample(config.batch_size, rng),
                        config)
                updates += 1
                if updates % config.target_sync == 0:
                    target.load_state_dict(online.state_dict())
        rewards.append(total)
        lengths.append(length)
        if progress is not None:
            progress(episode, total)
    return TrainResult(online, rewards, lengths, updates, time.perf_counter() - start)


def _update(online: QNetwork, target: QNetwork, optimiser: torch.optim.Optimizer,
            batch: tuple[torch.Tensor, ...], config: DQNConfig) -> None:
    s, a, r, s2, done = batch
    with torch.no_grad():
        best = online(s2).argmax(dim=1, keepdim=True)
        y = r + config.gamma * (1.0 - done) * target(s2).gather(1, best).squeeze(1)
    q = online(s).gather(1, a.unsqueeze(1)).squeeze(1)
    loss = nn.functional.smooth_l1_loss(q, y)
    optimiser.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(online.parameters(), config.grad_clip)
    optimiser.step()


def save_policy(path: Path, network: QNetwork, metadata: Mapping[str, Any]) -> None:
    """Write the network's state dict and ``metadata`` (JSON-like values) atomically."""
    path = Path(path)
    first = network.layers[0]
    hidden = [m.out_features for m in network.layers if isinstance(m, nn.Linear)][:-1]
    meta = {**dict(metadata), "state_dim": int(first.in_features),
            "n_actions": int(network.layers[-1].out_features), "hidden": hidden}
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.close(fd)
    try:
        torch.save({"state_dict": network.state_dict(), "metadata": meta}, tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_policy(path: str | Path) -> tuple[QNetwork, dict[str, Any]]:
    """A policy file back as a network (``weights_only=True``) and its metadata."""
    path = Path(path)
    try:
        data = torch.load(path, weights_only=True, map_location="cpu")
        meta = dict(data["metadata"])
        network = QNetwork(int(meta["state_dim"]), int(meta["n_actions"]), meta["hidden"])
        network.load_state_dict(data["state_dict"])
    except Exception as exc:  # any unreadable file is one message
        raise InputError(f"{path}: not a readable policy file ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
    network.eval()
    return network, meta
