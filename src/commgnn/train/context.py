"""What every system sees on a worker: data, partition, schedule, sampler, store, network."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from commgnn.data.store import GraphDataset
from commgnn.dist.feature_store import FeatureStore
from commgnn.dist.launcher import DistEnv
from commgnn.dist.netem import NetworkEmulator
from commgnn.partition import Partition
from commgnn.sampling.block import MiniBatch
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.schedule import epoch_seed_nodes, steps_per_epoch, worker_train_nodes
from commgnn.sampling.seeds import batch_seed
from commgnn.train.spec import RunSpec


@dataclass
class WorkerContext:
    """Per-worker state shared by the loop and the system."""

    spec: RunSpec
    env: DistEnv
    device: torch.device
    dataset: GraphDataset
    partition: Partition
    emulator: NetworkEmulator
    store: FeatureStore
    labels: torch.Tensor  # all labels (replicated, small), on the training device
    presample_dir: str | None = None  # presampled blocks, for systems that use them
    train_nodes: np.ndarray = field(init=False)
    steps: int = field(init=False)
    sampler: NeighborSampler = field(init=False)

    def __post_init__(self) -> None:
        owner = self.partition.book.owner
        self.train_nodes = worker_train_nodes(self.dataset.train_idx, owner, self.rank)
        self.steps = steps_per_epoch(self.dataset.train_idx, owner, self.spec.workers,
                                     self.spec.batch_size)
        self.sampler = NeighborSampler(self.dataset.indptr, self.dataset.indices,
                                       self.spec.get("fanouts"))

    @property
    def rank(self) -> int:
        return self.env.rank

    def epoch_seeds(self, epoch: int) -> list[np.ndarray]:
        """The seed nodes of the epoch's ``steps`` batches (see :func:`epoch_seed_nodes`)."""
        return epoch_seed_nodes(self.train_nodes, self.steps, self.spec.batch_size,
                                self.spec.seed, self.rank, epoch)

    def sample(self, epoch: int, step: int, seeds: np.ndarray) -> MiniBatch:
        """The step's blocks, seeded by ``H(s0, worker, epoch, step)``."""
        return self.sampler.sample(seeds, batch_seed(self.spec.seed, self.rank, epoch, step))

    def labels_of(self, nodes: torch.Tensor) -> torch.Tensor:
        return self.labels[nodes.to(self.labels.device)]
