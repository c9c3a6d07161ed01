"""What every system sees on a worker: data, partition, schedule, sampler, store, network."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from commgnn.data.store import GraphDataset
from commgnn.dist.feature_store import FeatureStore
from commgnn.dist.launcher import DistEnv
from commgnn.dist.netem import NetworkEmulator
from commgnn.partition import Partition
from commgnn.sampling.batches import epoch_batches
from commgnn.sampling.block import MiniBatch
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.seeds import batch_seed
from commgnn.train.spec import RunSpec


def worker_train_nodes(ds: GraphDataset, owner: np.ndarray, rank: int) -> np.ndarray:
    """Training nodes owned by ``rank`` (sorted global ids)."""
    train = np.asarray(ds.train_idx)
    return train[np.asarray(owner)[train] == rank]


def steps_per_epoch(ds: GraphDataset, owner: np.ndarray, workers: int, batch_size: int) -> int:
    """Synchronous training needs one step count for all workers: the largest worker's."""
    train_owner = np.asarray(owner)[np.asarray(ds.train_idx)]
    counts = np.bincount(train_owner, minlength=workers)[:workers]
    return max(1, math.ceil(int(counts.max()) / batch_size))


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
    train_nodes: np.ndarray = field(init=False)
    steps: int = field(init=False)
    sampler: NeighborSampler = field(init=False)

    def __post_init__(self) -> None:
        owner = self.partition.book.owner
        self.train_nodes = worker_train_nodes(self.dataset, owner, self.rank)
        self.steps = steps_per_epoch(self.dataset, owner, self.spec.workers, self.spec.batch_size)
        self.sampler = NeighborSampler(self.dataset.indptr, self.dataset.indices,
                                       self.spec.get("fanouts"))

    @property
    def rank(self) -> int:
        return self.env.rank

    def epoch_seeds(self, epoch: int) -> list[np.ndarray]:
        """The seed nodes of each of the epoch's ``steps`` batches, in order.

        A worker with fewer batches than ``steps`` reuses its epoch's batches cyclically
        (each step still samples with its own seed ``H(s0, w, e, i)``).
        """
        own = epoch_batches(self.train_nodes, self.spec.batch_size, self.spec.seed, self.rank,
                            epoch)
        if not own:
            raise RuntimeError(f"worker {self.rank} owns no training nodes; use a partitioning "
                               "that balances training nodes (balance_train) or fewer parts")
        return [own[i % len(own)] for i in range(self.steps)]

    def sample(self, epoch: int, step: int, seeds: np.ndarray) -> MiniBatch:
        """The step's blocks, seeded by ``H(s0, worker, epoch, step)``."""
        return self.sampler.sample(seeds, batch_seed(self.spec.seed, self.rank, epoch, step))

    def labels_of(self, nodes: torch.Tensor) -> torch.Tensor:
        return self.labels[nodes.to(self.labels.device)]
