"""The system interface: what a communication strategy plugs into the training loop.

A system decides how each step's inputs (blocks and input features) reach the model and
may take over gradient synchronisation or the whole step. The loop (``commgnn.train.loop``)
owns everything else: model, optimiser, DDP, metrics, evaluation, checkpoints.

Lifecycle on every worker: ``prepare()`` once, then per epoch ``start_epoch(e)``, iterate
``batches(e)``, ``end_epoch(e)``; ``close()`` at the end.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import torch

from commgnn.dist.feature_store import FetchCounts
from commgnn.sampling.block import MiniBatch

if TYPE_CHECKING:
    from commgnn.train.context import WorkerContext


@dataclass
class PreparedBatch:
    """One step's inputs plus how they were obtained."""

    step: int
    batch: MiniBatch
    features: torch.Tensor  # rows of batch.input_nodes, on the training device
    labels: torch.Tensor  # labels of batch.seeds, on the training device
    sample_s: float = 0.0
    fetch_wait_s: float = 0.0
    counts: FetchCounts = field(default_factory=FetchCounts)
    cache_hits: int = 0
    cache_misses: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class System(ABC):
    """Base class; subclasses register themselves in :data:`SYSTEMS` by ``name``."""

    name: ClassVar[str]
    #: False for systems whose traffic is free by definition (``oracle``).
    uses_network: ClassVar[bool] = True

    def __init__(self, ctx: WorkerContext) -> None:
        self.ctx = ctx
        self.options = dict(ctx.spec.system_options)

    def fetch(self, nodes: torch.Tensor) -> tuple[torch.Tensor, FetchCounts]:
        """Feature rows of ``nodes`` as this system obtains them outside its own pipeline
        (evaluation uses it). Default: the worker's feature store, on demand."""
        return self.ctx.store.fetch(nodes)

    def prepare(self) -> None:
        """One-time setup after the workers have connected (caches, servers, ...)."""

    def start_epoch(self, epoch: int) -> None:
        """Called before ``batches(epoch)``."""

    @abstractmethod
    def batches(self, epoch: int) -> Iterator[PreparedBatch]:
        """The epoch's steps, in order, with features on the training device."""

    def end_epoch(self, epoch: int) -> dict[str, Any]:
        """System-specific per-epoch metrics (merged into the epoch record)."""
        return {}

    def gradient_hook(self) -> Callable | None:
        """A DDP comm hook, or ``None`` for the loop's default (emulated all-reduce)."""
        return None

    def close(self) -> None:
        """Release threads and buffers."""


SYSTEMS: dict[str, type[System]] = {}


def register_system(cls: type[System]) -> type[System]:
    SYSTEMS[cls.name] = cls
    return cls


def get_system(name: str) -> type[System]:
    import commgnn.systems  # noqa: F401  (registers the built-in systems)

    try:
        return SYSTEMS[name]
    except KeyError:
        raise ValueError(f"unknown system {name!r}; known: {sorted(SYSTEMS)}") from None
