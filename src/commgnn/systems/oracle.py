"""``oracle``: the same batches and compute as ``default`` with every feature local and no
network cost — the lower bound each system's epoch time is compared with."""

from __future__ import annotations

import numpy as np
import torch

from commgnn.dist.feature_store import FetchCounts, LocalFeatureStore
from commgnn.systems.base import register_system
from commgnn.systems.default import DefaultSystem


@register_system
class OracleSystem(DefaultSystem):
    name = "oracle"
    uses_network = False

    def prepare(self) -> None:
        features = torch.from_numpy(np.ascontiguousarray(self.ctx.dataset.features))
        self.local = LocalFeatureStore(features)

    def fetch(self, nodes: torch.Tensor) -> tuple[torch.Tensor, FetchCounts]:
        return self.local.fetch(nodes)
