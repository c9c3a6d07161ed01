"""``hopgnn``: move the model to the features (HopGNN, §4–5 of the paper).

Every worker is a machine ``s`` holding partition ``s``'s features and a model replica.
Iteration ``i`` of epoch ``e`` (micrograph mode, §5.1):

1. Model ``d`` draws the mini-batch ``S_d`` that ``default`` with ``schedule: global``
   gives worker ``d`` (the shared global shuffle: every machine computes every model's
   seeds itself, so regrouping the roots costs no message).
2. The roots are regrouped by home (the partition book's owner): machine ``s`` samples,
   for each model ``d``, the micrographs of ``S_d``'s roots it hosts — one block list per
   (model, machine), sampled with model ``d``'s batch seed ``H(s0, d, e, i)``. Draws are
   keyed by (seed, layer, node), so a root's micrograph is exactly its computation tree in
   ``default``'s subgraph.
3. In time step ``t`` model ``d`` is on machine ``(d + t) mod N`` and trains on the
   micrographs there; input rows the machine does not hold are fetched (``fetch``
   traffic). The loss is the summed cross-entropy divided by ``|S_d|``, so the gradients
   accumulated over the time steps are the subgraph gradient of ``default`` (exactly so
   with dropout 0: micrographs draw other dropout masks than a whole subgraph). A machine
   with no micrographs for the model it hosts idles that step.
4. Between time steps every model migrates point to point (a real ``isend``/``irecv`` of
   parameters + accumulated gradients; the receiver loads them and waits one transfer on
   the emulated links, ``migration`` traffic);
   after the last step the accumulated gradients are all-reduced (emulated ring) and every
   machine applies the averaged gradient to its replica.

Optimizer state does not travel: after the synchronisation every machine holds the same
parameters and the same averaged gradient, so each keeps its own Adam state (identical on
all machines, as under DDP) and steps it; only parameters and accumulated gradients move.

Options: ``pregather`` (§5.2: before the time steps a machine fetches the union of the
remote rows of every micrograph it hosts in the iteration, once; without it each time
step fetches its own, one request per owner per step), ``merging`` (§5.3: ``search`` — from
the second epoch remove one more time step per epoch while the epoch gets faster, then
freeze at the fastest count; ``fixed`` — remove ``merges`` time steps; ``none``). A merge
removes the time step with the fewest roots (summed over models, the paper's proxy for
vertices) and spreads each model's roots of that step evenly, in order, over the same
model's remaining steps (:func:`merge_step`). ``mode: naive`` is §3.2's feature-centric
baseline: model ``d`` keeps ``default``'s subgraph and tours the machines that hold its
input rows, carrying parameters, the subgraph's topology and the partial first-layer
aggregates (:func:`naive_hop_bytes`), then returns home to finish; its arithmetic is done
at home on rows read where they live (no feature crosses a link) and every hop is a real
wait on the emulated links. ``LO`` is ``default`` with ``schedule: owned`` (each worker
trains only its own partition's training nodes, no migration: the locality-optimised
baseline).

The merge search decides from measured epoch times, so its time-step counts (and hence the
traffic) can differ between repeated runs; ``merging: none | fixed`` runs are
deterministic in every count.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F

from commgnn.core.batch import PreparedBatch, StepOutput
from commgnn.core.blocks import MiniBatch
from commgnn.core.counts import FetchCounts
from commgnn.network.netem import MIGRATION
from commgnn.runtime.p2p import exchange
from commgnn.runtime.remote_sampler import counted_sampler
from commgnn.sampling.schedule import global_epoch_seed_nodes
from commgnn.sampling.seeds import batch_seed
from commgnn.systems.hopgnn import DESCRIPTION
from commgnn.train.system import System

ID_BYTES = 8
VALUE_BYTES = 4
#: The architectures whose partial first-layer aggregates naive mode sizes.
NAIVE_ARCHITECTURES = ("sage", "gcn", "gat", "deepgcn", "film")


# -- the plan of one iteration -------------------------------------------------------------
@dataclass
class IterationPlan:
    """Where each model trains in each time step of one iteration, and on which roots.

    ``machines[k][d]`` is the machine hosting model ``d`` in time step ``k`` (a permutation
    of the machines for every ``k``); ``roots[k][d]`` the roots model ``d`` trains there."""

    machines: list[list[int]]
    roots: list[list[np.ndarray]]

    @property
    def steps(self) -> int:
        return len(self.machines)

    def hosted(self, step: int, machine: int) -> int:
        """The model ``machine`` hosts in time step ``step``."""
        return self.machines[step].index(machine)

    def root_counts(self) -> np.ndarray:
        """``[step, model]`` numbers of roots."""
        return np.array([[r.shape[0] for r in row] for row in self.roots], dtype=np.int64)


def initial_plan(batches: Sequence[np.ndarray], owner: np.ndarray) -> IterationPlan:
    """§5.1: ``N`` time steps; in step ``t`` model ``d`` is on machine ``(d + t) mod N`` and
    trains the roots of its batch ``batches[d]`` whose home is that machine (batch order)."""
    n = len(batches)
    machines = [[(d + t) % n for d in range(n)] for t in range(n)]
    homes = [np.asarray(owner)[np.asarray(b)] for b in batches]
    roots = [[np.asarray(batches[d])[homes[d] == machines[t][d]] for d in range(n)]
             for t in range(n)]
    return IterationPlan(machines, roots)


def merge_step(plan: IterationPlan) -> IterationPlan:
    """§5.3: remove the time step with the fewest roots (the first on a tie) and spread each
    model's roots of that step evenly, in order, over the same model's other steps."""
    if plan.steps < 2:
        return plan
    victim = int(np.argmin(plan.root_counts().sum(axis=1)))
    keep = [k for k in range(plan.steps) if k != victim]
    roots = [list(plan.roots[k]) for k in keep]
    for d, moved in enumerate(plan.roots[victim]):
        for j, part in enumerate(np.array_split(moved, len(keep))):
            roots[j][d] = np.concatenate([roots[j][d], part])
    return IterationPlan([plan.machines[k] for k in keep], roots)


def plan_iteration(batches: Sequence[np.ndarray], owner: np.ndarray,
                   merges: int) -> IterationPlan:
    """The initial plan with ``merges`` time steps merged away (at most ``N − 1``)."""
    plan = initial_plan(batches, owner)
    for _ in range(min(merges, len(batches) - 1)):
        plan = merge_step(plan)
    return plan


@dataclass
class MergeSearch:
    """§5.3's examination period: epoch 0 runs unmerged; after each epoch, while not
    frozen, merge one more time step if the epoch was faster than the best so far (up to
    ``limit``), else go back to the best count and freeze it."""

    merges: int = 0
    best_s: float | None = None
    frozen: bool = False

    def observe(self, epoch_s: float, limit: int) -> None:
        if self.frozen:
            return
        if self.best_s is None or epoch_s < self.best_s:
            self.best_s = epoch_s
            if self.merges < limit:
                self.merges += 1
            else:
                self.frozen = True
        else:
            self.merges -= 1
            self.frozen = True


def naive_hop_bytes(batch: MiniBatch, state_width: int, param_bytes: int) -> int:
    """Bytes one hop of the naive approach carries: the parameters, the subgraph's topology
    (input ids and every block's CSR, 8-byte ids) and the partial aggregates of the first
    layer's destinations (``state_width`` float32 values each)."""
    topology = batch.input_nodes.numel() + sum(b.num_dst + 1 + b.num_edges for b in batch.blocks)
    state = batch.blocks[0].num_dst * state_width
    return param_bytes + ID_BYTES * topology + VALUE_BYTES * state


def naive_state_width(architecture: str, model, feature_dim: int, hidden: int) -> int:
    """Values per first-layer destination in the partial aggregates the naive tour carries:
    the input row sum (SAGE, GCN: ``feature_dim``); per GAT head the running weighted sum
    plus max and normaliser; DeepGCN's GENConv softmax aggregation per channel of its
    encoded input, likewise (``3 · hidden``); FiLM's first layer the message sum and the
    count of its mean (``hidden + 1``)."""
    if architecture == "gat":
        first = model.layers[0]
        return first.heads * (first.out_dim + 2)
    if architecture == "deepgcn":
        return 3 * hidden
    if architecture == "film":
        return hidden + 1
    if architecture in ("sage", "gcn"):
        return feature_dim
    raise ValueError(f"hopgnn naive mode cannot size the partial aggregates of "
                     f"{architecture!r}")


def naive_tour(home: int, owners_of_inputs: np.ndarray, world_size: int) -> list[int]:
    """The machines the naive approach visits: home, then every other machine holding an
    input row in ring order, then home again (just home when it holds them all)."""
    present = set(np.unique(owners_of_inputs).tolist())
    away = [(home + k) % world_size for k in range(1, world_size)
            if (home + k) % world_size in present]
    return [home, *away, home] if away else [home]


# -- what one iteration hands to the training step ----------------------------------------
@dataclass
class TimeStep:
    """One time step on this machine: the model hosted and its micrographs (if any)."""

    model: int
    batch_size: int  # |S_d| of the hosted model (the loss normaliser)
    batch: MiniBatch | None = None
    features: torch.Tensor | None = None
    labels: torch.Tensor | None = None


@dataclass
class HopIteration(PreparedBatch):
    """An iteration: its plan and this machine's time steps (``batch``/``features``/
    ``labels`` of the base class are empty; the work is in ``time_steps``)."""

    plan: IterationPlan | None = None
    time_steps: list[TimeStep] = field(default_factory=list)
    tour: list[int] = field(default_factory=list)  # naive mode: machines visited
    hop_bytes: int = 0  # naive mode: bytes each hop carries


def _empty_batch() -> MiniBatch:
    empty = torch.empty(0, dtype=torch.int64)
    return MiniBatch(empty, empty, [])


class HopGNNSystem(System):
    description = DESCRIPTION
    wants_ddp = False
    reductions = {
        "time_steps": "mean",  # per iteration, after merging
        "merges": "mean",  # time steps merged away per iteration
        "micrographs": "sum",  # non-empty (model, machine, step) micrograph sets
        "idle_steps": "sum",  # time steps a machine hosted a model with nothing to train
        "migrations": "sum",  # models received (parameters + gradients)
        "input_rows": "sum",  # input rows of every micrograph set (before pre-gathering)
        "miss_rows": "sum",  # of those, rows held by another machine
        "pregather_rows": "sum",  # remote rows a pre-gathering machine fetches (the union)
        "pregather_saved_rows": "sum",  # miss_rows − pregather_rows
        "pregather_saved_rpcs": "sum",  # per-step requests minus pre-gather requests
        "intermediate_bytes": "sum",  # naive: topology + partial aggregates carried
    }

    @classmethod
    def run_problems(cls, spec, shape=None) -> list[str]:
        """Naive mode sizes the partial first-layer aggregates it carries for the built-in
        architectures only (:func:`naive_state_width`), not for a named PyG conv; a fixed
        merge count removes at most ``N − 1`` of an iteration's ``N`` time steps (one per
        machine, ``N`` = the workers)."""
        options = spec.system_options
        problems = []
        if options.get("mode") == "naive" and spec.architecture not in NAIVE_ARCHITECTURES:
            problems.append(f"run {spec.run_id}: hopgnn mode naive carries the partial "
                            f"first-layer aggregates of {list(NAIVE_ARCHITECTURES)} only, "
                            f"not {spec.architecture!r}")
        merges = options.get("merges", cls.options["merges"]["default"])
        if options.get("merging") == "fixed" and merges > spec.workers - 1:
            problems.append(cls.option_problem(
                spec, "merges", f"more than a {spec.workers}-worker iteration can merge "
                f"away ({spec.workers - 1}: it has {spec.workers} time steps, one per "
                "machine, and keeps one)"))
        return problems

    def setup(self, ctx, model, optimizer) -> None:
        super().setup(ctx, model, optimizer)
        self.owner = np.asarray(ctx.partition.book.owner)
        self._sample = counted_sampler(ctx.sampler, self.options["sampling"], self.owner,
                                       ctx.rank, ctx.emulator, ctx.spec.get("rpc_timeout_s"))
        self.search = MergeSearch()
        if self.options["merging"] == "fixed":
            self.search = MergeSearch(merges=self.options["merges"], frozen=True)
        elif self.options["merging"] == "none" or self.options["mode"] == "naive":
            self.search = MergeSearch(frozen=True)
        self.num_params = sum(p.numel() for p in model.parameters())
        self._reset_metrics()

    # -- schedule and sampling -----------------------------------------------------------
    @property
    def merges(self) -> int:
        return min(self.search.merges, self.ctx.world_size - 1)

    def epoch_seeds(self, epoch: int) -> list[np.ndarray]:
        """This machine's model's batches: ``default``'s global schedule."""
        return self.model_seeds(epoch, self.ctx.rank)

    def model_seeds(self, epoch: int, model: int) -> list[np.ndarray]:
        ctx = self.ctx
        return global_epoch_seed_nodes(ctx.dataset.train_idx, ctx.world_size,
                                       ctx.spec.batch_size, ctx.spec.seed, model, epoch)

    def _reset_metrics(self) -> None:
        self._metrics = dict.fromkeys(self.reductions, 0)
        self._iterations = 0

    def start_epoch(self, epoch: int) -> None:
        self._reset_metrics()

    def batches(self, epoch: int) -> Iterator[PreparedBatch]:
        ctx = self.ctx
        per_model = [self.model_seeds(epoch, d) for d in range(ctx.world_size)]
        for i in range(len(per_model[0])):
            t0 = time.perf_counter()
            seeds = [batches[i] for batches in per_model]
            if self.options["mode"] == "naive":
                yield self._naive_iteration(epoch, i, seeds, t0)
            else:
                yield self._micrograph_iteration(epoch, i, seeds, t0)
            self._iterations += 1

    def _micrograph_iteration(self, epoch: int, i: int, seeds: list[np.ndarray],
                              t0: float) -> HopIteration:
        ctx = self.ctx
        plan = plan_iteration(seeds, self.owner, self.merges)
        steps, sampling = [], FetchCounts()
        for k in range(plan.steps):
            d = plan.hosted(k, ctx.rank)
            step = TimeStep(model=d, batch_size=int(seeds[d].shape[0]))
            roots = plan.roots[k][d]
            if roots.shape[0]:
                step.batch, cost = self._sample(roots, batch_seed(ctx.spec.seed, d, epoch, i))
                sampling.add(cost)
            steps.append(step)
        t1 = time.perf_counter()
        counts = self._gather([s for s in steps if s.batch is not None])
        t2 = time.perf_counter()
        m = self._metrics
        m["time_steps"] += plan.steps
        m["micrographs"] += sum(s.batch is not None for s in steps)
        m["idle_steps"] += sum(s.batch is None for s in steps)
        empty = torch.empty(0)
        return HopIteration(step=i, batch=_empty_batch(), features=empty, labels=empty,
                            sample_s=t1 - t0, fetch_wait_s=t2 - t1, counts=counts,
                            sampling=sampling, plan=plan, time_steps=steps,
                            extra={"time_steps": plan.steps})

    def _gather(self, steps: list[TimeStep]) -> FetchCounts:
        """Feature rows of every micrograph set, pre-gathered or per time step; sets each
        step's ``features`` and ``labels`` and counts the pre-gathering savings."""
        ctx, store, m = self.ctx, self.ctx.store, self._metrics
        counts = FetchCounts()
        remote_sets, per_step_rpcs = [], 0
        for s in steps:
            nodes = s.batch.input_nodes
            remote = nodes[store.owner[nodes] != ctx.rank]
            remote_sets.append(remote)
            per_step_rpcs += int(torch.unique(store.owner[remote]).numel())
            m["input_rows"] += int(nodes.numel())
            m["miss_rows"] += int(remote.numel())
        union = (torch.unique(torch.cat(remote_sets)) if remote_sets
                 else torch.empty(0, dtype=torch.int64))
        union_rpcs = int(torch.unique(store.owner[union]).numel())
        m["pregather_rows"] += int(union.numel())
        m["pregather_saved_rows"] += sum(int(r.numel()) for r in remote_sets) - int(union.numel())
        m["pregather_saved_rpcs"] += per_step_rpcs - union_rpcs
        if self.options["pregather"]:
            rows, counts = store.fetch_remote(union)
            for s in steps:
                nodes = s.batch.input_nodes
                x, local = store.local_part(nodes)
                x[~local] = rows[torch.searchsorted(union, nodes[~local])]
                counts.local_rows += int(local.sum())
                self._finish(s, x)
        else:
            for s in steps:
                x, step_counts = store.fetch(s.batch.input_nodes)
                counts.add(step_counts)
                self._finish(s, x)
        return counts

    def _finish(self, step: TimeStep, x: torch.Tensor) -> None:
        step.features = x.to(self.ctx.device, non_blocking=True)
        step.labels = self.ctx.labels_of(step.batch.seeds)
        step.batch = step.batch.to(self.ctx.device)

    def _naive_iteration(self, epoch: int, i: int, seeds: list[np.ndarray],
                         t0: float) -> HopIteration:
        ctx = self.ctx
        batch, sampling = self._sample(seeds[ctx.rank],
                                       batch_seed(ctx.spec.seed, ctx.rank, epoch, i))
        t1 = time.perf_counter()
        nodes = batch.input_nodes.numpy()
        # rows are read where they live (the visited machine aggregates them): no fetch
        x = torch.from_numpy(np.asarray(ctx.dataset.features[nodes]))
        step = TimeStep(model=ctx.rank, batch_size=int(batch.seeds.numel()), batch=batch)
        self._finish(step, x)
        t2 = time.perf_counter()
        tour = naive_tour(ctx.rank, self.owner[nodes], ctx.world_size)
        hop = naive_hop_bytes(batch, self._naive_state_width(), self.num_params * VALUE_BYTES)
        m = self._metrics
        m["time_steps"] += len(tour)
        m["micrographs"] += 1
        m["input_rows"] += int(nodes.shape[0])
        m["intermediate_bytes"] += (len(tour) - 1) * (hop - self.num_params * VALUE_BYTES)
        empty = torch.empty(0)
        return HopIteration(step=i, batch=_empty_batch(), features=empty, labels=empty,
                            sample_s=t1 - t0, fetch_wait_s=t2 - t1,
                            counts=FetchCounts(local_rows=int(nodes.shape[0])),
                            sampling=sampling, time_steps=[step], tour=tour, hop_bytes=hop,
                            extra={"time_steps": len(tour)})

    def _naive_state_width(self) -> int:
        spec = self.ctx.spec
        return naive_state_width(spec.architecture, self.model,
                                 int(self.ctx.dataset.feature_dim), int(spec.get("hidden")))

    # -- the training step: time steps, migrations, synchronisation ----------------------
    def train_step(self, prepared: PreparedBatch) -> StepOutput:
        assert isinstance(prepared, HopIteration)
        ctx = self.ctx
        params = list(self.model.parameters())
        acc = torch.zeros(self.num_params, device=ctx.device)
        loss_sum, correct, seen = 0.0, 0, 0
        for k, step in enumerate(prepared.time_steps):
            if step.batch is not None:
                self.optimizer.zero_grad(set_to_none=True)
                logits = self.model(step.batch.blocks, step.features)
                losses = F.cross_entropy(logits, step.labels, reduction="none")
                (losses.sum() / step.batch_size).backward()
                acc += torch.cat([p.grad.reshape(-1) if p.grad is not None
                                  else torch.zeros(p.numel(), device=ctx.device)
                                  for p in params])
                loss_sum += float(losses.detach().sum())
                correct += int((logits.argmax(dim=1) == step.labels).sum())
                seen += int(step.labels.shape[0])
            if prepared.plan is not None and k + 1 < prepared.plan.steps:
                acc = self._migrate(acc, prepared.plan, k)
        for a, b in zip(prepared.tour, prepared.tour[1:], strict=False):
            ctx.emulator.charge(a, b, prepared.hop_bytes, traffic=MIGRATION)
            self._metrics["migrations"] += 1
        self._synchronise(acc, params)
        return StepOutput(loss=loss_sum / max(1, seen), correct=correct, seen=seen)

    def _migrate(self, acc: torch.Tensor, plan: IterationPlan, k: int) -> torch.Tensor:
        """Send the hosted model (parameters + accumulated gradients) to its next machine
        and receive the one this machine hosts next; the receiver pays the link."""
        me = self.ctx.rank
        dst = plan.machines[k + 1][plan.hosted(k, me)]
        src = plan.machines[k][plan.hosted(k + 1, me)]
        params = list(self.model.parameters())
        payload = torch.cat([*(p.detach().reshape(-1) for p in params), acc])
        incoming = torch.empty_like(payload)
        exchange({dst: payload}, {src: incoming}, via_host=self.ctx.p2p_via_host)
        # the model arrives one transfer after its sender let it go
        self.ctx.emulator.charge(src, me, payload.numel() * payload.element_size(),
                                 traffic=MIGRATION)
        with torch.no_grad():  # the received replica's parameters (equal to ours)
            offset = 0
            for p in params:
                p.copy_(incoming[offset:offset + p.numel()].view_as(p))
                offset += p.numel()
        self._metrics["migrations"] += 1
        return incoming[self.num_params:]

    def _synchronise(self, acc: torch.Tensor, params: list[torch.Tensor]) -> None:
        """All-reduce the accumulated gradients (emulated ring), average, step."""
        ctx = self.ctx
        ctx.emulator.charge_ring_allreduce(ctx.rank, ctx.world_size,
                                           acc.numel() * acc.element_size())
        dist.all_reduce(acc)
        acc /= ctx.world_size
        offset = 0
        for p in params:
            p.grad = acc[offset:offset + p.numel()].view_as(p).clone()
            offset += p.numel()
        self.optimizer.step()

    # -- metrics and state ---------------------------------------------------------------
    def end_epoch(self, epoch: int) -> dict[str, Any]:
        metrics = dict(self._metrics)
        metrics["time_steps"] = metrics["time_steps"] / max(1, self._iterations)
        metrics["merges"] = self.merges
        return metrics

    def observe_epoch(self, records: list[dict[str, Any]]) -> None:
        """The merge search sees the epoch's time (the slowest worker's, target seconds)."""
        epoch_s = max(r["time_s"] / r["time_dilation"] for r in records)
        self.search.observe(epoch_s, self.ctx.world_size - 1)

    def state_dict(self) -> dict[str, Any]:
        s = self.search
        return {"merges": s.merges, "best_s": -1.0 if s.best_s is None else s.best_s,
                "frozen": s.frozen}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        best = float(state["best_s"])
        self.search = MergeSearch(merges=int(state["merges"]),
                                  best_s=None if best < 0 else best, frozen=bool(state["frozen"]))
