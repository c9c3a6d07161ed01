"""``clustergcn``: Cluster-GCN (Chiang et al., KDD 2019), distributed with no feature traffic.

Clustering (the paper's §3.1, METIS): every worker clusters the graph induced by its own
partition (a METIS partitioning of the whole graph) into ``clusters / P`` clusters with
METIS (:func:`commgnn.partition.metis.metis_assign`, seeded by ``H(s0, "clustergcn-metis",
rank)``), once, in :meth:`setup`: the ``C`` clusters of the run are a two-level METIS
clustering of the graph. The time of that step (building the partition's local graph and
METIS) is the slowest worker's ``clustering_raw_s`` (wall seconds; ``clustering_s`` is the
same ÷ time dilation), reported once, in the epoch record of the first epoch the process
trains; it is in the run's ``setup_s``, never in an epoch's time.

Batches (the paper's §3.2, stochastic multiple partitions): each epoch a worker shuffles
its clusters (``numpy`` generator seeded by ``H(s0, "clustergcn", rank, epoch)``) and takes
them ``q = clusters_per_batch`` at a time (the last group may be smaller); a batch is the
subgraph induced by the union of the group's nodes — every edge among them kept, also the
edges between its clusters, none to other clusters or partitions. The model runs on the
whole batch (``Block.full_graph`` of the batch subgraph in batch-local ids, the same block
for every layer) and the loss is the mean cross-entropy over the batch's training nodes.
A batch without a training node (possible with small clusters and sparse labels) trains
with a zero loss, so the worker still joins the all-reduce; its step reports loss 0 and no
seed, and the epoch counts it as ``empty_batches``. Every worker has ``C / P`` clusters
(``C`` must be a multiple of ``P``), so every worker runs ``ceil(C / P / q)`` steps an
epoch: DDP's equal step counts hold by construction, no worker cycles its batches.

Traffic: every feature row a batch reads is the worker's own (read through the feature
store, which counts them as local rows; a remote row would be a bug and raises), so the
only traffic inside an epoch is the gradient all-reduce: DDP with the emulated ring
(the default :meth:`System.setup`).

Model (the paper's eq. 10/11): GCN only (any other model is refused when the config is
validated). :meth:`setup` switches every :class:`~commgnn.models.layers.GCNConv` of the
run's :class:`~commgnn.models.gnn.GCN` to ``norm='right'`` with ``diag_lambda = λ``:
``X' = (Ã + λ diag(Ã)) X W`` with ``Ã = (D + I)^-1 (A + I)``, degrees those of the batch
subgraph in training. Evaluation is the loop's (:mod:`commgnn.train.evaluate`): the same
layers, hence the same normalisation, on blocks of full neighbourhoods (or
``eval_fanouts``) over the whole graph, features through the feature store — remote rows
are fetched there as for every system, outside the training metrics and epoch time.

Settings of the experiment cell that Cluster-GCN does not use: the batch size (a batch is
``q`` clusters; the batch size only sets how many nodes an evaluation step takes) and the
fan-out values (only their number, the depth, is used; the time-dilation probe samples
with them as for every system). Partition method: ``metis`` only — the clusters must be
dense subgraphs; inside a random or chunk partition the induced graph keeps about ``1/P``
of each node's edges and METIS cannot recover the locality Cluster-GCN depends on.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import torch

from commgnn.core.batch import PreparedBatch
from commgnn.core.blocks import Block, MiniBatch
from commgnn.core.config import ConfigError
from commgnn.models.gnn import GCN
from commgnn.models.layers import GCNConv
from commgnn.partition.halo import gather_neighbors
from commgnn.partition.metis import metis_assign
from commgnn.sampling.seeds import derive_seed
from commgnn.systems.clustergcn import DESCRIPTION
from commgnn.train.system import System

#: METIS' seed is a C int.
_METIS_SEED_MOD = 2**31 - 1


def induced_subgraph(indptr: np.ndarray, indices: np.ndarray, members: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """CSR of the subgraph induced by ``members`` (sorted distinct ids), relabelled to
    their positions ``0..len(members)-1``: every edge between two members is kept, rows
    stay sorted."""
    members = np.asarray(members, dtype=np.int64)
    position = np.full(int(indptr.shape[0] - 1), -1, dtype=np.int64)
    position[members] = np.arange(members.shape[0], dtype=np.int64)
    degrees = (np.asarray(indptr[members + 1], dtype=np.int64)
               - np.asarray(indptr[members], dtype=np.int64))
    mapped = position[gather_neighbors(indptr, indices, members)]
    keep = mapped >= 0
    rows = np.repeat(np.arange(members.shape[0], dtype=np.int64), degrees)
    out = np.zeros(members.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=members.shape[0]), out=out[1:])
    return out, mapped[keep]


def cluster_members(indptr: np.ndarray, indices: np.ndarray, clusters: int, seed: int
                    ) -> list[np.ndarray]:
    """METIS k-way clustering of a graph (CSR over its own ids) into ``clusters`` clusters:
    the sorted ids of each cluster's nodes (a cluster may be empty)."""
    assign = metis_assign(indptr, indices, clusters, seed % _METIS_SEED_MOD)
    order = np.argsort(assign, kind="stable")
    bounds = np.cumsum(np.bincount(assign, minlength=clusters))[:-1]
    return [part.astype(np.int64) for part in np.split(order, bounds)]


def epoch_groups(clusters: int, per_batch: int, base_seed: int, rank: int, epoch: int
                 ) -> list[np.ndarray]:
    """The clusters of each of a worker's batches in ``epoch``: a permutation seeded by
    ``H(s0, "clustergcn", rank, epoch)``, cut ``per_batch`` at a time."""
    rng = np.random.default_rng(derive_seed(base_seed, "clustergcn", rank, epoch))
    order = rng.permutation(clusters)
    return [order[i:i + per_batch] for i in range(0, clusters, per_batch)]


@dataclass
class ClusterBatch(PreparedBatch):
    """A batch and the positions of its training nodes among its nodes (the loss rows)."""

    positions: torch.Tensor | None = None


class ClusterGCNSystem(System):
    description = DESCRIPTION
    reductions = {
        "clustering_s": "max", "clustering_raw_s": "max", "clusters_per_worker": "max",
        "cluster_nodes_mean": "mean", "cluster_nodes_max": "max",
        "batch_nodes": "mean", "batch_edges": "mean", "batch_train_nodes": "mean",
        "batch_edge_fraction": "mean", "empty_batches": "sum",
    }

    # -- declarations --------------------------------------------------------------------
    @classmethod
    def run_problems(cls, spec, shape=None) -> list[str]:
        """GCN only; ``clusters`` a multiple of the workers and, per worker, no more than
        the nodes of the smallest part can be (``nodes // workers``, where the dataset's
        shape is known: the partition's own sizes are checked at run time); batches of no
        more clusters than a worker has."""
        problems = []
        if spec.architecture != "gcn":
            problems.append(f"experiment cell {spec.run_id}: system 'clustergcn' trains "
                            "GCN only (Cluster-GCN's normalisation is a GCN's), not "
                            f"{spec.model!r}")
        options = cls.with_defaults(spec.system_options)
        clusters, workers = int(options["clusters"]), spec.workers
        per_worker = clusters // workers
        if clusters % workers:
            problems.append(cls.option_problem(
                spec, "clusters", f"not a multiple of the {workers} workers (each worker "
                "clusters its own partition into clusters / workers)"))
        elif shape is not None and per_worker > shape.nodes // workers:
            problems.append(cls.option_problem(
                spec, "clusters", f"{per_worker} clusters per worker, but the smallest of "
                f"{workers} parts of dataset {spec.dataset!r} ({shape.nodes} nodes) has at "
                f"most {shape.nodes // workers}"))
        if not clusters % workers and options["clusters_per_batch"] > per_worker:
            problems.append(cls.option_problem(
                spec, "clusters_per_batch", f"more than the {per_worker} clusters a worker "
                f"has (clusters {clusters} / {workers} workers): no batch holds more"))
        return problems

    def check_partition(self, partition, world_size: int) -> None:
        super().check_partition(partition, world_size)
        clusters = self.options["clusters"]
        if clusters % world_size:
            raise ConfigError(f"{self.where}.clusters: {clusters}: not a multiple of the "
                              f"{world_size} workers")
        per_worker = clusters // world_size
        sizes = np.asarray(partition.book.sizes())
        smallest = int(np.argmin(sizes))
        if per_worker > sizes[smallest]:
            raise ConfigError(f"{self.where}.clusters: {clusters}: {per_worker} clusters "
                              f"per worker, but part {smallest} has only "
                              f"{int(sizes[smallest])} nodes")

    # -- setup ---------------------------------------------------------------------------
    def _diagonal_enhanced(self, model: torch.nn.Module) -> None:
        """Every GCN layer to Cluster-GCN's normalisation (refuses any other model)."""

        layers = list(getattr(model, "layers", []))
        if not isinstance(model, GCN) or not layers or not all(
                isinstance(layer, GCNConv) for layer in layers):
            raise ConfigError(f"system 'clustergcn' trains commgnn's GCN only, not "
                              f"{type(model).__name__}")
        for layer in layers:
            layer.norm = "right"
            layer.diag_lambda = float(self.options["diag_lambda"])

    def setup(self, ctx, model, optimizer) -> None:
        self._diagonal_enhanced(model)
        super().setup(ctx, model, optimizer)  # DDP with the emulated ring all-reduce
        self.cluster(ctx)

    def cluster(self, ctx) -> None:
        """Cluster this worker's partition (timed: ``clustering_raw_s``) and get its
        training-node mask ready."""
        self.ctx = ctx
        start = time.perf_counter()
        ds = ctx.dataset
        self.nodes = np.asarray(ctx.partition.book.nodes(ctx.rank), dtype=np.int64)
        self.indptr, self.indices = induced_subgraph(ds.indptr, ds.indices, self.nodes)
        per_worker = self.options["clusters"] // ctx.world_size
        self.clusters = cluster_members(self.indptr, self.indices, per_worker,
                                        derive_seed(ctx.spec.seed, "clustergcn-metis",
                                                    ctx.rank))
        self.clustering_raw_s = time.perf_counter() - start
        train = np.zeros(ds.num_nodes, dtype=bool)
        train[np.asarray(ds.train_idx)] = True
        self.is_train = train[self.nodes]  # per partition position
        self.layers = len(ctx.spec.get("fanouts"))
        self._report_clustering = True
        self._batches: list[tuple[int, int, int]] = []

    # -- steps ---------------------------------------------------------------------------
    def groups(self, epoch: int) -> list[np.ndarray]:
        """The cluster ids of each of this worker's batches in ``epoch``."""
        return epoch_groups(len(self.clusters), self.options["clusters_per_batch"],
                            self.ctx.spec.seed, self.ctx.rank, epoch)

    def start_epoch(self, epoch: int) -> None:
        self._batches = []

    def batches(self, epoch: int) -> Iterator[PreparedBatch]:
        ctx = self.ctx
        for step, group in enumerate(self.groups(epoch)):
            t0 = time.perf_counter()
            members = np.sort(np.concatenate([self.clusters[c] for c in group]))
            indptr, indices = induced_subgraph(self.indptr, self.indices, members)
            block = Block.full_graph(indptr, indices)
            positions = np.flatnonzero(self.is_train[members])
            nodes = torch.from_numpy(self.nodes[members])
            t1 = time.perf_counter()
            features, counts = ctx.store.fetch(nodes)
            if counts.remote_rows:  # every row of a batch is the worker's own
                raise RuntimeError(f"clustergcn: a batch of worker {ctx.rank} read "
                                   f"{counts.remote_rows} remote feature rows")
            features = features.to(ctx.device, non_blocking=True)
            t2 = time.perf_counter()
            seeds = nodes[torch.from_numpy(positions)]
            batch = MiniBatch(seeds=seeds, input_nodes=nodes, blocks=[block] * self.layers)
            self._batches.append((members.shape[0], int(indices.shape[0]),
                                  int(positions.shape[0])))
            yield ClusterBatch(
                step=step, batch=batch.to(ctx.device), features=features,
                labels=ctx.labels_of(seeds), sample_s=t1 - t0, fetch_wait_s=t2 - t1,
                counts=counts, positions=torch.from_numpy(positions).to(ctx.device),
                extra={"clusters": [int(c) for c in group],
                       "batch_nodes": int(members.shape[0]),
                       "batch_edges": int(indices.shape[0])})

    def output(self, prepared: PreparedBatch) -> torch.Tensor:
        """The whole batch's logits, at its training nodes (the loss rows)."""
        return super().output(prepared)[prepared.positions]

    def end_epoch(self, epoch: int) -> dict:
        nodes, edges, train = np.array(self._batches, dtype=np.float64).reshape(-1, 3).T
        sizes = [c.shape[0] for c in self.clusters]
        metrics = {
            "clusters_per_worker": len(self.clusters),
            "cluster_nodes_mean": float(np.mean(sizes)), "cluster_nodes_max": max(sizes),
            "empty_batches": int((train == 0).sum()),
            # the partition's edges that are inside some batch this epoch
            "batch_edge_fraction": (float(edges.sum() / self.indices.shape[0])
                                    if self.indices.shape[0] else math.nan),
        }
        if self._batches:
            metrics.update(batch_nodes=float(nodes.mean()), batch_edges=float(edges.mean()),
                           batch_train_nodes=float(train.mean()))
        if self._report_clustering:  # once per process: the setup's clustering
            f = self.ctx.emulator.time_dilation
            metrics.update(clustering_raw_s=self.clustering_raw_s,
                           clustering_s=self.clustering_raw_s / f)
            self._report_clustering = False
        return metrics
