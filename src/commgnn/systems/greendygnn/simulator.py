"""GreenDyGNN's calibrated simulator (§IV-B, §IV-C): whole training runs ("episodes") in
microseconds, for evaluating decision sequences and training the Double-DQN policy.

An episode is ``epochs × steps`` steps under a congestion *profile*: one node-delay
vector per epoch (target seconds, indexed by machine). Windows cross epochs exactly as in
:mod:`commgnn.systems.greendygnn.system`: window ``k`` covers ``W_k`` steps from where window
``k − 1`` ended, and the decision taken on entering window ``k`` sets window ``k + 1``
(the one-window lag). Per-step time and energy come from :class:`CostModel` tables per
(epoch, action), summed over each window's steps with cumulative sums, so an episode costs
a few array operations per window.

Domain randomisation (:func:`random_profile`): six archetypes (clean, single link slow,
single link fast, two links symmetric, two links asymmetric, oscillating) × three
severities, random onset and duration, on random machines; observations carry
multiplicative measurement noise and rewards an energy-measurement noise. "Slow" and
"fast" single-link congestion are read as a long steady episode of delay and short
bursts (one to two epochs) respectively — the copy of the paper names them only.

Reward (Eq. 5, reconstructed): for the window just run, ``−Σ_steps (E_g / E_ref,g − 1) −
c·[a_k ≠ a_{k−1}]``, with ``E_ref,g`` the step's energy under the reference policy
(``W_0`` uniform) in the same congestion: the normalised energy (scale-invariant across
episode difficulty, as the paper's) minus its reference value of 1 per step, so the
reference policy's return is 0 and an episode's return is minus its excess normalised
energy, whatever the number of decisions — in units of one reference window (÷ ``W_0``,
so values stay near the Huber loss's quadratic range); ``c`` is the switching penalty.
The transition reports its window's length (``last_span``) so the DQN discounts per
training step (a semi-MDP): with a discount per *decision*, short windows would spread
their cost over more, more discounted decisions and look cheaper than they are.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from commgnn.systems.greendygnn.controller import WINDOWS, ControllerState, WindowDecision
from commgnn.systems.greendygnn.costmodel import CostModel

ARCHETYPES = ("clean", "single-slow", "single-fast", "two-symmetric", "two-asymmetric",
              "oscillating")
#: Delay severities (ms): mild, the paper's 15–25 ms band's middle, its upper end.
SEVERITIES_MS = (5.0, 15.0, 25.0)


def random_profile(rng: np.random.Generator, epochs: int, world: int,
                   archetype: str | None = None, severities_ms: Sequence[float] =
                   SEVERITIES_MS) -> tuple[np.ndarray, str]:
    """A node-delay table ``[epochs, world]`` (seconds) drawn from one archetype (random
    unless given), and the archetype's name."""
    name = archetype or ARCHETYPES[int(rng.integers(len(ARCHETYPES)))]
    table = np.zeros((epochs, world))
    if name == "clean" or world < 2 or epochs < 1:
        return table, name
    severity = float(severities_ms[int(rng.integers(len(severities_ms)))]) * 1e-3
    onset = int(rng.integers(0, max(1, epochs // 2)))
    duration = int(rng.integers(1, epochs - onset + 1))
    nodes = rng.permutation(world)
    span = slice(onset, onset + duration)
    if name == "single-slow":
        table[span, nodes[0]] = severity
    elif name == "single-fast":
        burst = int(rng.integers(1, 3))
        table[onset:onset + burst, nodes[0]] = severity
    elif name == "two-symmetric":
        table[span, nodes[:2]] = severity
    elif name == "two-asymmetric":
        table[span, nodes[0]] = severity
        table[span, nodes[1]] = severity / 2
    elif name == "oscillating":
        period = int(rng.integers(1, 4))
        on = ((np.arange(epochs) - onset) // period) % 2 == 0
        table[(np.arange(epochs) >= onset) & on, nodes[0]] = severity
    else:
        raise ValueError(f"unknown archetype {name!r}; have {ARCHETYPES}")
    return table, name


@dataclass
class Episode:
    """What one simulated run did: per window its start, size, action; per step time and
    energy."""

    starts: list[int]
    actions: list[int]
    step_s: np.ndarray
    energy_j: np.ndarray

    @property
    def time_s(self) -> float:
        return float(self.step_s.sum())

    @property
    def total_energy_j(self) -> float:
        return float(self.energy_j.sum())

    def windows_per_epoch(self, steps: int, model: CostModel) -> list[float]:
        """Mean window size per epoch (over steps), as Figure 7 plots it."""
        epochs = len(self.step_s) // steps
        per_step = np.zeros(len(self.step_s))
        ends = [*self.starts[1:], len(self.step_s)]
        for start, end, a in zip(self.starts, ends, self.actions, strict=True):
            per_step[start:end] = WINDOWS[a // model.world]
        return [float(per_step[e * steps:(e + 1) * steps].mean()) for e in range(epochs)]


class Simulator:
    """Episodes of one calibrated workload (see the module docstring)."""

    def __init__(self, model: CostModel, epochs: int, agent: int = 0,
                 reference_window: int = 16) -> None:
        self.model = model
        self.epochs = int(epochs)
        self.steps = model.steps
        self.total = self.epochs * self.steps
        self.agent = int(agent)
        self.n_actions = len(WINDOWS) * model.world
        self.reference = model.action(WINDOWS.index(reference_window), 0)
        self._profile: np.ndarray | None = None

    def load(self, profile: np.ndarray) -> None:
        """Tables for a node-delay profile ``[epochs, P]``: per-step time, energy and
        reference energy, as cumulative sums over the episode's steps per action."""
        profile = np.asarray(profile, dtype=float)
        if profile.shape != (self.epochs, self.model.world):
            raise ValueError(f"profile shape {profile.shape}, expected "
                             f"{(self.epochs, self.model.world)}")
        self._profile = profile
        unique, inverse = np.unique(profile, axis=0, return_inverse=True)
        costs = [self.model.costs(row, self.agent) for row in unique]
        step = np.stack([c.step_s for c in costs])[inverse.reshape(-1)]  # [E, A]
        energy = np.stack([c.energy_j for c in costs])[inverse.reshape(-1)]
        self.epoch_costs = [costs[i] for i in inverse.reshape(-1)]
        self.step_table, self.energy_table = step, energy  # per epoch [E, A]
        self.ratio_table = energy / energy[:, [self.reference]]
        # cumulative per epoch boundary; within an epoch every step costs the same
        zero = np.zeros((1, self.n_actions))
        self._cum = {name: np.vstack([zero, np.cumsum(table * self.steps, axis=0)])
                     for name, table in (("t", step), ("e", energy),
                                         ("ratio", self.ratio_table))}

    def cumulative(self, name: str, g: int, action: int) -> float:
        """Sum over steps ``0 … g−1`` of the step's ``t`` (seconds), ``e`` (joules) or
        ``ratio`` (energy ÷ the reference's) under a constant ``action``."""
        table = {"t": self.step_table, "e": self.energy_table, "ratio": self.ratio_table}
        epoch = min(g // self.steps, self.epochs - 1)
        return float(self._cum[name][epoch, action]
                     + (g - epoch * self.steps) * table[name][epoch, action])

    def span(self, name: str, start: int, end: int, action: int) -> float:
        """Sum over steps ``start … end−1`` (see :meth:`cumulative`)."""
        return self.cumulative(name, end, action) - self.cumulative(name, start, action)

    def window_end(self, start: int, action: int) -> int:
        return min(self.total, start + WINDOWS[action // self.model.world])

    def episode(self, profile: np.ndarray, actions: Sequence[int] | Callable[[int, int], int]
                ) -> Episode:
        """Run a whole episode: ``actions`` is the per-window action sequence (the last
        repeated when short) or ``f(window_index, start_step) → action``."""
        self.load(profile)
        starts, chosen = [], []
        start, k = 0, 0
        while start < self.total:
            if callable(actions):
                a = int(actions(k, start))
            else:
                a = int(actions[min(k, len(actions) - 1)])
            starts.append(start)
            chosen.append(a)
            start = self.window_end(start, a)
            k += 1
        lengths = np.diff([*starts, self.total])
        per_step = np.repeat(np.asarray(chosen), lengths)
        epoch = np.arange(self.total) // self.steps
        t = self.step_table[epoch, per_step]
        e = self.energy_table[epoch, per_step]
        return Episode(starts, chosen, t, e)

    def static_energy(self, profile: np.ndarray) -> np.ndarray:
        """Total energy of every constant action over the profile ([A])."""
        self.load(profile)
        return self._cum["e"][-1]


class SimEnv:
    """The simulator as a Double-DQN environment (:class:`commgnn.systems.greendygnn.dqn.Env`):
    one decision per window boundary, the state of
    :meth:`~commgnn.systems.greendygnn.controller.ControllerState.vector`, domain-randomised
    profiles and agents."""

    def __init__(self, model: CostModel, epochs: int, *, reference_window: int = 16,
                 switch_penalty: float = 0.001, obs_noise: float = 0.05,
                 energy_noise: float = 0.02, archetypes: Sequence[str] = ARCHETYPES,
                 severities_ms: Sequence[float] = SEVERITIES_MS) -> None:
        self.model = model
        self.sims = [Simulator(model, epochs, agent=r, reference_window=reference_window)
                     for r in range(model.world)]
        self.state_dim = 2 * model.world + 7 + len(WINDOWS)
        self.n_actions = len(WINDOWS) * model.world
        self.switch_penalty = float(switch_penalty)
        self.obs_noise = float(obs_noise)
        self.energy_noise = float(energy_noise)
        self.archetypes = tuple(archetypes)
        self.severities_ms = tuple(severities_ms)
        self.initial = model.action(WINDOWS.index(reference_window), 0)
        self.reward_scale = float(reference_window)
        self.archetype = ""
        self.last_span = 1

    def reset(self, rng: np.random.Generator, profile: np.ndarray | None = None,
              agent: int | None = None) -> np.ndarray:
        self.rng = rng
        self.agent = int(rng.integers(self.model.world)) if agent is None else int(agent)
        self.sim = self.sims[self.agent]
        if profile is None:
            name = self.archetypes[int(rng.integers(len(self.archetypes)))]
            profile, self.archetype = random_profile(rng, self.sim.epochs, self.model.world,
                                                     name, self.severities_ms)
        self.sim.load(profile)
        # window 0 runs with the nominal decision; the first decision sets window 1 (the
        # real system decides it from an empty observation; here window 0's is shown)
        self.active = self.initial
        self.start = 0
        return self._observe(self.active, 0, self.sim.window_end(0, self.active), self.active)

    def _observe(self, action: int, start: int, end: int, active: int) -> np.ndarray:
        """The state at the boundary after window ``[start, end)`` ran with ``action``,
        entering a window whose decision is ``active``."""
        model, sim, rng = self.model, self.sim, self.rng
        P, r = model.world, self.agent
        g = min(end, sim.total - 1)
        costs = sim.epoch_costs[min((max(end, 1) - 1) // sim.steps, sim.epochs - 1)]
        wi, ti = divmod(action, P)
        noise = (lambda n: 1.0 + self.obs_noise * rng.standard_normal(n)) \
            if self.obs_noise else (lambda n: np.ones(n))
        extra = costs.agent_fetch_extra_s[action]
        base = model.base_rtt[r, :, wi]
        multipliers = np.where(np.arange(P) == r, 1.0,
                               (base + extra) / np.maximum(base, 1e-9)) * noise(P)
        delays = np.maximum(0.0, extra / model.kappa if model.kappa > 0 else extra) * noise(P)
        delays[r] = 0.0
        multipliers[r] = 1.0
        rates = model.hit_rate[r, wi, ti].copy()
        rates[r] = 1.0
        remote = model.remote[r].sum() - model.remote[r, r]
        hits = (model.remote[r] - model.miss[r, wi, ti]).sum() - model.remote[r, r]
        global_rate = hits / remote if remote > 0 else 1.0
        span = max(1, end - start)
        window_s = sim.span("t", start, end, action)
        step_s = window_s / span
        stall = max(0.0, step_s - model.busy_s) / step_s if step_s > 0 else 0.0
        # the build of the window entered now ran during the window that just ran
        rebuild = costs.agent_rebuild_s[active] / window_s if window_s > 0 else 0.0
        awi, ati = divmod(active, P)
        decision = WindowDecision(WINDOWS[awi], None if ati == 0 else
                                  [o for o in range(P) if o != r][ati - 1])
        state = ControllerState(
            rank=r, multipliers=multipliers.tolist(),
            owner_hit_rates=np.clip(rates * noise(P), 0, 1).tolist(),
            global_hit_rate=float(global_rate), stall_fraction=float(stall),
            rebuild_fraction=float(rebuild), miss_fraction=float(1 - global_rate),
            delay_s=float(delays.max()), remaining_fraction=(sim.steps - g % sim.steps)
            / sim.steps, previous=decision, delays_s=delays.tolist())
        return state.vector()

    def step(self, action: int) -> tuple[np.ndarray, float, bool]:
        """``action`` sets the window after the one about to run; that one (decided at the
        previous boundary) runs now. Returns the next boundary's state, the window's
        reward and whether the run ended."""
        sim = self.sim
        start, ran = self.start, self.active
        end = sim.window_end(start, ran)
        ratio = sim.span("ratio", start, end, ran)
        if self.energy_noise:
            ratio *= 1.0 + self.energy_noise * self.rng.standard_normal()
        excess = (float(ratio) - (end - start)) / self.reward_scale
        reward = -excess - self.switch_penalty * float(action != ran)
        self.start, self.active, self.last_span = end, int(action), end - start
        return self._observe(ran, start, end, self.active), reward, end >= sim.total


def time_episode(sim: Simulator, profile: np.ndarray, action: int, repeats: int = 200
                 ) -> float:
    """Mean seconds of one whole episode (tables + the window walk) at a constant action."""
    t0 = time.perf_counter()
    for _ in range(repeats):
        sim.episode(profile, [action])
    return (time.perf_counter() - t0) / repeats
