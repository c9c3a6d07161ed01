"""What a system may declare to the pipeline and the report: its metrics' reductions, the
pipeline products it needs and the tables its figures read (plain data, no torch)."""

from __future__ import annotations

import math
from collections.abc import Sequence

#: How a system metric is combined: over the workers of an epoch, then over epochs.
#: ``sum``: summed over workers; the run summary reports the mean per epoch as
#: ``<metric>_per_epoch``. ``max``: the largest value of any worker and epoch.
#: ``mean``: the mean over workers, then over epochs. ``slowest``: the largest value of
#: any worker in an epoch (what the synchronous epoch waits for); the run summary reports
#: the mean per epoch as ``<metric>_per_epoch``.
REDUCTIONS = ("sum", "max", "mean", "slowest")

#: Tables a figure a system declares in ``figures`` may read: the workflow passes their
#: paths (in the declared order) to ``commgnn figure NAME``. These the pipeline makes for
#: every config; a system adds the kinds its own steps make (``figure_products`` of its
#: description, built by its rules fragment).
FIGURE_INPUTS = {
    "runs": "the runs table (`commgnn runs-table`)",
    "partition_stats": "the partition table (`commgnn partition-table`)",
    "partitions": "every partition directory of the config",
    "run_dirs": "every run directory of the config (per-epoch and per-step records)",
    "presamples": "every presample directory a run of the config reads",
    "datasets": "every dataset directory of the config (`meta.json`: source, statistics)",
}

#: Pipeline products a system may declare in ``needs``; the workflow builds them and
#: passes each to ``commgnn train --input NAME=PATH``; ``ctx.inputs[NAME]`` is the path.
#: This one the pipeline's own steps make; a system adds those its own steps make
#: (``products`` of its description, built by its rules fragment).
PIPELINE_INPUTS = {
    "presample": "presampled blocks of the run's dataset, partitioning, batch size and seed "
                 "(`commgnn presample`)",
}


def reduce_values(how: str, values: Sequence[float]) -> float:
    """Combine ``values`` by a :data:`REDUCTIONS` rule."""
    if how == "sum":
        return sum(values)
    if how in ("max", "slowest"):
        return max(values)
    if how == "mean":
        return sum(values) / len(values) if values else math.nan
    raise ValueError(f"unknown reduction {how!r}; known: {REDUCTIONS}")
