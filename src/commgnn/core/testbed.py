"""What made a result: the code's commit and the versions of the testbed's models.

Every run summary records :func:`run_provenance`: the commit (``git describe --always
--dirty`` of the checkout the package runs from; "unknown" outside one) and the testbed —
the dataset generator that made its dataset (recorded in the dataset's ``meta.json`` at
build time: a dataset outlives the code that made it), the congestion model, the
time-dilation policy, the energy model and the evaluation sample, each a version bumped
when the model changes. ``summary["testbed"]`` joins them in one line, the key the claims
ledger refuses to pool across (:func:`commgnn.report.claims.judge`): runs of one testbed
made at different commits may be judged together, runs of different testbeds may not.

Bump a version here when the thing it names changes what a run measures:

- :data:`SYNTHETIC_GENERATOR` / :data:`RMAT_GENERATOR`: the graphs a config generates;
- :data:`CONGESTION_MODEL`: how injected congestion acts (its reach over traffic classes,
  its physics on a link);
- :data:`DILATION_POLICY`: how the time dilation f is chosen;
- :data:`ENERGY_MODEL`: the target-machine energy model's form;
- :data:`EVALUATION_SAMPLE`: which nodes a run's accuracies are measured on.
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path

SYNTHETIC_GENERATOR = "synthetic v2"  # v2 (2026-11-26): presets with locality, class regions,
#: label noise and Reddit's degree; v1: degree-corrected SBM, power-law degrees
RMAT_GENERATOR = "rmat v1"
#: v3 (2026-12-07): each link keeps a calendar of reservations, so a gap it leaves while
#: the other end of a transfer is busy is filled by the next transfer that fits, and every
#: all-to-all (feature and sampling requests, P3's exchanges, Grappa's shuffle) takes its
#: peers in turn from the next worker on (``network.nic.in_turn``): a 4-machine all-to-all
#: of requests at 10 GbE ran at 2.2x the ideal makespan in v2 (every worker asked owner 0
#: first; one "free at" time a link), about 1.3x in v3, a ring 1.0x in both
#: (``benchmarks/nic_patterns.py``). v2 (2026-11-26): a flow's bytes take
#: max(bytes / bandwidth, bytes · RTT / W), W = 6 MiB (Linux's tcp_rmem maximum), and the
#: paper's schedules reach fetch and sampling traffic; v1: a fixed per-request delay on
#: the congested machines' fetch traffic.
CONGESTION_MODEL = "congestion v3"
#: v2 (2026-11-26): f measured once per workload (the pipeline's dilation step) ÷ the
#: workload's own reference (measured on an H100 or derived by a stated rule); v1: per run,
#: ÷ one reference_step_ms for every workload of a network.
DILATION_POLICY = "dilation per workload"
#: v3 (2026-12-02): a worker that ends its epoch before the slowest one idles until it does
#: (``boundary_wait_s``: e.g. while a peer's background cache build fetches from a congested
#: machine) and is charged idle power for it; v2 charged nothing there, so runs whose
#: workers end epochs apart (GreenDyGNN's window builds: 4–23 % of their energy under
#: congestion) were under-priced. v2 records are re-priced exactly from their own times
#: (``commgnn reprice``). v2 (2026-11-26): the GPU idles through the straggler wait in the
#: real all-reduce, and every class of traffic costs CPU (gradients, activations,
#: migrations, shuffles too); v1 counted the wait as busy and only feature, sampling and
#: fill RPCs as CPU work.
ENERGY_MODEL = "target energy v3"
#: v2 (2026-11-27): one sample of each split for every partitioning and system of a seed
#: (``eval_max_nodes × workers`` nodes drawn from the seed and the split alone); v1: each
#: worker sampled ``eval_max_nodes`` of the nodes its partition owns, so runs on different
#: partitions were scored on different nodes (on products-like at 1/10 the METIS samples'
#: clean-label ceiling sat 0.009 below the random partition's on average over 3 seeds, the
#: size of the accuracy gaps read).
EVALUATION_SAMPLE = "evaluation v2"


#: Joins the testbeds of results made on several (a runs table's, a ledger row's).
TESTBED_SEPARATOR = " | "


def apart_from_energy(testbed: str) -> str:
    """``testbed`` (one, or several joined by :data:`TESTBED_SEPARATOR`) without the energy
    model: what runs are pooled on for a claim that reads no energy. The energy model
    prices energy from what a run records and changes nothing else it measures (its times,
    traffic and accuracies), so runs differing only in it are one testbed to such a claim."""
    kept = {"; ".join(part for part in one.split("; ") if not part.startswith("target energy"))
            for one in testbed.split(TESTBED_SEPARATOR)}
    return TESTBED_SEPARATOR.join(sorted(kept))


def generator_of(spec: dict) -> str:
    """What generates a dataset of this config entry (a public dataset: its source)."""
    source = spec.get("source", "")
    if source == "synthetic":
        return SYNTHETIC_GENERATOR
    if source == "rmat":
        return RMAT_GENERATOR
    return f"{source} (public data)"


@functools.lru_cache(maxsize=1)
def commit() -> str:
    """``git describe --always --dirty`` of the checkout this package runs from."""
    here = Path(__file__).resolve().parent
    try:
        done = subprocess.run(["git", "-C", str(here), "describe", "--always", "--dirty",
                               "--abbrev=10"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "unknown"


def dataset_generator(dataset_dir: str | Path) -> str:
    """The generator a dataset's ``meta.json`` records ("unrecorded" for one built before
    it was recorded)."""
    try:
        meta = json.loads((Path(dataset_dir) / "meta.json").read_text())
    except (OSError, ValueError):
        return "unrecorded"
    return str(meta.get("generator") or "unrecorded")


def run_provenance(dataset_dir: str | Path) -> dict:
    """The provenance a run summary records (``testbed`` is the pooling key)."""
    parts = {"generator": dataset_generator(dataset_dir), "congestion": CONGESTION_MODEL,
             "dilation": DILATION_POLICY, "energy": ENERGY_MODEL,
             "evaluation": EVALUATION_SAMPLE}
    return {"commit": commit(), **parts, "testbed": "; ".join(parts.values())}
