"""Double DQN (GreenDyGNN §IV-C2), generic over an environment, deterministic under a
seed.

The paper's hyper-parameters are the defaults of :class:`DQNConfig`: a Q-network with two
hidden layers of 256 ReLU units, a replay buffer of 50,000 transitions, mini-batches of
64, a hard target-network sync every 100 gradient steps, the Huber loss on the Double-DQN
target ``y = r + γ·(1 − done)·Q_target(s', argmax_a Q_online(s', a))``, gradient-norm
clipping at 10, Adam and ε-greedy exploration decaying linearly per episode. Not in the
copy of the paper and chosen here: the learning rate (1e-3), ε's end point (0.05) and
decay length, the warm-up before the first update and the discount γ (0.99).

Semi-MDP: a transition that covers ``span`` time steps (an environment's ``last_span``,
e.g. a cache window of ``W`` training steps) is discounted by ``γ^span``, so decisions
that last longer are not favoured or penalised by the discount alone.

Determinism: the networks are initialised inside ``torch.random.fork_rng`` from the CPU
generator seeded with ``config.seed`` (the caller's torch RNG is untouched), training runs
on one thread (``torch.set_num_threads(1)``, restored afterwards: the paper trains on one
core, and one thread keeps the floating-point reductions in a fixed order), and every
other draw (ε-greedy, replay sampling, ``env.reset``) comes from one ``numpy`` PCG64
generator of the same seed: same environment and config ⇒ the same weights and rewards,
bit for bit (on one machine and torch build).

Speed: the replay buffer is preallocated ``numpy``, exploration acts through the online
network's weights directly (no module dispatch, no autograd), and updates use the fused
Adam kernel and a foreach gradient-norm clip. A gradient step (batch 64, 256 × 256) is
still one to a few milliseconds of matrix products on one core, so ``train_every`` sets
most of a run's time.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from torch import nn

from commgnn.core.errors import InputError


class Env(Protocol):
    """What :func:`train_dqn` needs of an environment."""

    state_dim: int
    n_actions: int

    def reset(self, rng: np.random.Generator) -> np.ndarray: ...

    # optional: ``last_span`` — how many time steps the last transition covered (a
    # semi-MDP: the target discounts by γ^span); 1 when the environment has none

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

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))
        positive = ("batch_size", "replay", "target_sync", "train_every")
        bad = [n for n in positive if int(getattr(self, n)) < 1]
        bad += [n for n in ("episodes", "warmup", "eps_decay_episodes")
                if int(getattr(self, n)) < 0]
        bad += [] if all(h >= 1 for h in self.hidden) else ["hidden"]
        bad += [] if 0.0 <= self.gamma <= 1.0 else ["gamma"]
        bad += [] if self.lr > 0 and self.grad_clip > 0 else ["lr/grad_clip"]
        if bad:
            raise ValueError(f"DQN config: invalid {', '.join(bad)} in {self}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DQNConfig:
        """The config from a mapping (lists become tuples); an unknown key is an error."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"DQN config: unknown key(s) {', '.join(map(repr, unknown))}; "
                             f"known: {', '.join(sorted(names))}")
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-like values (``hidden`` as a list); ``from_dict`` inverts it."""
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
    """A ring of the last ``capacity`` transitions ``(s, a, r, s', done)`` in preallocated
    ``numpy`` arrays; :meth:`sample` draws uniformly with replacement as torch tensors."""

    def __init__(self, capacity: int, state_dim: int) -> None:
        self.capacity = int(capacity)
        self.states = np.zeros((capacity, state_dim), dtype=np.float32)
        self.next_states = np.zeros((capacity, state_dim), dtype=np.float32)
        self.actions = np.zeros(capacity, dtype=np.int64)
        self.rewards = np.zeros(capacity, dtype=np.float32)
        self.done = np.zeros(capacity, dtype=np.float32)
        self.spans = np.ones(capacity, dtype=np.float32)
        self.size = 0
        self._next = 0

    def add(self, s: np.ndarray, a: int, r: float, s2: np.ndarray, done: bool,
            span: int = 1) -> None:
        i = self._next
        self.states[i], self.actions[i], self.rewards[i] = s, a, r
        self.next_states[i], self.done[i], self.spans[i] = s2, float(done), float(span)
        self._next = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, batch: int, rng: np.random.Generator) -> tuple[torch.Tensor, ...]:
        idx = rng.integers(0, self.size, size=batch)
        return (torch.from_numpy(self.states[idx]), torch.from_numpy(self.actions[idx]),
                torch.from_numpy(self.rewards[idx]), torch.from_numpy(self.next_states[idx]),
                torch.from_numpy(self.done[idx]), torch.from_numpy(self.spans[idx]))


@dataclass
class TrainResult:
    """The trained online network, the learning curve (total reward and length per
    episode), the number of gradient steps and the wall time."""

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
    """ε for ``episode``: linear from ``eps_start`` (episode 0) to ``eps_end`` (episode
    ``eps_decay_episodes`` and after)."""
    frac = min(1.0, episode / max(1, config.eps_decay_episodes))
    return config.eps_start + frac * (config.eps_end - config.eps_start)


def _fast_greedy(network: QNetwork) -> Callable[[np.ndarray], int]:
    """:func:`greedy_action` through the network's weight tensors (the same ``addmm``
    ops as ``nn.Linear``, hence the same action) without module dispatch or autograd;
    it follows the in-place optimiser updates."""
    linear = [m for m in network.layers if isinstance(m, nn.Linear)]
    weights = [(m.weight.detach().t(), m.bias.detach()) for m in linear]
    hidden, (w_out, b_out) = weights[:-1], weights[-1]

    def act(state: np.ndarray) -> int:
        x = torch.from_numpy(np.asarray(state, dtype=np.float32)).unsqueeze(0)
        with torch.no_grad():
            for w, b in hidden:
                x = torch.addmm(b, x, w).relu_()
            return int(torch.addmm(b_out, x, w_out).argmax())

    return act


def train_dqn(env: Env, config: DQNConfig,
              progress: Callable[[int, float], None] | None = None) -> TrainResult:
    """Train a Double DQN on ``env`` for ``config.episodes`` episodes, on one thread
    (restored afterwards), deterministically (module docstring); ``progress(episode,
    total_reward)`` is called after each episode."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    start = time.perf_counter()
    try:
        with torch.random.fork_rng(devices=[]):
            torch.default_generator.manual_seed(config.seed)
            return _train(env, config, progress, start)
    finally:
        torch.set_num_threads(threads)


def _train(env: Env, config: DQNConfig, progress: Callable[[int, float], None] | None,
           start: float) -> TrainResult:
    rng = np.random.Generator(np.random.PCG64(config.seed))
    online = QNetwork(env.state_dim, env.n_actions, config.hidden)
    target = QNetwork(env.state_dim, env.n_actions, config.hidden)
    target.load_state_dict(online.state_dict())
    optimiser = torch.optim.Adam(online.parameters(), lr=config.lr, fused=True)
    act = _fast_greedy(online)
    replay = ReplayBuffer(config.replay, env.state_dim)
    rewards: list[float] = []
    lengths: list[int] = []
    transitions = updates = 0
    for episode in range(config.episodes):
        eps = _epsilon(config, episode)
        state = env.reset(rng)
        total, length, done = 0.0, 0, False
        while not done:
            action = int(rng.integers(env.n_actions)) if rng.random() < eps else act(state)
            nxt, reward, done = env.step(action)
            replay.add(state, action, reward, nxt, done, getattr(env, "last_span", 1))
            state = nxt
            total += float(reward)
            length += 1
            transitions += 1
            if (transitions >= config.warmup and replay.size >= config.batch_size
                    and transitions % config.train_every == 0):
                _update(online, target, optimiser, replay.sample(config.batch_size, rng),
                        config)
                updates += 1
                if updates % config.target_sync == 0:
                    target.load_state_dict(online.state_dict())
        rewards.append(float(total))
        lengths.append(length)
        if progress is not None:
            progress(episode, total)
    return TrainResult(online, rewards, lengths, updates, time.perf_counter() - start)


def _update(online: QNetwork, target: QNetwork, optimiser: torch.optim.Optimizer,
            batch: tuple[torch.Tensor, ...], config: DQNConfig) -> None:
    """One gradient step on the Huber loss to the Double-DQN target (module docstring)."""
    s, a, r, s2, done, *rest = batch
    discount = config.gamma ** rest[0] if rest else config.gamma
    with torch.no_grad():
        best = online(s2).argmax(dim=1, keepdim=True)
        y = r + discount * (1.0 - done) * target(s2).gather(1, best).squeeze(1)
    q = online(s).gather(1, a.unsqueeze(1)).squeeze(1)
    loss = nn.functional.smooth_l1_loss(q, y)
    optimiser.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(online.parameters(), config.grad_clip, foreach=True)
    optimiser.step()


def _plain(value: Any, key: str) -> Any:
    """``value`` as plain JSON-like types (tuples become lists, numpy scalars and
    subclasses their base type), or a ValueError naming ``key``: ``weights_only`` loading
    refuses anything else."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or type(value) in (bool, int, float, str):
        return value
    for base in (bool, int, float, str):
        if isinstance(value, base):
            return base(value)
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{key}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise ValueError(f"policy metadata {key}: keys must be strings")
        return {k: _plain(v, f"{key}.{k}") for k, v in value.items()}
    raise ValueError(f"policy metadata {key}: {type(value).__name__} is not a plain "
                     "JSON-like value")


def save_policy(path: Path, network: QNetwork, metadata: Mapping[str, Any]) -> None:
    """Write ``{"state_dict", "metadata"}`` to ``path`` atomically (a temporary sibling,
    then ``os.replace``). ``metadata`` must hold plain JSON-like values; the network's
    ``state_dim``, ``n_actions`` and ``hidden`` are added for :func:`load_policy`."""
    path = Path(path)
    linear = [m for m in network.layers if isinstance(m, nn.Linear)]
    meta = {str(k): _plain(v, str(k)) for k, v in metadata.items()}
    meta.update(state_dim=int(linear[0].in_features), n_actions=int(linear[-1].out_features),
                hidden=[int(m.out_features) for m in linear[:-1]])
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        torch.save({"state_dict": network.state_dict(), "metadata": meta}, tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def load_policy(path: str | Path) -> tuple[QNetwork, dict[str, Any]]:
    """A :func:`save_policy` file back as an eval-mode network (loaded with
    ``weights_only=True``) and its metadata; an unreadable file is an InputError."""
    path = Path(path)
    try:
        data = torch.load(path, weights_only=True, map_location="cpu")
        meta = dict(data["metadata"])
        network = QNetwork(int(meta["state_dim"]), int(meta["n_actions"]), meta["hidden"])
        network.load_state_dict(data["state_dict"])
    except Exception as exc:  # any unreadable file is one message
        detail = (str(exc).splitlines() or [""])[0][:200]
        raise InputError(f"{path}: not a readable policy file ({type(exc).__name__}: "
                         f"{detail})") from None
    network.eval()
    return network, meta
