"""One training step's inputs as a system prepared them, and what the step reports."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from commgnn.core.blocks import MiniBatch
from commgnn.core.counts import FetchCounts


@dataclass
class PreparedBatch:
    """One step's inputs plus how they were obtained."""

    step: int
    batch: MiniBatch
    features: torch.Tensor  # rows of batch.input_nodes, on the training device
    labels: torch.Tensor  # labels of batch.seeds, on the training device
    sample_s: float = 0.0
    fetch_wait_s: float = 0.0
    counts: FetchCounts = field(default_factory=FetchCounts)  # feature rows
    sampling: FetchCounts = field(default_factory=FetchCounts)  # remote neighbour lists
    cache_hits: int = 0
    cache_misses: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class StepOutput:
    """What a training step reports back to the loop."""

    loss: float
    correct: int  # seeds predicted right
    seen: int  # seeds trained on
    extra: dict[str, Any] = field(default_factory=dict)  # added to the step record
