"""``oracle``: the same batches and compute as ``default`` with every feature local and no
network cost — the lower bound each system's epoch time is compared with."""

from __future__ import annotations

import numpy as np
import torch

from commgnn.core.counts import FetchCounts
from commgnn.runtime.feature_store import LocalFeatureStore
from commgnn.systems.default.system import DefaultSystem
from commgnn.systems.oracle import DESCRIPTION


class OracleSystem(DefaultSystem):
    description = DESCRIPTION

    def setup(self, ctx, model, optimizer) -> None:
        super().setup(ctx, model, optimizer)
        features = torch.from_numpy(np.array(ctx.dataset.features))
        self.local = LocalFeatureStore(features)

    def fetch(self, nodes: torch.Tensor) -> tuple[torch.Tensor, FetchCounts]:
        return self.local.fetch(nodes)
