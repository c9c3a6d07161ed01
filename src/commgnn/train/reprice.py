"""Re-price a finished run's target energy under target energy v3 from its own records.

Target energy v3 (:data:`commgnn.core.testbed.ENERGY_MODEL`) charges each worker idle power
for its wait at an epoch's end, until the slowest worker ends it
(:func:`commgnn.train.summary.charge_boundary_wait`). A run recorded under v2 holds every
number that charge needs — each worker's ``time_s`` in its epoch row, the run's time
dilation and power constants — so :func:`reprice_run` gives the figures a v3 run would have
written, exactly: the wait is outside every step, so the steps' records, the run's times and
its traffic are unchanged, and no system reads the target energy while it trains.

What it rewrites in a run directory:

- ``epochs.jsonl``: each worker's ``energy_target_*`` plus its ``boundary_wait_s``; each
  row's sums, its ``boundary_wait_s`` and the cumulative ``energy_target_cum_j``;
- ``summary.json``: the run's ``energy_target_*`` totals and ``energy_target_per_epoch_j``,
  the provenance's ``energy`` and ``testbed`` (and the top-level ``testbed``), and
  ``energy_repriced`` (from which model, by which commit);
- ``epochs.csv`` (the tidy table), where the run has one.

Each file is replaced atomically, the summary last; a worker that already carries
``boundary_wait_s`` is not charged again, so a run interrupted half-way is finished by
running it again and a v3 run is left as it is.
"""

from __future__ import annotations

import json
from pathlib import Path
from statistics import mean

from commgnn.core.errors import InputError
from commgnn.core.files import (
    json_text,
    naming,
    read_json_object,
    write_json_atomic,
    write_text_atomic,
)
from commgnn.core.testbed import ENERGY_MODEL, commit
from commgnn.energy.target import TargetPowerModel
from commgnn.train.summary import charge_boundary_wait, write_tidy_tables

__all__ = ["REPRICEABLE", "reprice_run"]

#: The energy models whose records :func:`reprice_run` brings to :data:`ENERGY_MODEL`.
REPRICEABLE = ("target energy v2",)
#: The target-energy keys of a worker record and an epoch row.
PARTS = ("energy_target_gpu_j", "energy_target_cpu_j")


def power_model(summary: dict, path: Path) -> TargetPowerModel:
    """The power constants the run priced with (``energy_target_model`` of its summary)."""
    described = summary.get("energy_target_model")
    if not isinstance(described, dict):
        raise InputError(f"{path}: no energy_target_model (not a run of the target model)")
    constants = {k: v for k, v in described.items() if k not in ("meter", "modelled")}
    try:
        return TargetPowerModel.from_config(constants)
    except ValueError as exc:
        raise InputError(f"{path}: energy_target_model: {exc}") from None


def repriced_rows(rows: list[dict], power: TargetPowerModel) -> list[dict]:
    """``rows`` (a run's epoch rows, in order) with each epoch's boundary wait charged to
    its workers (unless they carry it already), and the rows' sums and cumulative target
    energy recomputed from them."""
    out, cumulative = [], 0.0
    for row in rows:
        workers = [dict(w) for w in row["workers"]]
        if not any("boundary_wait_s" in w for w in workers):
            charge_boundary_wait(workers, power)
        row = {**row, "workers": workers,
               "boundary_wait_s": sum(w["boundary_wait_s"] for w in workers)}
        for key in (*PARTS, "energy_target_j"):
            row[key] = sum(w[key] for w in workers)
        cumulative += row["energy_target_j"]
        row["energy_target_cum_j"] = cumulative
        out.append(row)
    return out


def reprice_run(run_dir: str | Path) -> bool:
    """Bring a finished run's target energy to :data:`ENERGY_MODEL` (see the module doc).
    True if it rewrote the run; False if the run is already on it. :class:`InputError`
    naming the file for a run that is not finished, or recorded under a model this cannot
    re-price (v1 lacks v2's split of the all-reduce wait)."""
    run_dir = Path(run_dir)
    summary_path = run_dir / "summary.json"
    summary = read_json_object(summary_path, missing_hint=" (an unfinished run?)")
    provenance = summary.get("provenance", {})
    model = provenance.get("energy", "target energy v1")
    if model == ENERGY_MODEL:
        return False
    if model not in REPRICEABLE:
        raise InputError(f"{summary_path}: energy model {model!r}: only "
                         f"{', '.join(REPRICEABLE)} records can be re-priced to "
                         f"{ENERGY_MODEL!r}; rerun the run")
    epochs_path = run_dir / "epochs.jsonl"
    with naming(epochs_path):
        lines = epochs_path.read_text().splitlines()
    rows = repriced_rows([json.loads(line) for line in lines if line],
                         power_model(summary, summary_path))
    write_text_atomic(epochs_path, "".join(json_text(row) + "\n" for row in rows))
    if (run_dir / "epochs.csv").is_file():
        write_tidy_tables(run_dir, int(summary["workers"]))
    for part in ("", "_gpu", "_cpu"):
        summary[f"energy_target{part}_j"] = sum(r[f"energy_target{part}_j"] for r in rows)
    summary["energy_target_per_epoch_j"] = mean(r["energy_target_j"] for r in rows)
    testbed = provenance.get("testbed", "").replace(model, ENERGY_MODEL)
    summary["provenance"] = {**provenance, "energy": ENERGY_MODEL, "testbed": testbed}
    summary["testbed"] = testbed
    summary["energy_repriced"] = {"from": model, "to": ENERGY_MODEL, "commit": commit()}
    write_json_atomic(summary_path, summary)
    return True
