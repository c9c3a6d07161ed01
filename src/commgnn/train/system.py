"""The system contract: everything a communication strategy is, declared in one class.

A built-in system is a package ``commgnn.systems.<name>``: its description
(``__init__.py``: ``DESCRIPTION``, :class:`~commgnn.core.description.SystemDescription`)
and one :class:`System` subclass in ``system.py`` that names it; a module named by a
``commgnn.systems`` entry point may instead hold a subclass that sets its ``name`` and
declarations itself. Defining the class registers it (:data:`SYSTEMS`); the schema of its
options, the pipeline inputs it needs, the partition methods it accepts and how its
metrics are aggregated are declarations, and the config validation, the workflow, the
summaries and the tables read them — there is no list to keep in sync anywhere else.

Lifecycle on every worker (the loop is :mod:`commgnn.train.loop`)::

    system = cls(options)                       options validated, defaults filled in
    system.check_partition(partition, P)        before any process group exists
    system.setup(ctx, model, optimizer)         after the model exists (wraps DDP or not)
    system.load_state_dict(s)                   when resuming from a checkpoint
    for epoch:
        placement = system.placement(epoch)     which partitions each worker trains
        system.start_epoch(epoch)
        for prepared in system.batches(epoch):  inputs of each step, features on device
            out = system.train_step(prepared)   default: fwd, loss, bwd (+sync), step
            system.observe(step_record)         after every step (controllers)
        metrics = system.end_epoch(epoch)       merged into the worker's epoch record
        evaluate (system.fetch)
        system.observe_epoch(records)           every worker's epoch record
        checkpoint (system.state_dict() of every worker)
    system.close()
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

from commgnn.core.batch import PreparedBatch, StepOutput
from commgnn.core.config import ConfigError
from commgnn.core.counts import FetchCounts
from commgnn.core.declarations import FIGURE_INPUTS, PIPELINE_INPUTS, REDUCTIONS
from commgnn.core.description import SystemDescription
from commgnn.core.placement import Placement
from commgnn.network.netem import allreduce_hook

if TYPE_CHECKING:
    from commgnn.cluster import DatasetShape
    from commgnn.core.spec import RunSpec
    from commgnn.data.store import GraphDataset
    from commgnn.partition import Partition
    from commgnn.train.context import WorkerContext
    from commgnn.train.metrics import StepRecord

#: The class attributes a :class:`~commgnn.core.description.SystemDescription` sets.
DESCRIBED = ("name", "colour", "figure_labels", "options", "needs", "partition_methods",
             "figures", "uses_network", "external")


class System(ABC):
    """A communication strategy. Subclasses with a ``name`` register themselves.

    Class attributes (the declarations; options, needs, partition methods and
    reductions are inherited and may be extended):

    - ``name``: the key used in configs and run ids;
    - ``options``: JSON-schema ``properties`` of the system's options (each with a
      ``default`` where it has one), validated with the config;
    - ``needs``: pipeline inputs (keys of :data:`PIPELINE_INPUTS`);
    - ``partition_methods``: partition methods the system accepts;
    - ``reductions``: ``{metric: "sum" | "max" | "mean"}`` for the metrics
      :meth:`end_epoch` returns (see :data:`REDUCTIONS`);
    - ``uses_network``: False for systems whose traffic is free by definition;
    - ``wants_ddp``: whether :meth:`setup` wraps the model in DDP with the emulated
      all-reduce (or :meth:`gradient_hook`);
    - ``figures``: ``{figure module: inputs}`` (keys of :data:`FIGURE_INPUTS`), built by
      the workflow whenever the experiment matrix runs the system;
    - ``colour``: its colour in every figure (one of Paul Tol's colour-blind-safe "muted"
      palette, ``report/palette.py``);
    - ``figure_labels``: a regular expression matching, at its start, how figures label a series
      this system ran (the papers' method names, e.g. ``DGL\b|LO\b``); its own name, and
      ``<name>-<variant>``, always count.
    - ``device_state``: the memory metrics among its ``reductions`` that measure state
      kept on the training device (caches, staged batches); the summary's ``memory_on``
      says where each memory figure lives;
    - ``external``: the system trains outside commgnn's loop (another framework, in its
      own environment): ``commgnn train`` calls its ``run_external(spec, paths)``, which
      writes the same run directory (records, ``summary.json``) and returns the summary.

    :meth:`end_epoch` may also return ``extra_remote_rpcs`` / ``_rows`` / ``_bytes``:
    traffic sent outside the steps (e.g. cache fills), added to the epoch's remote totals.
    """

    name: ClassVar[str]
    options: ClassVar[dict[str, dict]] = {}
    needs: ClassVar[tuple[str, ...]] = ()
    partition_methods: ClassVar[tuple[str, ...]] = ("metis", "random")
    reductions: ClassVar[dict[str, str]] = {}
    uses_network: ClassVar[bool] = True
    wants_ddp: ClassVar[bool] = True
    device_state: ClassVar[tuple[str, ...]] = ()
    external: ClassVar[bool] = False
    figures: ClassVar[dict[str, tuple[str, ...]]] = {}
    #: The system's colour in every comparison figure (``report/palette.py``; None: one
    #: from the palette by its name).
    colour: ClassVar[str | None] = None
    #: How figures label what it ran, beside its name (``report/palette.py``).
    figure_labels: ClassVar[str | None] = None

    ctx: WorkerContext
    model: torch.nn.Module  # the bare model (evaluation, checkpoints)
    train_module: torch.nn.Module  # what train_step calls: DDP(model) or model
    optimizer: torch.optim.Optimizer

    #: Its declarations (:class:`~commgnn.core.description.SystemDescription`, the
    #: ``DESCRIPTION`` of its package's ``__init__.py``); a class that names a
    #: ``description`` takes ``name``, ``colour``, ``figure_labels``, ``options``, ``needs``,
    #: ``partition_methods``, ``figures``, ``uses_network`` and ``external`` from it. A class
    #: that sets ``name`` itself instead gets a description made of its attributes.
    description: ClassVar[SystemDescription]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "description" in cls.__dict__:
            described = cls.description
            for attribute in DESCRIBED:
                setattr(cls, attribute, getattr(described, attribute))
            register(cls)
        elif "name" in cls.__dict__:
            cls.description = SystemDescription(
                **{attribute: getattr(cls, attribute) for attribute in DESCRIBED
                   if attribute != "options"}, options=cls._inherited("options"))
            register(cls)

    # -- declarations --------------------------------------------------------------------
    @classmethod
    def _inherited(cls, attribute: str) -> dict:
        """``attribute`` (a dict) merged from the bases down to this class."""
        merged: dict = {}
        for klass in reversed(cls.__mro__):
            merged.update(klass.__dict__.get(attribute, {}))
        return merged

    @classmethod
    def wants(cls, options: dict) -> tuple[str, ...]:
        """Pipeline inputs the workflow builds for a run with these (resolved) options:
        ``needs`` (required by :meth:`setup`), plus any optional ones the options ask for."""
        return cls.needs

    @classmethod
    def option_properties(cls) -> dict[str, dict]:
        """The option schemas of the system and those it extends (its description's)."""
        return cls.description.option_properties()

    @classmethod
    def metric_reductions(cls) -> dict[str, str]:
        """The metric reductions of this class and its bases."""
        return cls._inherited("reductions")

    @classmethod
    def option_schema(cls) -> dict:
        """JSON schema of a ``systems.<name>`` config entry for this system."""
        return cls.description.option_schema()

    @classmethod
    def resolve_options(cls, options: dict, where: str | None = None) -> dict:
        """``options`` validated (ConfigError naming ``where.<key>``), defaults filled in;
        without the ``system`` key (:meth:`SystemDescription.resolve_options`)."""
        return cls.description.resolve_options(options, where)

    @classmethod
    def describe(cls) -> list[str]:
        """Lines describing the system's declarations (``commgnn systems``)."""
        lines = [f"{cls.name}  ({cls.__module__}.{cls.__qualname__})",
                 f"  partition methods: {', '.join(cls.partition_methods)}",
                 f"  needs: {', '.join(cls.needs) or '-'}"]
        for key, prop in sorted(cls.option_properties().items()):
            kind = prop.get("type") or ("one of " + "|".join(map(str, prop["enum"]))
                                        if "enum" in prop else "any")
            fallback = f" (default {prop['default']!r})" if "default" in prop else ""
            lines.append(f"  option {key}: {kind}{fallback} — {prop.get('description', '')}")
        lines += [f"  metric {key}: {how}" for key, how in sorted(cls.metric_reductions().items())]
        return lines

    @classmethod
    def run_problems(cls, spec: RunSpec, shape: DatasetShape | None = None) -> list[str]:
        """What this system cannot run in an experiment cell, one line each, checked when
        the config is validated (``commgnn validate``, the workflow before any job): a
        model, network or device it does not support, and an option the run makes
        meaningless — one that exceeds what the run has (its workers, epochs or steps,
        another option's value). ``shape``: the cell's dataset shape where the config fixes
        it (:func:`commgnn.cluster.dataset_shape`; None otherwise), for bounds such as
        :meth:`max_steps_per_epoch`. An option's line names the key the user wrote,
        ``systems.<spec.system>.<key>: <value>: …`` (:meth:`option_problem`);
        :func:`~commgnn.experiments.expand_experiments` appends the experiment and the run.
        Default: nothing."""
        return []

    @classmethod
    def path_problems(cls, where: str, options: dict) -> list[str]:
        """Files and directories the (resolved) ``options`` of the ``systems`` entry
        ``where`` name that this host lacks, one line each naming ``where.<key>``;
        checked with the dataset paths (:func:`commgnn.checks.path_problems`: ``commgnn
        validate`` but with ``--no-host``, the workflow before it builds its DAG).
        Default: nothing."""
        return []

    @classmethod
    def with_defaults(cls, options: dict) -> dict:
        """``options`` (a run spec's, already validated) with every declared default
        filled in where they leave a key out."""
        return {**{key: prop.get("default") for key, prop in
                   cls.option_properties().items()}, **options}

    @classmethod
    def option_problem(cls, spec: RunSpec, key: str, why: str) -> str:
        """One :meth:`run_problems` line about option ``key``, naming the user's key path
        (``systems.<the name the experiment wrote>.<key>``) and the value (its default
        where the options leave it out)."""
        value = spec.system_options.get(key, cls.option_properties().get(key, {}).get(
            "default"))
        return f"systems.{spec.system}.{key}: {value!r}: {why}"

    @staticmethod
    def max_steps_per_epoch(spec: RunSpec, shape: DatasetShape | None) -> int | None:
        """An upper bound of the steps any worker runs per epoch with the loop's
        schedules (own partitions or the global split: never more batches than the whole
        training set makes), or None when the shape is unknown. One training node more
        than ``shape`` says: its split rounds the fraction ``floor(f·n + 1e-9)``."""
        if shape is None:
            return None
        return max(1, math.ceil((shape.train_nodes + 1) / spec.batch_size))

    # -- lifecycle -----------------------------------------------------------------------
    def __init__(self, options: dict | None = None, where: str | None = None) -> None:
        #: The config key of the system's entry as the run's config wrote it
        #: (``systems.<name>``, a variant's own name), which run-time refusals name.
        self.where = where or f"systems.{self.name}"
        self.options = self.resolve_options(options or {}, self.where)

    def check_partition(self, partition: Partition, world_size: int) -> None:
        """Refuse a partition this system cannot train on (before any process group).

        Default: one part per worker."""
        if partition.num_parts != world_size:
            raise ConfigError(f"system {self.name!r} needs one part per worker: the "
                              f"partition has {partition.num_parts} parts, the run "
                              f"{world_size} workers")

    def check_inputs(self, spec: RunSpec, inputs: dict[str, str], dataset: GraphDataset,
                     partition: Partition, rank: int) -> None:
        """Refuse pipeline inputs (``inputs``: name → path) that are stale, truncated or
        made for other settings, cheaply and before any process group: the worker fails
        with a named error while its peers still wait to rendezvous (so none of them
        reports a lost connection instead). Default: nothing to check."""

    def setup(self, ctx: WorkerContext, model: torch.nn.Module,
              optimizer: torch.optim.Optimizer) -> None:
        """Called once the model and optimiser exist (and a checkpoint is loaded).

        Default: wrap the model in DDP when ``wants_ddp``, with :meth:`gradient_hook` or
        the emulated ring all-reduce as its comm hook. Subclasses call ``super().setup``
        first, then build their caches, servers or controllers.
        """


        self.ctx, self.model, self.optimizer = ctx, model, optimizer
        self.train_module = model
        if self.wants_ddp:
            ddp = DistributedDataParallel(model)
            hook = self.gradient_hook()
            if hook is None and self.uses_network:
                hook = allreduce_hook(ctx.emulator, ctx.rank, ctx.world_size)
            if hook is not None:
                ddp.register_comm_hook(None, hook)
            self.train_module = ddp

    def placement(self, epoch: int) -> Placement:
        """Which partitions each worker trains in ``epoch`` (default: its own)."""
        return Placement.own(self.ctx.world_size)

    def epoch_seeds(self, epoch: int) -> list[np.ndarray]:
        """The seed nodes of each of this worker's steps in ``epoch`` (the schedule).

        Default: the training nodes of the placement's partitions, shuffled per worker
        and epoch; every worker runs the same number of steps (the largest active
        worker's), cycling its batches when it has fewer."""
        return self.ctx.epoch_seeds(epoch)

    def start_epoch(self, epoch: int) -> None:
        """Called after :meth:`placement`, before ``batches(epoch)``."""

    @abstractmethod
    def batches(self, epoch: int) -> Iterator[PreparedBatch]:
        """The epoch's steps, in order, with features on the training device."""

    def output(self, prepared: PreparedBatch) -> torch.Tensor:
        """The step's logits, one row per label (default: the model on the batch's blocks)."""
        return self.train_module(prepared.batch.blocks, prepared.features)

    def train_step(self, prepared: PreparedBatch) -> StepOutput:
        """Forward (:meth:`output`), loss, backward (gradients sync in DDP's hook),
        optimiser step. A step without labels trains a zero loss, so the worker still
        joins the all-reduce."""
        logits = self.output(prepared)
        if prepared.labels.numel():
            loss = F.cross_entropy(logits, prepared.labels)
        else:
            loss = logits.sum() * 0.0
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        correct = int((logits.argmax(dim=1) == prepared.labels).sum())
        return StepOutput(loss=float(loss.detach()), correct=correct,
                          seen=int(prepared.labels.shape[0]))

    def observe(self, record: StepRecord) -> None:
        """Called after every step with its record (timings, counts, RTTs)."""

    def end_epoch(self, epoch: int) -> dict[str, Any]:
        """System metrics of the epoch (declared in ``reductions``), merged into the
        worker's epoch record."""
        return {}

    def observe_epoch(self, records: list[dict[str, Any]]) -> None:
        """Called on every worker after each epoch with every worker's epoch record
        (``time_s``, counts, ``end_epoch`` metrics), e.g. for epoch-time searches."""

    def fetch(self, nodes: torch.Tensor) -> tuple[torch.Tensor, FetchCounts]:
        """Feature rows of ``nodes`` as this system obtains them outside its own pipeline
        (evaluation uses it). Default: the worker's feature store, on demand."""
        return self.ctx.store.fetch(nodes)

    def gradient_hook(self) -> Callable | None:
        """A DDP comm hook, or ``None`` for the emulated ring all-reduce."""
        return None

    def state_dict(self) -> dict[str, Any]:
        """This worker's system state, saved in every checkpoint (picklable by
        ``torch.save(weights_only=True)``: tensors, numbers, strings, lists, dicts)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` when resuming (after :meth:`setup`)."""
        if state:
            raise ValueError(f"system {self.name!r} keeps no state but the checkpoint "
                             f"holds {sorted(state)}")

    def close(self) -> None:
        """Release threads and buffers."""


#: Every system class defined so far, by name (:func:`register`; the registry,
#: :mod:`commgnn.systems.registry`, imports the built-in ones and the entry points).
SYSTEMS: dict[str, type[System]] = {}


def register(cls: type[System]) -> None:
    """Add ``cls`` under ``cls.name`` (a second class of the same name is an error)."""
    name = cls.name
    known = SYSTEMS.get(name)
    if known is not None and (known.__module__, known.__qualname__) != \
            (cls.__module__, cls.__qualname__):
        raise ValueError(f"system name {name!r} is taken by {known.__module__}."
                         f"{known.__qualname__}; {cls.__module__}.{cls.__qualname__} "
                         "needs another name")
    figure_inputs = {**FIGURE_INPUTS, **cls.description.figure_products}
    pipeline_inputs = {**PIPELINE_INPUTS, **cls.description.products}
    bad_figures = {f: i for f, i in cls.figures.items() if set(i) - set(figure_inputs)}
    if bad_figures:
        raise ValueError(f"system {name!r}: figures {bad_figures} read unknown inputs; "
                         f"known: {sorted(figure_inputs)}")
    unknown_needs = sorted(set(cls.needs) - set(pipeline_inputs))
    if unknown_needs:
        raise ValueError(f"system {name!r} needs unknown pipeline inputs {unknown_needs}; "
                         f"known: {sorted(pipeline_inputs)}")
    bad = {k: v for k, v in cls.metric_reductions().items() if v not in REDUCTIONS}
    if bad:
        raise ValueError(f"system {name!r}: unknown reductions {bad}; known: {REDUCTIONS}")
    SYSTEMS[name] = cls
