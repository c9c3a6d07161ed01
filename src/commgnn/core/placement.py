"""A system's per-epoch partition plan: which partitions each worker trains (not the
device plan, which is :mod:`commgnn.runtime.devices`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Placement:
    """Which partitions (parts, or chunks of a chunk partitioning) each worker trains.

    ``parts[w]`` are the partitions worker ``w`` trains in the epoch; an empty tuple
    means the worker is idle. The training seeds of a worker are the training nodes
    owned by its partitions.
    """

    parts: tuple[tuple[int, ...], ...]

    @classmethod
    def own(cls, world_size: int) -> Placement:
        """Each worker trains the partition of its own rank (the common case)."""
        return cls(tuple((w,) for w in range(world_size)))

    def of(self, rank: int) -> tuple[int, ...]:
        return self.parts[rank]

    @property
    def active(self) -> tuple[int, ...]:
        """The workers that train in the epoch."""
        return tuple(w for w, parts in enumerate(self.parts) if parts)
