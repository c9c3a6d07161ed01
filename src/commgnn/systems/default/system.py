"""``default``: DistDGL-style training — sample, then fetch every remote input feature on
demand, synchronously, with no cache (the papers' DGL-METIS / DGL-Random baseline).

Options: ``schedule`` — ``owned`` (each worker shuffles its own partition's training
nodes, as DGL's ``node_split`` gives a trainer of a METIS partition; HopGNN's "LO"
variant) or ``global`` (the whole training set is shuffled each epoch with a shared seed
and split evenly across the workers, as the HopGNN baselines were read to do; most of a
worker's seeds then belong to other partitions, so a METIS partition moves the same bytes
as a random one — measured: ``benchmarks/configs/grappa_eval_depth.yaml``).
``sampling`` — ``distributed`` (DistDGL: rows of other partitions' nodes sampled by their
owners over RPC, the ``sampling`` traffic class; :mod:`commgnn.runtime.remote_sampler`) or
``replicated`` (every worker samples from the whole graph for free). Both give the same
batches.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import numpy as np

from commgnn.core.batch import PreparedBatch
from commgnn.core.blocks import MiniBatch
from commgnn.core.counts import FetchCounts
from commgnn.runtime.remote_sampler import counted_sampler
from commgnn.sampling.schedule import global_epoch_seed_nodes
from commgnn.sampling.seeds import batch_seed
from commgnn.systems.default import DESCRIPTION
from commgnn.train.system import System


class DefaultSystem(System):
    description = DESCRIPTION

    def setup(self, ctx, model, optimizer) -> None:
        super().setup(ctx, model, optimizer)
        self.sample_seeded = counted_sampler(
            ctx.sampler, self.options["sampling"], ctx.partition.book.owner, ctx.rank,
            ctx.emulator, ctx.spec.get("rpc_timeout_s"))

    def sample(self, epoch: int, step: int, seeds: np.ndarray) -> tuple[MiniBatch, FetchCounts]:
        """The step's blocks (as ``ctx.sample``) and the sampling traffic they cost."""
        return self.sample_seeded(seeds, batch_seed(self.ctx.spec.seed, self.ctx.rank, epoch,
                                                    step))

    def epoch_seeds(self, epoch: int) -> list[np.ndarray]:
        if self.options["schedule"] == "global":
            ctx = self.ctx
            return global_epoch_seed_nodes(ctx.dataset.train_idx, ctx.world_size,
                                           ctx.spec.batch_size, ctx.spec.seed, ctx.rank, epoch)
        return super().epoch_seeds(epoch)

    def batches(self, epoch: int) -> Iterator[PreparedBatch]:
        ctx = self.ctx
        for step, seeds in enumerate(self.epoch_seeds(epoch)):
            t0 = time.perf_counter()
            batch, sampling = self.sample(epoch, step, seeds)
            t1 = time.perf_counter()
            features, counts = self.fetch(batch.input_nodes)
            features = features.to(ctx.device, non_blocking=True)
            t2 = time.perf_counter()
            yield PreparedBatch(step=step, batch=batch.to(ctx.device), features=features,
                                labels=ctx.labels_of(batch.seeds), sample_s=t1 - t0,
                                fetch_wait_s=t2 - t1, counts=counts, sampling=sampling)
