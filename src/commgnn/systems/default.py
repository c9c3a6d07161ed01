"""``default``: DistDGL-style training — sample, then fetch every remote input feature on
demand, synchronously, with no cache (the papers' DGL-METIS / DGL-Random baseline)."""

from __future__ import annotations

import time
from collections.abc import Iterator

from commgnn.systems.base import PreparedBatch, System, register_system


@register_system
class DefaultSystem(System):
    name = "default"

    def batches(self, epoch: int) -> Iterator[PreparedBatch]:
        ctx = self.ctx
        for step, seeds in enumerate(ctx.epoch_seeds(epoch)):
            t0 = time.perf_counter()
            batch = ctx.sample(epoch, step, seeds)
            t1 = time.perf_counter()
            features, counts = self.fetch(batch.input_nodes)
            features = features.to(ctx.device, non_blocking=True)
            t2 = time.perf_counter()
            yield PreparedBatch(step=step, batch=batch.to(ctx.device), features=features,
                                labels=ctx.labels_of(batch.seeds), sample_s=t1 - t0,
                                fetch_wait_s=t2 - t1, counts=counts)
