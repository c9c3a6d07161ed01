"""The window controller: called at every cache-rebuild boundary, it returns the next
window's size and cache-allocation template (GreenDyGNN §IV-C, §V-B).

The interface is what part 2's Double-DQN plugs into: a controller gets a
:class:`ControllerState` (whose :meth:`~ControllerState.vector` is the paper's state, 23
floats for P = 4) and returns a :class:`WindowDecision` from the action space
``WINDOWS × templates`` (32 actions for P = 4). Controllers register by subclassing
:class:`Controller` with a ``name``; ``greendygnn``'s ``controller`` option picks one.

Built here:

- ``static``: the fixed window ``W``, the uniform template and no cost weights (the
  paper's "w/o RL" ablation, and GreenDyGNN-static(16)): its caches are a function of
  the configuration alone.
- ``dqn``: a trained Double-DQN policy file (:class:`DQNController`), the heuristic
  when none is given.
- ``heuristic``: the paper's fallback threshold rule (Eq. 7, lost in the copy under
  ``../shared/papers`` and reconstructed here from its definitions — the inferred delay
  ``δ̂`` and the nominal window ``W_0`` — and from §IV-A's statement that 4 ms of delay
  moves the best window from 16 to about 8)::

      W = W_0                                    if δ̂ < δ_th
      W = pow2_floor(W_0 / (1 + ⌊δ̂ / δ_th⌋))     otherwise        (δ_th = 4 ms)

  clamped to ``WINDOWS`` — 16 → 8 at 4 ms, → 4 at 8 ms, → 2 at 16–20 ms. The template is
  biased toward the owner with the largest inferred delay when exactly one owner is
  above the threshold (single-link congestion, where the paper says the rule works) and
  uniform otherwise; the cost weights are the estimated congestion multipliers
  (:meth:`Controller.cost_weights`). With the ``cost_weights`` option off, the template
  stays uniform and the weights 1 ("w/o Cost Weights").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from commgnn.systems.greendygnn import WINDOWS

#: GreenDyGNN §IV-C1: the biased template gives 60 % of the cache to one owner.
BIAS_SHARE = 0.6
#: The heuristic's delay threshold (ms); see the module docstring.
DELAY_THRESHOLD_MS = 4.0
#: Scale of the inferred delay in the state vector (the paper's 15–25 ms upper end).
DELAY_SCALE_S = 25e-3


@dataclass(frozen=True)
class WindowDecision:
    """The next window's size, allocation template (``bias_owner`` None = uniform) and
    per-owner cost weights (``(owner, weight)`` pairs; empty = every owner weighs 1)."""

    window: int
    bias_owner: int | None = None
    weights: tuple[tuple[int, float], ...] = ()

    def __post_init__(self) -> None:
        if self.window not in WINDOWS:
            raise ValueError(f"window {self.window} is not one of {WINDOWS}")

    def reserved(self, remote_owners: Sequence[int]) -> dict[int, float]:
        """Cache share set aside per owner: ``BIAS_SHARE`` for ``bias_owner`` under the
        biased template, nothing under the uniform one (the rest of the cache always goes
        to the window's top nodes by cost-weighted count)."""
        if self.bias_owner is None:
            return {}
        if self.bias_owner not in remote_owners:
            raise ValueError(f"bias owner {self.bias_owner} is not a remote owner "
                             f"{list(remote_owners)}")
        return {self.bias_owner: BIAS_SHARE}

    def weight_of(self) -> dict[int, float]:
        return dict(self.weights)

    def to_dict(self) -> dict[str, Any]:
        return {"window": self.window, "bias_owner": self.bias_owner,
                "weights": [[o, w] for o, w in self.weights]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WindowDecision:
        return cls(int(data["window"]), None if data["bias_owner"] is None else
                   int(data["bias_owner"]),
                   tuple((int(o), float(w)) for o, w in data.get("weights", [])))


def actions(remote_owners: Sequence[int]) -> list[WindowDecision]:
    """The action space: every window with the uniform template or a bias toward one
    remote owner (8 × 4 = 32 for P = 4)."""
    templates: list[int | None] = [None, *remote_owners]
    return [WindowDecision(w, b) for w in WINDOWS for b in templates]


@dataclass
class ControllerState:
    """What a controller sees at a rebuild boundary (GreenDyGNN §IV-C1's four groups).

    Per-rank lists are indexed by rank; this worker's own entry is neutral (multiplier 1,
    hit rate 1: its rows are local). The load ratios are reconstructed where the copy lost
    their names: the stall fraction (fetch wait ÷ step time of the last window), the
    rebuild-time fraction (builder seconds ÷ window seconds), the network-miss fraction
    (misses ÷ remote accesses), the inferred delay ÷ 25 ms, and the remaining batches of
    the epoch ÷ its steps.
    """

    rank: int
    multipliers: list[float]
    owner_hit_rates: list[float]
    global_hit_rate: float
    stall_fraction: float
    rebuild_fraction: float
    miss_fraction: float
    delay_s: float
    remaining_fraction: float
    previous: WindowDecision
    delays_s: list[float] = field(default_factory=list)

    @property
    def remote_owners(self) -> list[int]:
        return [o for o in range(len(self.multipliers)) if o != self.rank]

    def vector(self) -> np.ndarray:
        """The state as float32: P multipliers, P + 1 hit rates, 5 load ratios, the
        previous window one-hot (8) and its template (the bias owner's position among the
        remote owners ÷ their count, 0 for uniform): 2P + 15 floats, the paper's 23 for
        P = 4 (its one-hot "of the previous window size and allocation" is read as 8 + 1).
        """
        loads = [self.stall_fraction, self.rebuild_fraction, self.miss_fraction,
                 min(self.delay_s / DELAY_SCALE_S, 4.0), self.remaining_fraction]
        onehot = [1.0 if w == self.previous.window else 0.0 for w in WINDOWS]
        remote = self.remote_owners
        template = (0.0 if self.previous.bias_owner is None else
                    (remote.index(self.previous.bias_owner) + 1) / max(1, len(remote)))
        values = [*self.multipliers, *self.owner_hit_rates, self.global_hit_rate, *loads,
                  *onehot, template]
        return np.asarray(values, dtype=np.float32)


class Controller:
    """Chooses the next window at each boundary. Subclasses with a ``name`` register."""

    name: ClassVar[str]
    registry: ClassVar[dict[str, type[Controller]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" in cls.__dict__:
            Controller.registry[cls.name] = cls

    def __init__(self, window: int, options: dict[str, Any] | None = None) -> None:
        if window not in WINDOWS:
            raise ValueError(f"window {window} is not one of {WINDOWS}")
        self.nominal = int(window)
        self.options = dict(options or {})

    def cost_weights(self, state: ControllerState) -> tuple[tuple[int, float], ...]:
        """The remote owners' congestion multipliers, rounded to 3 decimals (so a window's
        content is a function of the decision), or none when the ``cost_weights`` option
        is off (the paper's "w/o Cost Weights" ablation)."""
        if not self.options.get("cost_weights", True):
            return ()
        return tuple((o, round(float(state.multipliers[o]), 3)) for o in state.remote_owners)

    def initial(self) -> WindowDecision:
        """The first window (before any observation): the nominal window, uniform."""
        return WindowDecision(self.nominal)

    def decide(self, state: ControllerState) -> WindowDecision:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (stateless controllers keep nothing)."""


class StaticController(Controller):
    """A fixed window, uniform allocation (GreenDyGNN "w/o RL")."""

    name = "static"

    def decide(self, state: ControllerState) -> WindowDecision:
        return WindowDecision(self.nominal)


def pow2_floor(value: float) -> int:
    """The largest window in :data:`WINDOWS` not above ``value`` (at least 1)."""
    if value < 1:
        return WINDOWS[0]
    return min(WINDOWS[-1], 2 ** math.floor(math.log2(value)))


class HeuristicController(Controller):
    """GreenDyGNN's threshold rule (Eq. 7, reconstructed; module docstring)."""

    name = "heuristic"

    def decide(self, state: ControllerState) -> WindowDecision:
        threshold_s = float(self.options.get("delay_threshold_ms", DELAY_THRESHOLD_MS)) / 1e3
        delay = state.delay_s
        if delay < threshold_s:
            window = self.nominal
        else:
            window = pow2_floor(self.nominal / (1 + math.floor(delay / threshold_s)))
        delays = dict(enumerate(state.delays_s))
        above = [o for o in state.remote_owners if delays.get(o, 0.0) >= threshold_s]
        bias = above[0] if len(above) == 1 and self.options.get("cost_weights", True) \
            else None
        return WindowDecision(window, bias, self.cost_weights(state))


class DQNController(Controller):
    """A trained Double-DQN policy (part 2, :mod:`commgnn.systems.greendygnn.policy`): the greedy
    action for the state vector. Options: ``policy`` (the ``policy.pt`` path; without one
    the heuristic decides, and :attr:`fallback` says so) and ``cost_weights`` (off: only
    uniform templates are allowed and the weights are 1 — "w/o Cost Weights")."""

    name = "dqn"

    def __init__(self, window: int, options: dict[str, Any] | None = None) -> None:
        super().__init__(window, options)
        path = self.options.get("policy")
        self.fallback: HeuristicController | None = None
        self.network = None
        if not path:
            self.fallback = HeuristicController(window, options)
            return
        from commgnn.systems.greendygnn.dqn import load_policy  # deferred: imports torch

        self.network, self.metadata = load_policy(path)
        if list(self.metadata.get("windows", WINDOWS)) != list(WINDOWS):
            raise ValueError(f"{path}: policy windows {self.metadata.get('windows')} are not "
                             f"{list(WINDOWS)}")

    def decide(self, state: ControllerState) -> WindowDecision:
        if self.fallback is not None:
            return self.fallback.decide(state)
        import torch  # deferred: imports torch

        world = len(state.multipliers)
        if int(self.metadata["world"]) != world:
            raise ValueError(f"{self.options.get('policy')}: policy trained for "
                             f"{self.metadata['world']} workers, the run has {world}")
        with torch.no_grad():
            q = self.network(torch.from_numpy(state.vector()).unsqueeze(0))[0]
        choices = actions(state.remote_owners)
        if not self.options.get("cost_weights", True):
            q = q.clone()
            q[[i for i, d in enumerate(choices) if d.bias_owner is not None]] = -float("inf")
        chosen = choices[int(torch.argmax(q))]
        return WindowDecision(chosen.window, chosen.bias_owner, self.cost_weights(state))


def make_controller(name: str, window: int, options: dict[str, Any] | None = None
                    ) -> Controller:
    """The registered controller ``name`` with nominal window ``window``."""
    try:
        cls = Controller.registry[name]
    except KeyError:
        raise ValueError(f"unknown controller {name!r}; known: "
                         f"{sorted(Controller.registry)}") from None
    return cls(window, options)
