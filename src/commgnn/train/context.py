"""What every system sees on a worker: data, partition, schedule, sampler, store, network."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from commgnn.core.blocks import MiniBatch
from commgnn.core.placement import Placement
from commgnn.core.spec import RunSpec
from commgnn.data.store import GraphDataset
from commgnn.network.netem import NetworkEmulator
from commgnn.partition import Partition
from commgnn.runtime.devices import DevicePlan
from commgnn.runtime.feature_store import FeatureStore
from commgnn.runtime.launcher import DistEnv
from commgnn.runtime.remote_sampler import serve_adjacency
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.schedule import epoch_seed_nodes, placement_steps, worker_train_nodes
from commgnn.sampling.seeds import batch_seed


@dataclass
class WorkerContext:
    """Per-worker state shared by the loop and the system.

    ``placement`` is the current epoch's (set by the loop from ``System.placement``);
    ``train_nodes`` and ``steps`` follow it: this worker's training nodes (those owned
    by its partitions) and the epoch's step count (the largest active worker's).
    ``inputs`` maps the pipeline inputs the system declared in ``needs`` to paths;
    ``plan`` is the run's device plan (None only in tests that build a context by hand).
    """

    spec: RunSpec
    env: DistEnv
    device: torch.device
    dataset: GraphDataset
    partition: Partition
    emulator: NetworkEmulator
    store: FeatureStore
    labels: torch.Tensor  # all labels (replicated, small), on the training device
    inputs: dict[str, str] = field(default_factory=dict)
    plan: DevicePlan | None = None  # every worker's device and the communication paths
    placement: Placement = field(init=False)
    train_nodes: np.ndarray = field(init=False)
    steps: int = field(init=False)
    sampler: NeighborSampler = field(init=False)

    def __post_init__(self) -> None:
        self.sampler = NeighborSampler(self.dataset.indptr, self.dataset.indices,
                                       self.spec.get("fanouts"))
        serve_adjacency(self.sampler)  # answers peers' distributed-sampling requests
        self.set_placement(Placement.own(self.world_size))

    @property
    def rank(self) -> int:
        return self.env.rank

    @property
    def world_size(self) -> int:
        return self.env.world_size

    @property
    def p2p_via_host(self) -> bool:
        """Whether point-to-point tensors are staged through host memory (workers
        sharing a GPU: :mod:`commgnn.runtime.devices`)."""
        return self.plan is not None and self.plan.p2p == "host"

    def set_placement(self, placement: Placement) -> None:
        """Make ``placement`` current (recomputes the schedule only when it changed)."""
        if getattr(self, "placement", None) == placement:
            return
        if len(placement.parts) != self.world_size:
            raise ValueError(f"placement for {len(placement.parts)} workers, the run has "
                             f"{self.world_size}")
        owner = self.partition.book.owner
        self.placement = placement
        self.train_nodes = worker_train_nodes(self.dataset.train_idx, owner,
                                              list(placement.of(self.rank)))
        self.steps = placement_steps(self.dataset.train_idx, owner, placement.parts,
                                     self.spec.batch_size)

    def epoch_seeds(self, epoch: int) -> list[np.ndarray]:
        """The seed nodes of the epoch's ``steps`` batches (see :func:`epoch_seed_nodes`);
        none for a worker the placement leaves idle."""
        if not self.placement.of(self.rank):
            return []
        return epoch_seed_nodes(self.train_nodes, self.steps, self.spec.batch_size,
                                self.spec.seed, self.rank, epoch)

    def sample(self, epoch: int, step: int, seeds: np.ndarray) -> MiniBatch:
        """The step's blocks, seeded by ``H(s0, worker, epoch, step)``."""
        return self.sampler.sample(seeds, batch_seed(self.spec.seed, self.rank, epoch, step))

    def labels_of(self, nodes: torch.Tensor) -> torch.Tensor:
        return self.labels[nodes.to(self.labels.device)]
