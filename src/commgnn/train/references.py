"""Reference step times: how long an accelerator takes for a workload's compute step.

Time dilation f = this machine's compute-only step ÷ the reference step of the same
:class:`~commgnn.train.workload.StepWorkload`. References come, in this order, from:

1. the config (``network.reference_step_ms``): the user's number, ``source: config``;
2. the table of measured ones (:data:`TABLE`, measured on an H100 with
   ``benchmarks/reference_steps.py``): the workload itself, ``source: measured``;
3. a rule over the measured workloads of the same *family* (architecture, depth, width,
   heads, arguments; :attr:`StepWorkload.family`), ``source: derived`` with the rule named
   (:data:`DERIVATION_RULE`): piecewise-linear in a FLOPs proxy (:func:`step_flops`)
   through the family's measured points; below the smallest its time (small GNN steps on
   a GPU are launch-bound: arxiv-like at 36 k input rows and products-like at 192 k took
   2.07 and 2.09 ms); above the largest proportional to the proxy (an upper bound of the
   GPU's time, so f is a lower bound there);
4. none: the workload runs undilated (f = 1) and its summary says so (``source: none``).
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

from commgnn.train.workload import StepWorkload

#: The measured reference steps, one JSON object a line (see :func:`load_table`).
TABLE = Path(__file__).with_name("reference_steps.jsonl")

DERIVATION_RULE = ("piecewise-linear in the FLOPs proxy through the measured workloads of "
                   "the same architecture, depth and width; the smallest's time below them, "
                   "proportional above them")


def step_flops(layer_rows: Sequence[Sequence[float]], dims: Sequence[int]) -> float:
    """A FLOPs proxy of one step's forward pass: per layer ``l`` with ``(src, dst, edges)``
    rows and input/output widths ``dims[l]``, ``dims[l + 1]``, the aggregation over the
    sampled edges plus one dense transform of every input row:
    ``Σ_l edges_l · dims[l] + src_l · dims[l] · dims[l + 1]``. Backward and the optimiser
    scale it by a constant, which cancels in the ratios it is used for."""
    if len(dims) != len(layer_rows) + 1:
        raise ValueError("step_flops: need one more width than layers")
    return float(sum(e * dims[i] + s * dims[i] * dims[i + 1]
                     for i, (s, _d, e) in enumerate(layer_rows)))


def layer_dims(workload: StepWorkload, feature_dim: int, classes: int) -> list[int]:
    """Input width of every layer and the output width of the last."""
    inner = workload.hidden * (workload.heads if workload.architecture == "gat" else 1)
    return [int(feature_dim)] + [inner] * (workload.layers - 1) + [int(classes)]


def layer_rows(batch) -> list[list[float]]:
    """``(src, dst, edges)`` of each layer of one mini-batch (input layer first): what a
    probe keeps of a batch (a deep model's blocks are too large to hold a probe's worth)."""
    return [[float(b.num_src), float(b.num_dst), float(b.num_edges)] for b in batch.blocks]


def mean_layer_rows(per_batch: Iterable[Sequence[Sequence[float]]]) -> list[list[float]]:
    """Mean ``(src, dst, edges)`` of each layer over mini-batches, given each batch's
    :func:`layer_rows`."""
    sums: list[list[float]] = []
    count = 0
    for rows in per_batch:
        if not sums:
            sums = [[0.0, 0.0, 0.0] for _ in rows]
        for acc, row in zip(sums, rows, strict=True):
            for k in range(3):
                acc[k] += float(row[k])
        count += 1
    return [[v / max(1, count) for v in acc] for acc in sums]


@dataclass(frozen=True)
class Reference:
    """One workload's reference step and where it comes from (module doc)."""

    step_s: float
    source: str  # config | measured | derived
    rule: str | None = None
    device_name: str | None = None
    basis: tuple[str, ...] = ()  # keys of the measured workloads it rests on

    def as_dict(self) -> dict:
        data = asdict(self)
        data["basis"] = list(self.basis)
        return data


@lru_cache(maxsize=4)
def load_table(path: str = str(TABLE)) -> tuple[dict, ...]:
    """The measured references: objects with ``workload`` (a StepWorkload's dict),
    ``median_s``, ``flops`` and ``device_name`` (more fields are kept)."""
    p = Path(path)
    if not p.is_file():
        return ()
    rows = []
    for number, line in enumerate(p.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        for key in ("workload", "median_s", "flops", "device_name"):
            if key not in row:
                raise ValueError(f"{p}:{number}: reference without {key!r}")
        row["key"] = StepWorkload.from_dict(row["workload"]).key
        rows.append(row)
    return tuple(rows)


def reference_for(workload: StepWorkload, flops: float | None,
                  table: Sequence[dict] | None = None) -> Reference | None:
    """The workload's measured reference, else one derived by :data:`DERIVATION_RULE`
    from its family's (``flops``: its :func:`step_flops`), else ``None``."""
    rows = load_table() if table is None else table
    key = workload.key
    for row in rows:
        if row.get("key", StepWorkload.from_dict(row["workload"]).key) == key:
            return Reference(float(row["median_s"]), "measured",
                             device_name=row["device_name"], basis=(key,))
    if flops is None:
        return None
    family = workload.family
    points = sorted(
        (float(r["flops"]), float(r["median_s"]), r["device_name"],
         r.get("key") or StepWorkload.from_dict(r["workload"]).key)
        for r in rows if StepWorkload.from_dict(r["workload"]).family == family)
    if not points:
        return None
    devices = sorted({p[2] for p in points})
    device = devices[0] if len(devices) == 1 else ", ".join(devices)
    xs = [p[0] for p in points]
    i = bisect_left(xs, flops)
    if i == 0:
        step, basis = points[0][1], (points[0][3],)
    elif i == len(points):
        step, basis = points[-1][1] * flops / points[-1][0], (points[-1][3],)
    else:
        (x0, y0, _, k0), (x1, y1, _, k1) = points[i - 1], points[i]
        step = y0 + (y1 - y0) * (flops - x0) / (x1 - x0) if x1 > x0 else y1
        basis = (k0, k1)
    return Reference(float(step), "derived", rule=DERIVATION_RULE, device_name=device,
                     basis=basis)
