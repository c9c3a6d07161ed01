"""Per-owner congestion estimates from recent fetch round trips (GreenDyGNN §V-B, Eq. 8).

The rule (the paper's, with the lost equation reconstructed):

- **Baseline.** During the first ``warmup_epochs`` epochs (the paper: two; its congestion
  schedule keeps epochs 0–2 clean) every fetch round trip to owner ``o`` is kept; when the
  first sample of a later epoch arrives, the baseline ``T_base,o`` is frozen as the 15th
  percentile of them. A low quantile, not the mean: it is the uncongested round trip
  without the tail of OS jitter, thread scheduling and NIC queueing, yet not the single
  luckiest sample (the minimum would under-estimate every later round trip).
- **Current.** ``T̃_o`` is the median of the 30 most recent round trips to ``o``. The
  median ignores isolated outliers (a garbage-collection pause, one large response) and
  30 samples span a few windows, so it follows a congestion change within a window or two.
- **Delay (Eq. 8, reconstructed).** Eq. 4 models a round trip as
  ``T = α + β·N·F_b + γ·N·F_b·δ + δ`` (``δ`` the injected one-way delay, in ms inside the
  γ term); the baseline is the ``δ = 0`` round trip, so inverting at the median payload
  ``b̃ = N·F_b`` gives ``δ̂_o = (T̃_o − T_base,o) / (1 + γ·b̃·1000)`` seconds, clamped to
  0 when negative. With ``γ = 0`` (the default network) this is ``T̃_o − T_base,o``.
- **Multiplier.** ``λ_o = T̃_o / T_base,o`` (≥ 0; 1 on a clean link): the state's per-owner
  congestion multiplier and the cache builder's cost weight.

Times are *target* seconds: the caller divides measured (dilated) round trips by the time
dilation factor. An owner never fetched from has ``λ = 1``, ``δ̂ = 0``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: GreenDyGNN §V-B: "During the first two warm-up epochs …".
WARMUP_EPOCHS = 2
#: GreenDyGNN §V-B: the baseline is "the 15th percentile of observed fetch times".
BASELINE_QUANTILE = 0.15
#: GreenDyGNN §V-B: "the median of the 30 most recent fetch times".
RECENT = 30


@dataclass(frozen=True)
class CongestionEstimate:
    """Per-owner multipliers ``λ_o`` and inferred one-way delays ``δ̂_o`` (seconds)."""

    multipliers: dict[int, float]
    delays_s: dict[int, float]

    @property
    def delay_s(self) -> float:
        """The largest inferred delay (the congestion the heuristic reacts to)."""
        return max(self.delays_s.values(), default=0.0)

    @property
    def most_congested(self) -> int | None:
        """The owner with the largest inferred delay (``None`` when none is delayed)."""
        delayed = {o: d for o, d in self.delays_s.items() if d > 0}
        return max(sorted(delayed), key=delayed.__getitem__) if delayed else None


class CongestionEstimator:
    """Warm-up baseline + rolling median per owner; see the module docstring."""

    def __init__(self, owners: Sequence[int], *, warmup_epochs: int = WARMUP_EPOCHS,
                 baseline_quantile: float = BASELINE_QUANTILE, recent: int = RECENT,
                 gamma_s_per_byte_ms: float = 0.0) -> None:
        if warmup_epochs < 1 or recent < 1 or not 0 <= baseline_quantile <= 1:
            raise ValueError("need warmup_epochs >= 1, recent >= 1, 0 <= quantile <= 1")
        self.owners = tuple(int(o) for o in owners)
        self.warmup_epochs = int(warmup_epochs)
        self.baseline_quantile = float(baseline_quantile)
        self.recent_n = int(recent)
        self.gamma = float(gamma_s_per_byte_ms)
        self._warmup: dict[int, list[float]] = {o: [] for o in self.owners}
        self.baseline_s: dict[int, float] | None = None
        self._recent: dict[int, deque[tuple[float, int]]] = {
            o: deque(maxlen=self.recent_n) for o in self.owners}

    @property
    def warm(self) -> bool:
        """Whether the baseline is frozen (a sample after the warm-up arrived)."""
        return self.baseline_s is not None

    def record(self, epoch: int, owner: int, rtt_s: float, response_bytes: int) -> None:
        """One fetch round trip to ``owner`` (target seconds) carrying ``response_bytes``."""
        if owner not in self._recent:
            raise KeyError(f"owner {owner} is not one of {self.owners}")
        if epoch < self.warmup_epochs:
            if self.baseline_s is None:
                self._warmup[owner].append(float(rtt_s))
        elif self.baseline_s is None:
            self._freeze()
        self._recent[owner].append((float(rtt_s), int(response_bytes)))

    def _freeze(self) -> None:
        self.baseline_s = {o: float(np.quantile(v, self.baseline_quantile))
                           for o, v in self._warmup.items() if v}
        self._warmup = {o: [] for o in self.owners}

    def estimate(self) -> CongestionEstimate:
        """λ and δ̂ per owner from the samples so far (all 1 and 0 before the warm-up
        ends)."""
        multipliers = dict.fromkeys(self.owners, 1.0)
        delays = dict.fromkeys(self.owners, 0.0)
        if self.baseline_s is None:
            return CongestionEstimate(multipliers, delays)
        for owner in self.owners:
            base, window = self.baseline_s.get(owner), self._recent[owner]
            if base is None or not window:
                continue
            rtts = np.array([r for r, _ in window])
            current = float(np.median(rtts))
            payload = float(np.median([b for _, b in window]))
            multipliers[owner] = current / base if base > 0 else 1.0
            delays[owner] = max(0.0, (current - base) / (1.0 + self.gamma * payload * 1e3))
        return CongestionEstimate(multipliers, delays)

    # -- checkpoints ---------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"baseline_s": None if self.baseline_s is None else
                {str(o): v for o, v in self.baseline_s.items()},
                "warmup": {str(o): list(v) for o, v in self._warmup.items()},
                "recent": {str(o): [list(x) for x in d] for o, d in self._recent.items()}}

    def load_state_dict(self, state: dict) -> None:
        base = state["baseline_s"]
        self.baseline_s = None if base is None else {int(o): float(v) for o, v in base.items()}
        self._warmup = {o: [float(x) for x in state["warmup"].get(str(o), [])]
                        for o in self.owners}
        for o in self.owners:
            self._recent[o].clear()
            self._recent[o].extend((float(r), int(b)) for r, b in state["recent"].get(str(o), []))
