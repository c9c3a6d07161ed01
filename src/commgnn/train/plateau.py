"""The validation-plateau rule: how much a run's last evaluations raised its best
validation accuracy (``val_gain_last3``) and whether that ends the run
(``training.stop_at_plateau``).

Standard library only: the DistDGL trainer, which runs in its own environment without
commgnn installed, loads this file by its path, so both trainers stop by one rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: The evaluations the rule looks back over.
WINDOW = 3
#: Slack of the comparison with the bound: accuracies are ratios of counts, so a gain equal
#: to the bound can come out of the subtraction a rounding above it (0.71 − 0.70 > 0.01).
EPSILON = 1e-9


def gain_of_last(val_accs: Sequence[float], window: int = WINDOW) -> float:
    """How much the last ``window`` evaluations (in epoch order) raised the best validation
    accuracy over the ones before: the best of all minus the best before them (0 or below:
    none of them beat it). NaN with ``window`` or fewer evaluations."""
    before = list(val_accs[:-window])
    if not before:
        return math.nan
    return max(val_accs) - max(before)


def at_plateau(val_accs: Sequence[float], gain: float, window: int = WINDOW) -> bool:
    """Whether a run whose evaluations so far gave ``val_accs`` has reached its plateau:
    its last ``window`` of them raised the best by at most ``gain``, within
    :data:`EPSILON` (never with ``window`` or fewer evaluations)."""
    last = gain_of_last(val_accs, window)
    return not math.isnan(last) and last <= gain + EPSILON
