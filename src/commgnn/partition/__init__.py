"""commgnn.partition: METIS, random and Grappa-chunk partitioning with halos and stats.

Entry points: :func:`partition_graph` (a :class:`GraphDataset` and a ``partitionings``
spec -> :class:`Partition`), :func:`write_partition` / :func:`load_partition` for the
on-disk directory, and :func:`chunk_pairs` for Grappa's super-epoch chunk schedule.
"""

from commgnn.partition.book import PartitionBook
from commgnn.partition.chunk import (
    chunk_assign,
    chunk_pairs,
    chunk_schedule_period,
    partition_nodes,
)
from commgnn.partition.core import (
    METHODS,
    Partition,
    PartitionError,
    normalize_spec,
    partition_graph,
)
from commgnn.partition.halo import compute_halos, gather_neighbors, halo_nodes
from commgnn.partition.io import load_partition, read_partition_meta, write_partition
from commgnn.partition.metis import metis_assign
from commgnn.partition.random import random_assign
from commgnn.partition.stats import cut_edges_per_part, edge_cut_fraction, partition_stats

__all__ = [
    "METHODS",
    "Partition",
    "PartitionBook",
    "PartitionError",
    "chunk_assign",
    "chunk_pairs",
    "chunk_schedule_period",
    "compute_halos",
    "cut_edges_per_part",
    "edge_cut_fraction",
    "gather_neighbors",
    "halo_nodes",
    "load_partition",
    "metis_assign",
    "normalize_spec",
    "partition_graph",
    "partition_nodes",
    "partition_stats",
    "random_assign",
    "read_partition_meta",
    "write_partition",
]
