"""Partition book: which part owns each node and where it sits inside that part.

For a graph with ``n`` nodes split into ``num_parts`` parts:

* ``owner[v]`` (int32) is the part that owns node ``v``;
* ``local_id[v]`` (int64) is the position of ``v`` among its owner's nodes taken in
  ascending global id order, so ``book.nodes(owner[v])[local_id[v]] == v``;
* ``nodes(p)`` is the sorted int64 array of the nodes owned by ``p``.

The per-part lists are stored as one flat array ``order`` (nodes sorted by ``(owner, id)``)
and an offsets array ``part_ptr`` (length ``num_parts + 1``), like a CSR.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

OWNER_DTYPE = np.int32
LOCAL_DTYPE = np.int64


@dataclass(frozen=True, eq=False)
class PartitionBook:
    """Node ownership and local numbering (see the module docstring)."""

    owner: np.ndarray  # int32 (num_nodes,)
    local_id: np.ndarray  # int64 (num_nodes,)
    num_parts: int
    part_ptr: np.ndarray  # int64 (num_parts + 1,)
    order: np.ndarray  # int64 (num_nodes,): nodes sorted by (owner, global id)

    @classmethod
    def from_owner(cls, owner: np.ndarray, num_parts: int) -> PartitionBook:
        """Build the book from an owner array with values in ``[0, num_parts)``."""
        owner = np.ascontiguousarray(owner, dtype=OWNER_DTYPE)
        if owner.ndim != 1:
            raise ValueError(f"owner must be 1-D, got shape {owner.shape}")
        if num_parts < 1:
            raise ValueError(f"num_parts must be >= 1, got {num_parts}")
        if owner.size and (int(owner.min()) < 0 or int(owner.max()) >= num_parts):
            raise ValueError(f"owner values outside [0, {num_parts})")
        counts = np.bincount(owner, minlength=num_parts).astype(np.int64)
        part_ptr = np.zeros(num_parts + 1, dtype=np.int64)
        np.cumsum(counts, out=part_ptr[1:])
        # A stable sort keeps ascending global ids inside each part.
        order = np.argsort(owner, kind="stable").astype(np.int64, copy=False)
        local_id = np.empty(owner.shape[0], dtype=LOCAL_DTYPE)
        local_id[order] = np.arange(owner.shape[0], dtype=np.int64) - np.repeat(
            part_ptr[:-1], counts)
        return cls(owner=owner, local_id=local_id, num_parts=int(num_parts),
                   part_ptr=part_ptr, order=order)

    @property
    def num_nodes(self) -> int:
        return int(self.owner.shape[0])

    def sizes(self) -> np.ndarray:
        """Owned-node count of every part (int64, length ``num_parts``)."""
        return np.diff(self.part_ptr)

    def nodes(self, part: int) -> np.ndarray:
        """Sorted global ids of the nodes owned by ``part`` (a view, do not modify)."""
        if not 0 <= part < self.num_parts:
            raise IndexError(f"part {part} outside [0, {self.num_parts})")
        return self.order[self.part_ptr[part]:self.part_ptr[part + 1]]

    def to_local(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(owner, local_id)`` of global node ids."""
        nodes = np.asarray(nodes, dtype=np.int64)
        return self.owner[nodes], self.local_id[nodes]

    def to_global(self, part: int | np.ndarray, local: np.ndarray) -> np.ndarray:
        """Global ids of ``(part, local_id)`` pairs (``part`` may be a scalar)."""
        part = np.asarray(part, dtype=np.int64)
        local = np.asarray(local, dtype=np.int64)
        return self.order[self.part_ptr[part] + local]
