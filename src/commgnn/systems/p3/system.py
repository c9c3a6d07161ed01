"""``p3``: P3 (Gandhi & Iyer, OSDI 2021) as HopGNN reimplemented it — features split by
column, the first layer model-parallel, the rest data-parallel.

Placement: the graph structure is partitioned as the run's partitioning says (P3 hashes it:
use a ``random`` partitioning), and the features by **column**: worker ``j`` holds columns
``[lo_j, hi_j)`` (:func:`column_ranges`, ``F/P`` each) of *every* node, read from the dataset
at setup. No feature row ever crosses the network.

One step, on every worker ``w`` at once (without pipelining):

1. ``w`` samples its mini-batch as ``default`` does (same schedule, sampling and seeds) and
   pushes its layer-1 computation graph (block 0: its input node ids, CSR offsets and
   sources, 8-byte ids) to every other worker — ``graph`` traffic, one all-gather.
2. Every worker ``j`` computes, for every worker's mini-batch, the partial first layer from
   its columns and its slice of the first layer's input weights (:data:`SPLITS`), and sends
   each partial to the mini-batch's owner — ``activation`` traffic, point to point.
3. The owner sums the partials (in worker order, so bit-for-bit deterministic), finishes
   layer 1 and runs layers 2..L, the loss and the backward pass; it returns the gradient of
   the summed partial to every worker — ``activation_grad`` traffic.
4. Every worker back-propagates each received gradient through its own partials: the
   gradient of its weight slice is the sum over the mini-batches (÷ P, DDP's average), and
   only it updates that slice. Every other parameter is all-reduced (emulated ring,
   ``allreduce``) and stepped as under DDP.

What is partial (:data:`SPLITS`, one entry per architecture):

- ``sage``, ``gcn``: the whole first layer but its bias. Both are linear in the input, so
  worker ``j`` aggregates its columns over the block (SAGE: self term + neighbour mean;
  GCN: the normalised sum) and returns one row per layer-1 destination — the exact
  pre-activation once summed.
- ``gat``: the projection ``W x`` of every block-0 source (one row per *source*: attention
  needs whole scores before its softmax, so nothing can be aggregated before the sum);
  scores, softmax and aggregation run at the owner.
- ``deepgcn``: the input encoder ``W x`` of every source (its bias, the GENConv layers and
  everything after run at the owner).
- ``film``: the first FiLM layer's four input projections — the message projection of every
  source and the three FiLM/skip projections of every destination; their biases, the
  modulation and aggregation run at the owner.

All of these are exact: the gradients of a step equal ``default``'s on the same batches up
to float summation order (``tests/systems/p3/test_p3.py``), with dropout 0 (input dropout is
drawn per column slice, so with dropout the masks differ from ``default``'s). A named PyG
convolution has no declared split and is refused at validate time.

Parameters of the split weights on a worker are only right in its own columns during an
epoch; :meth:`P3System.end_epoch` gathers every worker's columns so that evaluation and the
checkpoint see the whole model (charged as ``allreduce`` traffic, outside the steps), and
each worker checkpoints the Adam moments of its own columns (exact resume).

Pipelining (``pipeline: k``, P3 §4.3's bounded staleness): step ``i`` first starts the
first layer of batch ``i + k`` — partials computed with the current weights, sent to the
owners, their link time charged on a background thread so it overlaps steps ``i..i+k−1``
— then finishes batch ``i``, whose partials were computed ``k`` updates ago: the layer-1
weight slices get gradients of ``k``-stale weights (the step records carry
``layer1_staleness``; the other layers are never stale). The pipeline fills and drains
within each epoch (the first ``k`` batches start with step 0, the last steps start none),
so every count equals ``pipeline: 0``'s; the computation-graph push and the gradient
return stay on the step's critical path. ``k = 0`` is the exact, unpipelined schedule.

The evaluation reads whole feature rows through the row store (``System.fetch``), outside
the step counts.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import Tensor, nn

from commgnn.core.batch import PreparedBatch, StepOutput
from commgnn.core.blocks import Block
from commgnn.core.counts import FetchCounts
from commgnn.models.layers import block_edges
from commgnn.network.netem import ACTIVATION, ACTIVATION_GRAD, ALLREDUCE, GRAPH, in_turn
from commgnn.runtime.p2p import exchange
from commgnn.systems.default.system import DefaultSystem
from commgnn.systems.p3 import DESCRIPTION

ID_BYTES = 8


def column_ranges(dim: int, parts: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` of each worker's feature columns: ``dim`` split into ``parts`` nearly
    equal runs, the first ``dim mod parts`` one column longer."""
    bounds = np.cumsum([0] + [len(c) for c in np.array_split(np.arange(dim), parts)])
    return [(int(a), int(b)) for a, b in pairwise(bounds)]


def _scatter_sum(values: Tensor, index: Tensor, rows: int) -> Tensor:
    out = torch.zeros((rows, *values.shape[1:]), dtype=values.dtype, device=values.device)
    return out.index_add_(0, index, values)


class _SummedProjection(nn.Module):
    """Stands in for one of the first layer's input projections at the owner: returns the
    summed partial products of its input rows plus the projection's own bias."""

    def __init__(self, rows: Tensor, bias: Tensor | None) -> None:
        super().__init__()
        self.rows, self.bias = rows, bias

    def forward(self, x: Tensor) -> Tensor:
        if x.shape[0] != self.rows.shape[0]:
            raise ValueError(f"p3: projection of {x.shape[0]} rows, {self.rows.shape[0]} "
                             "summed")
        return self.rows if self.bias is None else self.rows + self.bias


@contextmanager
def _substituted(model: nn.Module, modules: dict[str, nn.Module]):
    """``model`` with the submodules at ``modules``' paths replaced, restored afterwards."""
    saved = {}
    try:
        for path, module in modules.items():
            parent_path, _, name = path.rpartition(".")
            parent = model.get_submodule(parent_path) if parent_path else model
            saved[path] = (parent, name, getattr(parent, name))
            setattr(parent, name, module)
        yield model
    finally:
        for parent, name, original in saved.values():
            setattr(parent, name, original)


@dataclass(frozen=True)
class FirstLayerSplit:
    """How an architecture's first layer divides by input columns.

    ``sliced(model)``: the ``(weight, input dimension)`` pairs split by column;
    ``partial(model, block, x, lo, hi)``: the partial results (one tensor each) of columns
    ``[lo, hi)`` of the block's source features ``x``; ``forward(model, blocks, summed)``:
    the logits, given the summed partials."""

    sliced: Callable[[nn.Module], list[tuple[nn.Parameter, int]]]
    partial: Callable[[nn.Module, Block, Tensor, int, int], list[Tensor]]
    forward: Callable[[nn.Module, Sequence[Block], list[Tensor]], Tensor]


def _after_first_layer(model: nn.Module, blocks: Sequence[Block], h: Tensor) -> Tensor:
    """A ``BlockGNN`` from its first layer's output on: as ``BlockGNN.forward``."""
    for i in range(1, model.num_layers):
        h = model.dropout(model.activation(h))
        h = model.layers[i](blocks[i], h)
    return h


def _sage_partial(model, block, x, lo, hi):
    conv = model.layers[0]
    src, dst = block_edges(block)
    neigh = _scatter_sum(x.index_select(0, src), dst, block.num_dst)
    neigh = neigh / block.in_degrees().clamp(min=1).to(x.dtype).unsqueeze(-1)
    return [x[: block.num_dst] @ conv.lin_self.weight[:, lo:hi].T
            + neigh @ conv.lin_neigh.weight[:, lo:hi].T]


def _gcn_partial(model, block, x, lo, hi):
    conv = model.layers[0]
    src, dst = block_edges(block, self_loops=True)
    w = conv.edge_weights(block, src, dst, x.dtype).unsqueeze(-1)
    return [_scatter_sum((x @ conv.weight[lo:hi]).index_select(0, src) * w, dst,
                         block.num_dst)]


def _bias_then_rest(model, blocks, summed):
    bias = model.layers[0].bias
    h = summed[0] if bias is None else summed[0] + bias
    return _after_first_layer(model, blocks, h)


def _projections(paths: Sequence[tuple[str, str]]) -> FirstLayerSplit:
    """A split whose partials are the listed ``(module path, "src" | "dst")`` linear
    projections of the raw features: each of every block-0 source or destination row; at
    the owner the model runs whole with those modules answering the summed rows."""

    def sliced(model):
        return [(model.get_submodule(path).weight, 1) for path, _ in paths]

    def partial(model, block, x, lo, hi):
        out = []
        for path, rows in paths:
            rows_x = x if rows == "src" else x[: block.num_dst]
            out.append(rows_x @ model.get_submodule(path).weight[:, lo:hi].T)
        return out

    def forward(model, blocks, summed):
        stand_ins = {path: _SummedProjection(rows, model.get_submodule(path).bias)
                     for (path, _), rows in zip(paths, summed, strict=True)}
        placeholder = summed[0].new_zeros((blocks[0].num_src, 0))
        with _substituted(model, stand_ins):
            return model(blocks, placeholder)

    return FirstLayerSplit(sliced, partial, forward)


#: The first-layer split of every architecture P3 can train (see the module docstring).
SPLITS: dict[str, FirstLayerSplit] = {
    "sage": FirstLayerSplit(
        lambda m: [(m.layers[0].lin_self.weight, 1), (m.layers[0].lin_neigh.weight, 1)],
        _sage_partial, _bias_then_rest),
    "gcn": FirstLayerSplit(lambda m: [(m.layers[0].weight, 0)], _gcn_partial,
                           _bias_then_rest),
    "gat": _projections([("layers.0.lin", "src")]),
    "deepgcn": _projections([("encoder", "src")]),
    "film": _projections([("layers.0.lins.0", "src"), ("layers.0.films.0", "dst"),
                          ("layers.0.lin_skip", "dst"), ("layers.0.film_skip", "dst")]),
}


def slice_of(weight: Tensor, dim: int, lo: int, hi: int) -> Tensor:
    """Columns ``[lo, hi)`` of a split weight (its input dimension ``dim``)."""
    return weight.narrow(dim, lo, hi - lo)


def graph_payload(input_nodes: Tensor, block: Block) -> Tensor:
    """A layer-1 computation graph as one int64 tensor: ``[num_src, num_dst, input ids…,
    CSR offsets…, sources…]`` (what every other worker receives)."""
    head = torch.tensor([block.num_src, block.num_dst], dtype=torch.int64)
    return torch.cat([head, input_nodes.to(torch.int64).cpu(), block.indptr.cpu(),
                      block.indices.cpu()])


def parse_graph(payload: Tensor) -> tuple[Tensor, Block]:
    """Inverse of :func:`graph_payload`."""
    num_src, num_dst = int(payload[0]), int(payload[1])
    nodes = payload[2:2 + num_src]
    indptr = payload[2 + num_src:3 + num_src + num_dst]
    edges = int(indptr[-1])
    indices = payload[3 + num_src + num_dst:3 + num_src + num_dst + edges]
    return nodes, Block(num_src, num_dst, indptr.clone(), indices.clone())


@dataclass
class P3Batch(PreparedBatch):
    """A step: this worker's batch (the base fields) and every worker's layer-1 graph with
    the rows of this worker's columns (``features`` is their concatenation)."""

    graphs: list[Block] = field(default_factory=list)
    columns: list[Tensor] = field(default_factory=list)
    graph_bytes: int = 0
    # what to start with this step: this batch first where ``starts_itself``, then the later
    # batches of ``ahead`` (never itself: a batch in its own list is a reference cycle,
    # freed only by the cyclic collector's rare full passes — on uk-like 1/4 each P3 batch
    # holds ≈0.9 GB of column rows and a worker grew to 6.4 GB in 5 steps)
    starts_itself: bool = False
    ahead: list[P3Batch] = field(default_factory=list)


@dataclass
class _Flight:
    """A batch whose first layer has started: this worker's partials (autograd graphs to
    its weight slices), the partials of its own batch received, and their link time."""

    batch: P3Batch
    partials: list[list[Tensor]]
    incoming: list[Tensor]
    nbytes: int  # activation bytes received here
    updates: int  # optimiser steps taken when it started
    charging: Future | None = None

    def wait(self) -> list[Tensor]:
        if self.charging is not None:
            self.charging.result()
        return self.incoming

    def staleness(self, updates: int) -> int:
        """Optimiser steps between this batch's first layer and its update."""
        return updates - self.updates


class P3System(DefaultSystem):
    description = DESCRIPTION
    wants_ddp = False
    reductions = {
        "model_gather_bytes": "sum",  # split weights gathered at the end of each epoch
    }
    # the options are default's: schedule and sampling

    @classmethod
    def run_problems(cls, spec, shape=None) -> list[str]:
        """The architectures whose first layer it splits; a pipeline shorter than an
        epoch (deeper, every batch's first layer would start with the epoch's first
        step: the depth would not be the one asked for)."""
        problems = []
        if spec.architecture not in SPLITS:
            problems.append(f"run {spec.run_id}: p3 splits the first layer of "
                            f"{sorted(SPLITS)} only, not {spec.architecture!r}")
        depth = spec.system_options.get("pipeline", 0)
        steps = cls.max_steps_per_epoch(spec, shape)
        if depth and steps is not None and depth >= steps:
            problems.append(cls.option_problem(
                spec, "pipeline", f"not fewer than the at most {steps} steps of an epoch "
                f"(dataset {spec.dataset!r}, batch {spec.batch_size}): every batch's "
                "first layer would start with the epoch's first step"))
        return problems

    def setup(self, ctx, model, optimizer) -> None:
        super().setup(ctx, model, optimizer)
        self.split = SPLITS[ctx.spec.architecture]
        self.ranges = column_ranges(ctx.dataset.feature_dim, ctx.world_size)
        lo, hi = self.ranges[ctx.rank]
        self.columns = torch.from_numpy(np.ascontiguousarray(
            ctx.dataset.features[:, lo:hi], dtype=np.float32)).to(ctx.device)
        self.sliced = self.split.sliced(model)
        split_ids = {id(w) for w, _ in self.sliced}
        self.dense = [p for p in model.parameters() if id(p) not in split_ids]
        self._in_flight: deque[_Flight] = deque()
        self._updates = 0
        self._charger = ThreadPoolExecutor(max_workers=1, thread_name_prefix="p3-link")

    # -- preparation: sample, push the computation graph ---------------------------------
    def batches(self, epoch: int) -> Iterator[PreparedBatch]:
        """The epoch's steps; with ``pipeline: k`` each step also carries the batches whose
        first layer starts before it (batches ``0..k`` with the first step, then ``i + k``
        with step ``i``), prepared — sampled, graphs pushed — in step order. No batch refers
        to itself or to an earlier one, so each is freed as soon as its step drops it."""
        depth = self.options["pipeline"]
        seeds = self.epoch_seeds(epoch)
        prepared = (self._prepare(epoch, step, s) for step, s in enumerate(seeds))
        window: deque[P3Batch] = deque()
        for step in range(len(seeds)):
            while len(window) <= depth and (nxt := next(prepared, None)) is not None:
                window.append(nxt)
            current = window.popleft()
            if step == 0:
                current.starts_itself, current.ahead = True, list(window)
            elif depth == 0:
                current.starts_itself = True
            elif len(window) == depth:  # batch step + depth was just prepared
                current.ahead = [window[-1]]
            yield current

    def _prepare(self, epoch: int, step: int, seeds: np.ndarray) -> P3Batch:
        ctx = self.ctx
        t0 = time.perf_counter()
        batch, sampling = self.sample(epoch, step, seeds)
        t1 = time.perf_counter()
        graphs, nodes, graph_bytes = self._exchange_graphs(batch.input_nodes, batch.blocks[0])
        columns = [self.columns.index_select(0, n.to(self.columns.device)) for n in nodes]
        t2 = time.perf_counter()
        counts = FetchCounts(local_rows=int(batch.input_nodes.numel()))
        return P3Batch(step=step, batch=batch.to(ctx.device), features=torch.cat(columns),
                       labels=ctx.labels_of(batch.seeds), sample_s=t1 - t0,
                       fetch_wait_s=t2 - t1, counts=counts, sampling=sampling,
                       graphs=[g.to(ctx.device) for g in graphs], columns=columns,
                       graph_bytes=graph_bytes)

    def _exchange_graphs(self, input_nodes: Tensor, block: Block
                         ) -> tuple[list[Block], list[Tensor], int]:
        """Every worker's layer-1 graph (one all-gather); charges what arrives here."""
        ctx = self.ctx
        mine = graph_payload(input_nodes, block)
        sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(ctx.world_size)]
        dist.all_gather(sizes, torch.tensor([mine.numel()], dtype=torch.int64))
        longest = int(max(s.item() for s in sizes))
        padded = torch.zeros(longest, dtype=torch.int64)
        padded[: mine.numel()] = mine
        gathered = [torch.empty(longest, dtype=torch.int64) for _ in range(ctx.world_size)]
        dist.all_gather(gathered, padded)
        graphs, nodes, received = [], [], 0
        for size, payload in zip(sizes, gathered, strict=True):
            ids, graph = parse_graph(payload[: int(size.item())])
            graphs.append(graph)
            nodes.append(ids)
        for w in in_turn(ctx.rank, (w for w in range(ctx.world_size) if w != ctx.rank)):
            nbytes = int(sizes[w].item()) * ID_BYTES
            ctx.emulator.charge(w, ctx.rank, nbytes, traffic=GRAPH)
            received += nbytes
        return graphs, nodes, received

    # -- the step ------------------------------------------------------------------------
    def train_step(self, prepared: PreparedBatch) -> StepOutput:
        """Start the first layer of this step's batch (where ``prepared.starts_itself``) and
        of the batches ``prepared.ahead`` names, then finish this step's batch (started now,
        or ``pipeline`` steps ago with the weights of then)."""
        assert isinstance(prepared, P3Batch)
        ctx, model = self.ctx, self.model
        me, world = ctx.rank, ctx.world_size
        for batch in ([prepared] if prepared.starts_itself else []) + prepared.ahead:
            self._in_flight.append(self._start(batch))
        flight = self._in_flight.popleft()
        if flight.batch is not prepared:
            raise RuntimeError(f"p3: step {prepared.step} found batch {flight.batch.step} "
                               "in flight")
        received = flight.wait()
        summed_flat = torch.zeros_like(received[me])
        for j in range(world):  # worker order: the same sum on every run
            summed_flat += received[j]
        # 3. the owner: finish layer 1, layers 2..L, loss, backward
        self.optimizer.zero_grad(set_to_none=True)
        summed_flat.requires_grad_(True)
        summed = _unflat(summed_flat, flight.partials[me])
        blocks = [prepared.graphs[me], *prepared.batch.blocks[1:]]
        logits = self.split.forward(model, blocks, summed)
        loss = F.cross_entropy(logits, prepared.labels)
        loss.backward()
        grads, grad_bytes = self._exchange_grads(summed_flat.grad, flight.partials)
        # 4. this worker's weight slices: every batch's gradient through its own partials
        torch.autograd.backward([_flat(p) for p in flight.partials],
                                [g / world for g in grads])
        self._synchronise_dense()
        staleness = flight.staleness(self._updates)
        self.optimizer.step()
        self._updates += 1
        correct = int((logits.argmax(dim=1) == prepared.labels).sum())
        return StepOutput(loss=float(loss.detach()), correct=correct,
                          seen=int(prepared.labels.shape[0]),
                          extra={"graph_bytes": prepared.graph_bytes,
                                 "activation_bytes": flight.nbytes,
                                 "activation_grad_bytes": grad_bytes,
                                 "layer1_staleness": staleness})

    def _start(self, batch: P3Batch) -> _Flight:
        """2. The partial first layers of every worker's ``batch`` from this worker's
        columns, sent to their owners; the owners' partials of this worker's batch arrive
        here (the data at once, their link time on a background thread when pipelined, so
        it overlaps the steps in between)."""
        model, me, world = self.model, self.ctx.rank, self.ctx.world_size
        lo, hi = self.ranges[me]
        partials = [self.split.partial(model, graph, model_input(model, x), lo, hi)
                    for graph, x in zip(batch.graphs, batch.columns, strict=True)]
        own = _flat(partials[me]).detach()
        incoming = [own if j == me else torch.empty_like(own) for j in range(world)]
        exchange({w: _flat(partials[w]).detach() for w in range(world) if w != me},
                 {j: incoming[j] for j in range(world) if j != me}, self.ctx.p2p_via_host)
        nbytes = own.numel() * own.element_size()
        flight = _Flight(batch, partials, incoming, nbytes * (world - 1), self._updates)
        if self.options["pipeline"]:
            flight.charging = self._charger.submit(self._charge_activations, nbytes)
        else:
            self._charge_activations(nbytes)
        return flight

    def _charge_activations(self, nbytes: int) -> None:
        me = self.ctx.rank
        for j in in_turn(me, (j for j in range(self.ctx.world_size) if j != me)):
            self.ctx.emulator.charge(j, me, nbytes, traffic=ACTIVATION)

    def _exchange_grads(self, grad: Tensor, partials: list[list[Tensor]]
                        ) -> tuple[list[Tensor], int]:
        """Send this batch's summed-partial gradient to every worker; receive each owner's
        (the shape of this worker's partial of its batch), as ``activation_grad``."""
        me, world = self.ctx.rank, self.ctx.world_size
        grads = [grad if w == me else grad.new_empty(sum(t.numel() for t in partials[w]))
                 for w in range(world)]
        exchange({j: grad for j in range(world) if j != me},
                 {w: grads[w] for w in range(world) if w != me}, self.ctx.p2p_via_host)
        received = 0
        for w in in_turn(me, (w for w in range(world) if w != me)):
            nbytes = grads[w].numel() * grads[w].element_size()
            self.ctx.emulator.charge(w, me, nbytes, traffic=ACTIVATION_GRAD)
            received += nbytes
        return grads, received

    def _synchronise_dense(self) -> None:
        """All-reduce (average) the gradients of every parameter but the split weights."""
        ctx = self.ctx
        flat = torch.cat([p.grad.reshape(-1) if p.grad is not None
                          else torch.zeros(p.numel(), device=ctx.device) for p in self.dense])
        ctx.emulator.charge_ring_allreduce(ctx.rank, ctx.world_size,
                                           flat.numel() * flat.element_size())
        dist.all_reduce(flat)
        flat /= ctx.world_size
        offset = 0
        for p in self.dense:
            p.grad = flat[offset:offset + p.numel()].view_as(p).clone()
            offset += p.numel()

    # -- the end of an epoch: one whole model everywhere ---------------------------------
    def end_epoch(self, epoch: int) -> dict[str, Any]:
        """Gather every worker's columns of the split weights (evaluation and the
        checkpoint need the whole model), charged as ``allreduce`` traffic."""
        ctx = self.ctx
        if self._in_flight:  # the pipeline drains within the epoch
            raise RuntimeError(f"p3: {len(self._in_flight)} batches still in flight")
        received = 0
        with torch.no_grad():
            for weight, dim in self.sliced:
                pieces = [slice_of(weight, dim, lo, hi).contiguous() for lo, hi in self.ranges]
                longest = max(p.numel() for p in pieces)
                padded = torch.zeros(longest, dtype=weight.dtype, device=weight.device)
                padded[: pieces[ctx.rank].numel()] = pieces[ctx.rank].reshape(-1)
                gathered = [torch.empty_like(padded) for _ in range(ctx.world_size)]
                dist.all_gather(gathered, padded)
                for w in in_turn(ctx.rank, (w for w in range(ctx.world_size) if w != ctx.rank)):
                    lo, hi = self.ranges[w]
                    piece = gathered[w][: pieces[w].numel()].view_as(pieces[w])
                    slice_of(weight, dim, lo, hi).copy_(piece)
                    nbytes = piece.numel() * piece.element_size()
                    ctx.emulator.charge(w, ctx.rank, nbytes, traffic=ALLREDUCE)
                    received += nbytes
        return {"model_gather_bytes": received}

    def state_dict(self) -> dict[str, Any]:
        """The Adam moments of this worker's columns of the split weights (only this
        worker's are right: the checkpoint's optimiser is rank 0's)."""
        lo, hi = self.ranges[self.ctx.rank]
        moments = []
        for weight, dim in self.sliced:
            state = self.optimizer.state.get(weight, {})
            # on the host: the states travel by pickle (all_gather_object), where a CUDA
            # tensor would be rebuilt on its device index on every receiver
            moments.append({key: slice_of(state[key], dim, lo, hi).detach().cpu().clone()
                            for key in ("exp_avg", "exp_avg_sq") if key in state})
        return {"moments": moments}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        lo, hi = self.ranges[self.ctx.rank]
        for (weight, dim), moments in zip(self.sliced, state["moments"], strict=True):
            target = self.optimizer.state.get(weight, {})
            for key, value in moments.items():
                slice_of(target[key], dim, lo, hi).copy_(value)

    def close(self) -> None:
        self._charger.shutdown(wait=True)


def model_input(model: nn.Module, x: Tensor) -> Tensor:
    """The model's input dropout applied to a column slice (elementwise: the same
    distribution as on whole rows, other masks)."""
    drop = getattr(model, "input_dropout", None)
    return drop(x) if drop is not None else x


def _flat(parts: list[Tensor]) -> Tensor:
    return torch.cat([p.reshape(-1) for p in parts])


def _unflat(flat: Tensor, like: list[Tensor]) -> list[Tensor]:
    out, offset = [], 0
    for t in like:
        out.append(flat[offset:offset + t.numel()].view_as(t))
        offset += t.numel()
    return out
