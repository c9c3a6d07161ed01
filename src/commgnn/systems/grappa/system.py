"""``grappa``: gradient-only communication (Grappa, ``../shared/papers/grappa.txt`` §3).

Each worker trains in isolation on a *partition* = its base chunk ∪ the chunk it sweeps in
the current super-epoch (:func:`commgnn.partition.chunk.chunk_pairs`; partitioning method
``chunk``) and its halo. Inside an iteration no feature, neighbour list or activation
crosses a machine: a worker samples only inside its partition's local graph (the subgraph
induced by the partition's nodes) and reads feature rows from the table it loaded at the
switch; the only traffic is the gradient all-reduce. Seeds are the training nodes of the
base chunk (``Placement``: the base).

Halo (§3.2, "the key enabler"): a partition holds every node within ``k`` hops of its
chunks' nodes, ``k`` = the model's layers (``chunk_halo_hops: depth``, the default: the
run's number of fan-outs), so a ``k``-layer mini-batch is the same computation tree as on
the whole graph and needs no cross-partition read; halo nodes are read-only and never
seeds. ``chunk_halo_hops: h`` (an integer) sets the depth by hand; ``chunk_halo_hops: 0``
is strict isolation (base ∪ swept chunk alone: each seed sees only its in-partition
neighbours, the measured alternative whose coverage bias the factors below correct). The
resolved depth is the ``chunk_halo_hops`` metric of every epoch record and summary. (The
partitioning key ``halo_hops`` is another setting: the halo sets a partition records.)

Super-epochs (§3.3, §3.5): a super-epoch lasts ``L`` epochs (``super_epoch_epochs``;
default ``ceil(E / T)`` with ``T`` the schedule's period, ``C - 1`` for the default
``C = W`` chunks, so every chunk pair gets an equal share of the ``E`` epochs). At a
switch a worker keeps the rows it already holds and pulls the rest of its new partition
(features by RPC from each chunk's home worker, ``chunk mod W``; the new nodes' local
edge lists as bytes from the same homes), all as ``shuffle`` traffic; the time is
reported as ``switch_s`` (target seconds, inside the loop's epoch time: the paper's epoch
time excludes it, Table 8 reports it apart — tables show both). The coverage-deficit
trigger (``deficit_threshold``; off by default) switches early when ``Δ = 1 - ĉ`` (ĉ the
uniform factor of a batch) exceeded the threshold for ``deficit_patience`` consecutive
steps of any worker.

Coverage-corrected gradients (§3.4, Eq. 10): each worker scales its gradient by the
batch's factor ``c_w`` in the DDP comm hook, before the emulated all-reduce, so the update
is ``(1/W)·Σ_w c_w·g_w``. ``estimator``: ``uniform`` (Eq. 12, the minimally biased factor
for uniform neighbour sampling: mean over the seeds of d_local/d_global), ``resampling``
(Eq. 18, the paper's default, which §3.4 introduces as the *shrinkage* variant:
``1 / Σ_v (d_global/d_local - 1)·min(k, d_local)`` with ``k`` the seeds' fan-out, the last
one), ``none`` (Grappa-UW, ``c ≡ 1``). Edge cases (not in the paper): a seed with no
global neighbours counts as fully covered (ratio 1); a seed with no local neighbour adds
nothing to Eq. 18's sum (nothing was sampled to resample); when the sum is 0 (every seed
sees its whole neighbourhood) the batch is unbiased and ``c = 1``. ``harmonic`` is our
reading of §3.4's prose — Eq. 18 is "closer to a harmonic mean" and "produces lower
correction factors" than Eq. 11 — as ``|S| / Σ_v (…)``: Eq. 18 as printed has no ``|S|``,
so its factor is ~1/(B·k) and a short last batch of an epoch gets a factor ``B/b`` times
its peers', dominating the averaged update (measured: ``benchmarks/README.md``).

Our reading of the scale under Adam (the optimiser of every run): Adam's update is
invariant to a factor common to all workers (up to ``eps``), so Eq. 18's ``1/B``-sized
magnitude does not shrink the step; what the correction changes is the *relative* weight
of the workers in the averaged gradient. Adam's (coupled) ``weight_decay`` is added to the
gradient after the hook, so scaling the gradients scales the decay's relative strength by
``1/c``. Both facts are tested (``tests/systems/grappa/test_grappa.py``).

Phase-parallel training (Algorithm 1, ``active_workers: M``): the ``W`` partitions of a
super-epoch train in ``ceil(W/M)`` phases of at most ``M`` workers (the last phase is
short when ``M`` does not divide ``W``); worker ``w`` is in phase ``w // M``; gradients
are all-reduced within the phase's process group and the optimiser steps once per
iteration; at each phase boundary the phase's first worker broadcasts parameters and Adam
state to every worker, charged as ``migration`` traffic to the next phase's workers. Every
partition trains each of its batches once per epoch in every mode; the number of
optimiser updates per epoch is ``phases × steps`` (``M = 1``: every partition in turn).

``mode: fullgraph`` (§3.1): one full-batch step per epoch on the worker's whole local
graph, loss on its base chunk's training nodes.

Ablations (Table 7) are options: UW ``estimator: none``, FP ``switching: fixed`` (the
first super-epoch's partitions throughout), 50S ``remote_edge_fraction: 0.5`` (each
cross-partition edge kept with probability ½ per super-epoch; the kept outside nodes'
features are fetched on demand from their homes as ``fetch`` traffic).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from commgnn.core.batch import PreparedBatch, StepOutput
from commgnn.core.blocks import Block, MiniBatch
from commgnn.core.config import ConfigError
from commgnn.core.counts import FetchCounts
from commgnn.core.placement import Placement
from commgnn.network.netem import MIGRATION, SHUFFLE, allreduce_hook, in_turn
from commgnn.partition.chunk import chunk_pairs, chunk_schedule_period
from commgnn.partition.halo import halo_nodes
from commgnn.partition.subgraph import induced_csr, keep_cross_edges, merge_edges
from commgnn.runtime.feature_store import FeatureStore
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.seeds import batch_seed, derive_seed
from commgnn.systems.grappa import DESCRIPTION, ESTIMATORS
from commgnn.train.system import System

EDGE_BYTES = 8  # an int64 neighbour id of a loaded edge list


def coverage_uniform(d_local: np.ndarray, d_global: np.ndarray) -> float:
    """Eq. 12: the mean over the batch's seeds of ``d_local / d_global`` (1 for an
    isolated node)."""
    d_local, d_global = np.asarray(d_local, float), np.asarray(d_global, float)
    if d_local.size == 0:
        return 1.0
    ratio = np.divide(d_local, d_global, out=np.ones_like(d_local), where=d_global > 0)
    return float(ratio.mean())


def resampling_sum(d_local: np.ndarray, d_global: np.ndarray, fanout: int) -> float:
    """Eq. 18's denominator ``Σ_v (d_global/d_local − 1)·|S_v|``, ``|S_v| = min(k,
    d_local)`` (all local neighbours when ``k = -1``); seeds without a local neighbour add
    nothing."""
    d_local, d_global = np.asarray(d_local, float), np.asarray(d_global, float)
    sampled = d_local if fanout < 0 else np.minimum(float(fanout), d_local)
    has = d_local > 0
    excess = np.zeros_like(d_local)
    excess[has] = d_global[has] / d_local[has] - 1.0
    return float((excess * sampled).sum())


def coverage_resampling(d_local: np.ndarray, d_global: np.ndarray, fanout: int) -> float:
    """Eq. 18 as printed: ``1 / resampling_sum``; 1 when the sum is 0 (see the module doc)."""
    total = resampling_sum(d_local, d_global, fanout)
    return 1.0 / total if total > 0 else 1.0


def coverage_harmonic(d_local: np.ndarray, d_global: np.ndarray, fanout: int) -> float:
    """``|S| / resampling_sum``: Eq. 18 times the number of seeds, the harmonic-mean-like
    form §3.4 describes (Eq. 18 as printed shrinks with the batch size; see the module
    doc); 1 when the sum is 0."""
    total = resampling_sum(d_local, d_global, fanout)
    return np.asarray(d_local).shape[0] / total if total > 0 else 1.0


def coverage_factor(estimator: str, d_local: np.ndarray, d_global: np.ndarray,
                    fanout: int) -> float:
    """The batch's correction factor ``c`` for ``estimator`` (one of :data:`ESTIMATORS`)."""
    if estimator == "uniform":
        return coverage_uniform(d_local, d_global)
    if estimator == "resampling":
        return coverage_resampling(d_local, d_global, fanout)
    if estimator == "harmonic":
        return coverage_harmonic(d_local, d_global, fanout)
    if estimator == "none":
        return 1.0
    raise ValueError(f"unknown estimator {estimator!r}; known: {ESTIMATORS}")


def resolve_chunk_halo_hops(option: int | str, layers: int) -> int:
    """The halo depth of a run: ``layers`` (the model's depth, the number of fan-outs) for
    ``"depth"`` (§3.2's k-hop closure), else the integer given (0: strict isolation)."""
    if option == "depth":
        return int(layers)
    if isinstance(option, bool) or not isinstance(option, int) or option < 0:
        raise ValueError(f"chunk_halo_hops must be 'depth' or an integer >= 0, got "
                         f"{option!r}")
    return option


def partition_nodes(chunk_of: np.ndarray, chunks: tuple[int, ...], indptr: np.ndarray,
                    indices: np.ndarray, hops: int) -> np.ndarray:
    """Sorted global ids of a partition: the nodes of ``chunks`` (base and swept) and their
    ``hops``-hop halo (every node within ``hops`` hops of them; none for 0)."""
    member = np.isin(np.asarray(chunk_of), np.asarray(chunks))
    nodes = np.flatnonzero(member)
    if hops:
        nodes = np.union1d(nodes, halo_nodes(indptr, indices, member, hops))
    return nodes.astype(np.int64)


def phase_groups(world_size: int, active: int) -> list[list[int]]:
    """The workers of each phase: consecutive groups of at most ``active`` ranks."""
    return [list(range(s, min(s + active, world_size))) for s in range(0, world_size, active)]


class LocalPartition:
    """One worker's partition for a super-epoch: node set, local graph and feature rows."""

    def __init__(self, nodes: np.ndarray, indptr: np.ndarray, indices: np.ndarray,
                 features: torch.Tensor) -> None:
        self.nodes = nodes  # sorted global ids whose rows are held
        self.indptr, self.indices = indptr, indices  # local graph, global ids
        self.features = features  # rows of ``nodes``
        self.degree = np.diff(indptr)

    def positions(self, nodes: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.nodes, nodes)

    def holds(self, nodes: np.ndarray) -> np.ndarray:
        pos = np.minimum(self.positions(nodes), max(0, self.nodes.shape[0] - 1))
        return self.nodes[pos] == nodes if self.nodes.shape[0] else np.zeros(len(nodes), bool)


class GrappaSystem(System):
    description = DESCRIPTION
    reductions = {
        "coverage_factor": "mean", "coverage_uniform": "mean", "super_epoch": "max",
        "switch_s": "slowest", "switch_raw_s": "slowest", "switch_bytes": "sum",
        "switch_rows": "sum",
        "partition_nodes": "mean", "partition_edges": "mean", "optimizer_updates": "sum",
        "phases": "max", "deficit_switch": "max", "chunk_halo_hops": "max",
    }

    # -- declarations --------------------------------------------------------------------
    @classmethod
    def run_problems(cls, spec, shape=None) -> list[str]:
        """Options the cell makes meaningless: more active workers than the run has; a
        super-epoch that outlasts the run (no switch would ever happen; unless the
        coverage-deficit trigger switches); a switching setting ``fixed`` ignores; a
        deficit patience longer than any epoch (the run of deficit steps restarts each
        epoch, so the trigger could never fire)."""
        options = cls.with_defaults(spec.system_options)
        problems = []
        workers, epochs = spec.workers, int(spec.get("epochs"))
        if options["active_workers"] > workers:
            problems.append(cls.option_problem(
                spec, "active_workers", f"more than the run's {workers} workers (0: all "
                "of them)"))
        length, threshold = options["super_epoch_epochs"], options["deficit_threshold"]
        if options["switching"] == "fixed":
            problems += [cls.option_problem(spec, key, "switching: fixed never switches "
                                            "partitions")
                         for key, unset in (("super_epoch_epochs", 0),
                                            ("deficit_threshold", None))
                         if options[key] != unset]
        elif threshold is None and length > max(1, epochs - 1):
            problems.append(cls.option_problem(
                spec, "super_epoch_epochs", f"the partitions never switch in a "
                f"{epochs}-epoch run (the first switch comes after {length} epochs; "
                "switching: fixed keeps them on purpose)"))
        if threshold is not None and options["switching"] == "sweep":
            steps = (1 if options["mode"] == "fullgraph"
                     else cls.max_steps_per_epoch(spec, shape))
            if steps is not None and options["deficit_patience"] > steps:
                problems.append(cls.option_problem(
                    spec, "deficit_patience", f"more than the at most {steps} steps of an "
                    "epoch (the count restarts every epoch): the deficit trigger never "
                    "fires"))
        return problems

    # -- setup ---------------------------------------------------------------------------
    def check_partition(self, partition, world_size: int) -> None:
        if partition.workers != world_size:
            raise ConfigError(f"system 'grappa': the chunk partitioning is for "
                              f"{partition.workers} workers, the run has {world_size}")
        active = self.options["active_workers"]
        if active > world_size:
            raise ConfigError(f"{self.where}.active_workers: {active}: more than the run's "
                              f"{world_size} workers (0: all of them)")

    def setup(self, ctx, model, optimizer) -> None:
        self.ctx, self.model, self.optimizer = ctx, model, optimizer
        world, rank = ctx.world_size, ctx.rank
        self.phases = phase_groups(world, self.options["active_workers"] or world)
        self.phase = rank // len(self.phases[0])
        group = None
        for ranks in self.phases:  # every rank creates every group, in order
            made = dist.new_group(ranks) if len(self.phases) > 1 else dist.group.WORLD
            if rank in ranks:
                group = made
        ring = self.phases[self.phase]

        ddp = DistributedDataParallel(model, process_group=group)
        ddp.register_comm_hook(None, allreduce_hook(ctx.emulator, rank, world, group,
                                                    ring=ring, scale=lambda: self._factor))
        self.train_module = ddp
        self._factor = 1.0
        partition = ctx.partition
        self.num_chunks = partition.num_parts
        owner = np.asarray(partition.book.owner, dtype=np.int64)
        self.chunk_of = owner
        self.home = owner % world  # the worker that stores each node's chunk
        self.home_store = ctx.store if self.num_chunks == world else self._home_store(owner)
        self.global_degree = np.diff(np.asarray(ctx.dataset.indptr, dtype=np.int64))
        epochs = ctx.spec.get("epochs")
        period = chunk_schedule_period(self.num_chunks, world)
        self.super_epoch_epochs = (self.options["super_epoch_epochs"]
                                   or max(1, math.ceil(epochs / period)))
        self.fanout = int(ctx.spec.get("fanouts")[-1])
        self.chunk_halo_hops = resolve_chunk_halo_hops(self.options["chunk_halo_hops"],
                                           len(ctx.spec.get("fanouts")))
        self.super_epoch, self.epochs_in_super = 0, 0
        self.local: LocalPartition | None = None
        self.loaded_super_epoch = -1
        self._deficit_run, self._deficit_hit = 0, False
        self._epoch_metrics: dict = {}

    def _home_store(self, owner: np.ndarray) -> FeatureStore:
        """A store keyed by chunk home (``chunk mod W``) when there are more chunks than
        workers (the loop's store serves only chunks ``0..W-1``)."""
        ctx = self.ctx
        home = owner % ctx.world_size
        order = np.argsort(home, kind="stable")
        counts = np.bincount(home, minlength=ctx.world_size)
        local_id = np.empty_like(order)
        local_id[order] = np.arange(order.shape[0]) - np.repeat(np.cumsum(counts) - counts,
                                                                counts)
        mine = np.sort(np.flatnonzero(home == ctx.rank))
        rows = torch.from_numpy(np.ascontiguousarray(ctx.dataset.features[mine]))
        return FeatureStore(ctx.rank, home, local_id, rows, ctx.emulator,
                            ctx.spec.get("rpc_timeout_s"), table="grappa-home")

    # -- schedule ------------------------------------------------------------------------
    def pairs(self) -> list[tuple[int, int]]:
        """``(base, swept)`` chunk of every worker in the current super-epoch."""
        return chunk_pairs(self.num_chunks, self.ctx.world_size, self.super_epoch)

    def placement(self, epoch: int) -> Placement:
        return Placement(tuple((base,) for base, _ in self.pairs()))

    def observe(self, record) -> None:
        threshold = self.options["deficit_threshold"]
        if threshold is None or "coverage_uniform" not in record.extra:
            return
        deficit = 1.0 - record.extra["coverage_uniform"]
        self._deficit_run = self._deficit_run + 1 if deficit > threshold else 0
        if self._deficit_run >= self.options["deficit_patience"]:
            self._deficit_hit = True

    def observe_epoch(self, records: list[dict]) -> None:
        """Advance the super-epoch after ``L`` epochs, or early on a coverage deficit."""
        if self.options["switching"] == "fixed":
            return
        self.epochs_in_super += 1
        early = any(r.get("deficit_switch", 0) for r in records)
        if early or self.epochs_in_super >= self.super_epoch_epochs:
            self.super_epoch += 1
            self.epochs_in_super = 0
        self._deficit_run, self._deficit_hit = 0, False

    def state_dict(self) -> dict:
        return {"super_epoch": self.super_epoch, "epochs_in_super": self.epochs_in_super}

    def load_state_dict(self, state: dict) -> None:
        self.super_epoch = int(state["super_epoch"])
        self.epochs_in_super = int(state["epochs_in_super"])

    # -- switches ------------------------------------------------------------------------
    def start_epoch(self, epoch: int) -> None:
        self._epoch_metrics = {"switch_s": 0.0, "switch_raw_s": 0.0, "switch_bytes": 0,
                               "switch_rows": 0}
        if self.loaded_super_epoch != self.super_epoch:
            self._switch()
        self._coverage: list[tuple[float, float]] = []
        self._updates = 0

    def _partition_nodes(self) -> np.ndarray:
        base, swept = self.pairs()[self.ctx.rank]
        ds = self.ctx.dataset
        return partition_nodes(self.chunk_of, (base, swept), ds.indptr, ds.indices,
                               self.chunk_halo_hops)

    def _switch(self) -> None:
        """Load the current super-epoch's partition: keep held rows, pull the rest from
        their homes (``shuffle`` traffic), build the local graph."""
        ctx = self.ctx
        start = time.perf_counter()
        nodes = self._partition_nodes()
        ds = ctx.dataset
        indptr, indices = induced_csr(ds.indptr, ds.indices, nodes)
        fraction = self.options["remote_edge_fraction"]
        if fraction > 0:
            seed = derive_seed(ctx.spec.seed, "grappa-50s", self.super_epoch)
            src, dst = keep_cross_edges(ds.indptr, ds.indices, nodes, fraction, seed)
            indptr, indices = merge_edges(indptr, indices, src, dst)
        features = torch.empty((nodes.shape[0], ds.feature_dim), dtype=torch.float32)
        held = self.local.holds(nodes) if self.local is not None else \
            np.zeros(nodes.shape[0], dtype=bool)
        if held.any():
            features[torch.from_numpy(np.flatnonzero(held))] = self.local.features[
                torch.from_numpy(self.local.positions(nodes[held]))]
        new, put = nodes[~held], np.flatnonzero(~held)
        mine = self.home[new] == ctx.rank
        if mine.any():
            features[torch.from_numpy(put[mine])] = torch.from_numpy(
                np.ascontiguousarray(ds.features[new[mine]]))
        remote_new = new[~mine]
        counts = FetchCounts()
        if remote_new.size:
            rows, counts = self.home_store.fetch_remote(torch.from_numpy(remote_new),
                                                        traffic=SHUFFLE)
            features[torch.from_numpy(put[~mine])] = rows
            edges_by_home = np.bincount(self.home[remote_new],
                                        weights=np.diff(indptr)[remote_new],
                                        minlength=ctx.world_size)
            for home in in_turn(ctx.rank, np.flatnonzero(edges_by_home)):
                ctx.emulator.charge(int(home), ctx.rank, int(edges_by_home[home]) * EDGE_BYTES,
                                    traffic=SHUFFLE)
            edge_bytes = int(edges_by_home.sum()) * EDGE_BYTES
        else:
            edge_bytes = 0
        self.local = LocalPartition(nodes, indptr, indices, features)
        self._block: Block | None = None  # full-graph mode's block, built on first use
        self.sampler = NeighborSampler(indptr, indices, ctx.spec.get("fanouts"))
        self.loaded_super_epoch = self.super_epoch
        raw = time.perf_counter() - start
        self._epoch_metrics.update(
            switch_raw_s=raw, switch_s=raw / ctx.emulator.time_dilation,
            switch_bytes=counts.remote_bytes + edge_bytes, switch_rows=counts.remote_rows)

    # -- steps ---------------------------------------------------------------------------
    def batches(self, epoch: int) -> Iterator[PreparedBatch]:
        """This worker's batches in its phase; at each phase boundary everyone takes part
        in carrying the model and optimiser state forward."""
        for phase in range(len(self.phases)):
            if phase == self.phase:
                if self.options["mode"] == "fullgraph":
                    yield from self._full_batches(epoch)
                else:
                    yield from self._sampled_batches(epoch)
            if len(self.phases) > 1:
                self._carry(phase)

    def _sampled_batches(self, epoch: int) -> Iterator[PreparedBatch]:
        ctx = self.ctx
        for step, seeds in enumerate(self.epoch_seeds(epoch)):
            t0 = time.perf_counter()
            batch = self.sampler.sample(seeds, batch_seed(ctx.spec.seed, ctx.rank, epoch, step))
            t1 = time.perf_counter()
            features, counts = self._features(batch.input_nodes.numpy())
            t2 = time.perf_counter()
            yield self._prepared(step, batch, features, counts, t1 - t0, t2 - t1)

    def _full_block(self) -> Block:
        """The loaded partition as one block over its nodes (built once per switch)."""
        local = self.local
        members = local.nodes
        dst = np.repeat(np.arange(local.degree.shape[0]), local.degree)
        inner = local.holds(local.indices) & local.holds(dst)  # 50S outside nodes excluded
        rows, sources = local.positions(dst[inner]), local.positions(local.indices[inner])
        indptr = np.zeros(members.shape[0] + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=members.shape[0]), out=indptr[1:])
        return Block.full_graph(indptr, sources)  # CSR rows already in node order

    def _full_batches(self, epoch: int) -> Iterator[PreparedBatch]:
        ctx, local = self.ctx, self.local
        seeds = np.sort(ctx.train_nodes)
        if seeds.size == 0:
            return
        if self._block is None:
            self._block = self._full_block()
        block, members = self._block, local.nodes
        self._seed_positions = torch.from_numpy(local.positions(seeds)).to(ctx.device)
        batch = MiniBatch(seeds=torch.from_numpy(seeds), input_nodes=torch.from_numpy(members),
                          blocks=[block] * len(ctx.spec.get("fanouts")))
        counts = FetchCounts(local_rows=int(members.shape[0]))
        yield self._prepared(0, batch, local.features, counts, 0.0, 0.0)

    def _features(self, nodes: np.ndarray) -> tuple[torch.Tensor, FetchCounts]:
        """Rows of ``nodes`` from the partition's table; outside nodes (50S only) are
        fetched on demand from their homes."""
        local = self.local
        held = local.holds(nodes)
        if held.all():
            rows = local.features[torch.from_numpy(local.positions(nodes))]
            return rows, FetchCounts(local_rows=int(nodes.shape[0]))
        out = torch.empty((nodes.shape[0], local.features.shape[1]), dtype=torch.float32)
        inside = np.flatnonzero(held)
        out[torch.from_numpy(inside)] = local.features[
            torch.from_numpy(local.positions(nodes[inside]))]
        outside = np.flatnonzero(~held)
        rows, counts = self.home_store.fetch(torch.from_numpy(nodes[outside]))
        out[torch.from_numpy(outside)] = rows
        counts.local_rows += int(inside.shape[0])
        return out, counts

    def _prepared(self, step, batch, features, counts, sample_s, fetch_s) -> PreparedBatch:
        ctx = self.ctx
        seeds = batch.seeds.numpy()
        d_local = self.local.degree[seeds]
        d_global = self.global_degree[seeds]
        factor = coverage_factor(self.options["estimator"], d_local, d_global, self.fanout)
        uniform = coverage_uniform(d_local, d_global)
        return PreparedBatch(step=step, batch=batch.to(ctx.device),
                             features=features.to(ctx.device), labels=ctx.labels_of(batch.seeds),
                             sample_s=sample_s, fetch_wait_s=fetch_s, counts=counts,
                             extra={"coverage_factor": factor, "coverage_uniform": uniform})

    def train_step(self, prepared: PreparedBatch) -> StepOutput:
        self._factor = prepared.extra["coverage_factor"]
        self._coverage.append((self._factor, prepared.extra["coverage_uniform"]))
        logits = self.train_module(prepared.batch.blocks, prepared.features)
        if self.options["mode"] == "fullgraph":
            logits = logits[self._seed_positions]
        loss = F.cross_entropy(logits, prepared.labels)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        if self.ctx.rank == self.phases[self.phase][0]:
            self._updates += 1
        correct = int((logits.argmax(dim=1) == prepared.labels).sum())
        return StepOutput(loss=float(loss.detach()), correct=correct,
                          seen=int(prepared.labels.shape[0]))

    def _carry(self, phase: int) -> None:
        """Broadcast parameters and optimiser state from ``phase``'s first worker; the
        next phase's workers pay the transfer as ``migration`` traffic."""
        leader = self.phases[phase][0]
        ctx = self.ctx
        tensors = [p.data for p in self.model.parameters()]
        for t in tensors:
            dist.broadcast(t, src=leader)
        # the moments travel by pickle: on the host (a CUDA tensor would be rebuilt on the
        # leader's device index); load_state_dict moves them to each parameter's device
        state = [_on_host(self.optimizer.state_dict()) if ctx.rank == leader else None]
        dist.broadcast_object_list(state, src=leader)
        if ctx.rank != leader:
            self.optimizer.load_state_dict(state[0])
        nbytes = sum(t.numel() * t.element_size() for t in tensors)
        nbytes += sum(v.numel() * v.element_size() for s in state[0]["state"].values()
                      for v in s.values() if torch.is_tensor(v))
        following = self.phases[(phase + 1) % len(self.phases)]
        if ctx.rank in following and ctx.rank != leader:
            ctx.emulator.charge(leader, ctx.rank, nbytes, traffic=MIGRATION)

    def end_epoch(self, epoch: int) -> dict:
        metrics = dict(self._epoch_metrics)
        if self._coverage:  # a worker without training nodes reports no factor
            metrics["coverage_factor"] = float(np.mean([c for c, _ in self._coverage]))
            metrics["coverage_uniform"] = float(np.mean([u for _, u in self._coverage]))
        return {
            **metrics,
            "super_epoch": self.super_epoch,
            "partition_nodes": int(self.local.nodes.shape[0]),
            "partition_edges": int(self.local.indices.shape[0]),
            "optimizer_updates": self._updates,
            "phases": len(self.phases),
            "deficit_switch": int(self._deficit_hit),
            "chunk_halo_hops": self.chunk_halo_hops,
        }

    def fetch(self, nodes: torch.Tensor) -> tuple[torch.Tensor, FetchCounts]:
        """Evaluation reads every feature row from its home."""
        return self.home_store.fetch(nodes)


def _on_host(state: dict) -> dict:
    """An optimiser state dict with every state tensor copied to host memory."""
    return {**state, "state": {key: {name: value.detach().cpu() if torch.is_tensor(value)
                                     else value for name, value in entry.items()}
                               for key, entry in state["state"].items()}}
