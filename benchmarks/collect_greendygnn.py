"""Collect a GreenDyGNN benchmark (e.g. benchmarks/configs/greendygnn_arxiv.yaml,
greendygnn_eval_products.yaml) into energy, time, cache and window tables (JSON +
Markdown), and copy its figures.

Usage: python benchmarks/collect_greendygnn.py RESULTS_DIR OUT_PREFIX

Energy is the target-machine model (commgnn.energy.target: GPU idle during stalls, CPU per
RPC and byte) in target time (raw ÷ time dilation), per epoch, summed over the workers,
with the wait in the real all-reduce for the slowest worker counted idle (in the run's
own records since target energy v2; for older records :func:`straggler_excess_j`
removes it after the fact) and each worker's wait at an epoch's end for the slowest counted
idle (target energy v3; v2 records are brought to it by ``commgnn reprice``, and the
tables name the runs' models); times are target seconds. Read from every run's epochs.jsonl.
Which epochs are congested comes from each run's own schedule (its ``network_spec``): a
congested run's epochs with an injected delay; a clean run's, the congested epochs of the
congested runs of its workload (the same epochs, so an overhead compares like with like).

- methods under congestion: energy (GPU, CPU, total) and epoch time, over the whole run
  (Table I, Figure 4: the paper sums the whole run) and over the congested epochs only;
  mean ± std over seeds, and the per-seed ratio to the same seed's DGL and RapidGNN runs;
  hit rate, fetched MB per step, mean window;
- methods without congestion (Figure 6): the clean runs, whole run;
- congestion overhead (Figure 5): each method's congested-epoch energy over its clean
  run's same epochs, seed by seed;
- the window sweep: GreenDyGNN-static's energy per epoch against W, clean vs congested,
  and the energy-optimal W of each;
- the best static window per phase (a phase: the epochs sharing one table of injected
  delays), each controller's energy per phase against it, and the per-phase oracle (the
  best static window of every phase, chosen in hindsight);
- per epoch (Figure 7): each method's hit rate and each controller's mean window and
  inferred delay, beside the injected delay.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pandas as pd

from commgnn.systems.greendygnn.figures.greendygnn_fig7 import epoch_node_delays_ms
from commgnn.systems.greendygnn.figures.greendygnn_runs import METHODS, WORKLOAD, load_runs

#: The methods whose window a controller chooses during the run.
CONTROLLERS = ("GreenDyGNN-heuristic", "GreenDyGNN", "GreenDyGNN w/o cost weights")


def _std(values) -> float:
    values = pd.Series(values, dtype=float).dropna()
    return float(values.std(ddof=1)) if len(values) > 1 else float("nan")


def _run_dir(results: Path, row: pd.Series) -> Path:
    return (results / "runs" / row["system"] / row["dataset"] / row["partitioning"]
            / f"{row['model']}_b{row['batch_size']}_{row['network']}_s{row['seed']}")


def straggler_excess_j(run_dir: Path, workers: int) -> dict[int, float]:
    """Per epoch: GPU-busy joules the in-run model charges for the time trainers wait in
    the real all-reduce for the slowest worker.

    The model takes a step's GPU-busy time as its compute minus the *emulated* all-reduce,
    but the real collective also blocks every worker until the last one arrives (the
    straggler, e.g. the one fetching from a congested machine), and that wait is idle. Per
    step the workers compute equal batches, so the busy time is taken as the smallest
    compute-minus-sync over the workers of that step; the excess of each worker's over it
    is charged (busy − idle) W too much. Records of target energy v2 on price the wait
    idle themselves (every step's ``collective_wait_s``), except under NCCL (one GPU per
    worker, ``device_mode: exclusive``), whose wait the loop cannot see."""
    summary = json.loads((run_dir / "summary.json").read_text())
    energy = summary.get("provenance", {}).get("energy", "target energy v1")
    if energy != "target energy v1" and summary.get("device_mode") != "exclusive":
        return defaultdict(float)
    model = summary["energy_target_model"]
    extra_w = model["gpu_busy_w"] - model["gpu_idle_w"]
    steps = pd.concat([pd.read_json(run_dir / f"steps_w{w}.jsonl", lines=True)
                       for w in range(workers)], ignore_index=True)
    busy = (steps["busy_s"] if "busy_s" in steps else
            (steps["compute_s"] - steps["sync_s"]).clip(lower=0))
    least = busy.groupby([steps["epoch"], steps["step"]]).transform("min")
    f = summary["time_dilation"]
    excess = extra_w * (busy - least) / f
    return {int(e): float(v) for e, v in excess.groupby(steps["epoch"]).sum().items()}


def energy_models(results: Path, runs: pd.DataFrame) -> dict[str, int]:
    """How many runs priced their energy with each target energy model (a run re-priced
    by ``commgnn reprice`` counts as ``"<model> (re-priced from <old>)"``)."""
    models: dict[str, int] = defaultdict(int)
    for _, run in runs.iterrows():
        summary = json.loads((_run_dir(results, run) / "summary.json").read_text())
        model = summary.get("provenance", {}).get("energy", "target energy v1")
        if "energy_repriced" in summary:
            model += f" (re-priced from {summary['energy_repriced']['from']})"
        models[model] += 1
    return dict(sorted(models.items()))


def phase_name(delays: dict[int, float] | None) -> str:
    """An epoch's phase: ``clean``, the delayed machines and their one-way delays
    (``m1 15 ms, m3 25 ms``), or ``time-based`` (no per-epoch table)."""
    if delays is None:
        return "time-based"
    if not delays:
        return "clean"
    return ", ".join(f"m{n} {d:g} ms" for n, d in sorted(delays.items()))


def epoch_table(results: Path, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run and epoch: energy, time, cache and window; ``phase`` and
    ``delay_ms`` from the run's schedule; ``congested_epoch`` (see the module doc)."""
    rows = []
    for _, run in runs.iterrows():
        directory = _run_dir(results, run)
        excess = straggler_excess_j(directory, int(run["workers"]))
        summary = json.loads((directory / "summary.json").read_text())
        table = epoch_node_delays_ms(summary)
        for line in (directory / "epochs.jsonl").read_text().splitlines():
            e = json.loads(line)
            f = e["time_dilation"]
            hits, misses = e["cache_hits"], e["cache_misses"]
            delays = None if table is None else table[e["epoch"]]
            rows.append({
                "label": run["label"], "method": run["method"], "network": run["network"],
                "congested": bool(run["congested"]),
                "workload": "/".join(str(run[k]) for k in WORKLOAD),
                "seed": int(run["seed"]), "window": run["window"], "epoch": e["epoch"],
                "phase": phase_name(delays),
                "delay_ms": np.nan if delays is None else max(delays.values(), default=0.0),
                "time_s": e["time_s"] / f,
                "energy_j": e["energy_target_j"] - excess[e["epoch"]],
                "gpu_j": e["energy_target_gpu_j"] - excess[e["epoch"]],
                "cpu_j": e["energy_target_cpu_j"],
                "energy_in_run_j": e["energy_target_j"],
                "hit_rate": hits / (hits + misses) if hits + misses else np.nan,
                "fetch_mb_per_step": e["step_remote_bytes"] / max(1, e["steps"]) / 1e6,
                "extra_mb": e["extra_remote_bytes"] / 1e6,
                "mean_window": e.get("mean_window", np.nan),
                "delay_est_ms": e.get("delay_est_ms", np.nan)})
    return mark_congested_epochs(pd.DataFrame(rows))


def mark_congested_epochs(epochs: pd.DataFrame) -> pd.DataFrame:
    """Add ``congested_epoch``: for a congested run, an epoch with an injected delay (every
    epoch of a time-based schedule, ``delay_ms`` NaN); for a clean run, an epoch congested
    in a congested run of the same workload."""
    own = epochs["congested"] & ((epochs["delay_ms"] > 0) | epochs["delay_ms"].isna())
    congested = set(zip(epochs.loc[own, "workload"], epochs.loc[own, "epoch"], strict=True))
    theirs = [(w, e) in congested for w, e in zip(epochs["workload"], epochs["epoch"],
                                                  strict=True)]
    return epochs.assign(congested_epoch=np.where(epochs["congested"], own, theirs))


def per_run(epochs: pd.DataFrame, congested_only: bool) -> pd.DataFrame:
    """Per run: the mean per epoch over its congested epochs (``congested_only``) or all."""
    chosen = epochs[epochs["congested_epoch"]] if congested_only else epochs
    return chosen.groupby(["label", "method", "network", "congested", "seed"],
                          dropna=False).agg(
        energy_j=("energy_j", "mean"), gpu_j=("gpu_j", "mean"), cpu_j=("cpu_j", "mean"),
        energy_in_run_j=("energy_in_run_j", "mean"), time_s=("time_s", "mean"),
        total_kj=("energy_j", lambda x: x.sum() / 1e3), epochs=("epoch", "nunique"),
        hit_rate=("hit_rate", "mean"),
        fetch_mb_per_step=("fetch_mb_per_step", "mean"), extra_mb=("extra_mb", "mean"),
        mean_window=("mean_window", "mean")).reset_index()


def _order(rows: list[dict]) -> list[dict]:
    order = {m: i for i, m in enumerate(METHODS)}
    return sorted(rows, key=lambda r: (r.get("network", ""), order.get(r["base_method"], 99),
                                       r["method"]))


def methods(runs: pd.DataFrame, congested: bool = True) -> list[dict]:
    """Per method (label) of the congested (or clean) runs: mean ± std over seeds of the
    per-run means, and each seed's energy ratio to the same seed's DGL and RapidGNN."""
    chosen = runs[runs["congested"] == congested]
    by_seed = chosen.groupby(["label", "network", "seed"])["energy_j"].mean()
    out = []
    for (label, network), group in chosen.groupby(["label", "network"]):
        row: dict = {"method": label, "base_method": str(group["method"].iloc[0]),
                     "network": network, "seeds": sorted(group["seed"].unique().tolist()),
                     "epochs": int(group["epochs"].max())}
        for col in ("energy_j", "gpu_j", "cpu_j", "energy_in_run_j", "time_s", "total_kj",
                    "hit_rate", "fetch_mb_per_step", "extra_mb", "mean_window"):
            row[col] = float(group[col].mean())
            row[f"{col}_std"] = _std(group[col])
        for base in ("DGL", "RapidGNN"):
            ratios = [float(r["energy_j"] / by_seed[(base, network, r["seed"])])
                      for _, r in group.iterrows()
                      if (base, network, r["seed"]) in by_seed.index]
            row[f"energy_vs_{base}"] = float(np.mean(ratios)) if ratios else float("nan")
            row[f"energy_vs_{base}_std"] = _std(ratios)
            row[f"energy_vs_{base}_per_seed"] = ratios
        out.append(row)
    return _order(out)


def overhead(per: pd.DataFrame) -> list[dict]:
    """Congested-epoch energy of each congested run over its clean run's same epochs
    (same method variant and seed)."""
    clean = per[~per["congested"]]
    if clean.duplicated(["label", "seed"]).any():
        raise SystemExit("several clean networks per method and seed: the overhead needs "
                         "one clean baseline")
    base = clean.set_index(["label", "seed"])
    out = []
    for _, r in per[per["congested"]].iterrows():
        if (r["label"], r["seed"]) in base.index:
            b = base.loc[(r["label"], r["seed"])]
            out.append({"method": r["label"], "network": r["network"], "seed": int(r["seed"]),
                        "clean_j": float(b["energy_j"]), "congested_j": float(r["energy_j"]),
                        "overhead_pct": float(100 * (r["energy_j"] / b["energy_j"] - 1)),
                        "time_overhead_pct": float(100 * (r["time_s"] / b["time_s"] - 1))})
    return out


def sweep(per: pd.DataFrame) -> list[dict]:
    static = per[(per["method"] == "GreenDyGNN-static") & (per["seed"] == 0)]
    out = []
    for network, group in static.groupby("network"):
        group = group.assign(W=group["label"].str.extract(r"\((\d+)\)")[0].astype(int))
        group = group.sort_values("W")
        best = int(group.loc[group["energy_j"].idxmin(), "W"])
        out.append({"network": network, "optimal_W": best,
                    "energy_j_by_W": {int(w): float(e) for w, e in
                                      zip(group["W"], group["energy_j"], strict=True)},
                    "time_s_by_W": {int(w): float(t) for w, t in
                                    zip(group["W"], group["time_s"], strict=True)},
                    "hit_rate_by_W": {int(w): float(h) for w, h in
                                      zip(group["W"], group["hit_rate"], strict=True)}})
    return out


def phases(epochs: pd.DataFrame) -> list[dict]:
    """Per congested network: the best static window of each phase (lowest mean J/epoch
    over the seed-0 GreenDyGNN-static runs' epochs of that phase), each method's mean
    J/epoch per phase against it, and each method's energy over the run's epochs against
    the per-phase oracle (every epoch priced at its phase's best static window)."""
    out = []
    congested = epochs[epochs["congested"]]
    for network, net in congested.groupby("network"):
        static = net[(net["method"] == "GreenDyGNN-static") & (net["seed"] == 0)]
        if static.empty:
            continue
        by_w = static.groupby(["phase", "window"])["energy_j"].mean()
        best = {phase: (int(group.idxmin()[1]), float(group.min()))
                for phase, group in by_w.groupby(level="phase")}
        counts = net.drop_duplicates(["phase", "epoch"]).groupby("phase")["epoch"].apply(
            lambda e: sorted(int(x) for x in e))
        rows = []
        for phase, (w, j) in sorted(best.items()):
            rows.append({"phase": phase, "epochs": counts.get(phase, []), "best_W": w,
                         "best_j": j, "static_j_by_W": {
                             int(k): float(v) for k, v in by_w[phase].items()}})
        methods_by_phase = []
        for label, group in net.groupby("label"):
            per_phase = group.groupby("phase")["energy_j"].mean()
            oracle = group["phase"].map({p: j for p, (_, j) in best.items()})
            seeds = group["seed"].nunique()
            methods_by_phase.append({
                "method": label, "base_method": str(group["method"].iloc[0]), "seeds": seeds,
                "j_by_phase": {p: float(v) for p, v in per_phase.items()},
                "vs_best_static_pct_by_phase": {
                    p: float(100 * (v / best[p][1] - 1)) for p, v in per_phase.items()
                    if p in best},
                "energy_j": float(group["energy_j"].mean()),
                "oracle_j": float(oracle.mean()) if oracle.notna().all() else float("nan"),
            })
        for m in methods_by_phase:
            m["vs_oracle_pct"] = 100 * (m["energy_j"] / m["oracle_j"] - 1)
        out.append({"network": network, "phases": rows,
                    "methods": _order(methods_by_phase)})
    return out


def per_epoch(epochs: pd.DataFrame) -> list[dict]:
    """Per network, method (label) and epoch, means over seeds: hit rate, mean window,
    inferred delay, energy and time, beside the injected delay and the phase."""
    return [{"network": n, "method": label, "base_method": str(g["method"].iloc[0]),
             "epoch": int(e), "phase": g["phase"].iloc[0],
             "delay_ms": float(g["delay_ms"].max()),
             "congested_epoch": bool(g["congested_epoch"].any()),
             "hit_rate": float(g["hit_rate"].mean()),
             "mean_window": float(g["mean_window"].mean()),
             "delay_est_ms": float(g["delay_est_ms"].mean()),
             "energy_j": float(g["energy_j"].mean()), "time_s": float(g["time_s"].mean()),
             "seeds": int(g["seed"].nunique())}
            for (n, label, e), g in epochs.groupby(["network", "label", "epoch"])]


def _pm(mean: float, std: float, digits: int = 3) -> str:
    return f"{mean:.{digits}f}" if np.isnan(std) else f"{mean:.{digits}f} ± {std:.{digits}f}"


def _methods_table(rows: list[dict], total: bool) -> list[str]:
    lines = ["| network | method | seeds | energy J/epoch | GPU J | CPU J | in-run J | "
             + ("total kJ | " if total else "") + "epoch s | ÷ DGL | ÷ RapidGNN | hit rate | "
             "fetch MB/step | fill MB/epoch | mean W |",
             "|---|---|---|---|---|---|---|" + ("---|" if total else "")
             + "---|---|---|---|---|---|---|"]
    for r in rows:
        window = "" if np.isnan(r["mean_window"]) else f"{r['mean_window']:.1f}"
        kj = f"{_pm(r['total_kj'], r['total_kj_std'], 2)} | " if total else ""
        lines.append(
            f"| {r['network']} | {r['method']} | {len(r['seeds'])} | "
            f"{_pm(r['energy_j'], r['energy_j_std'], 1)} | "
            f"{r['gpu_j']:.1f} | {r['cpu_j']:.1f} | {r['energy_in_run_j']:.1f} | {kj}"
            f"{_pm(r['time_s'], r['time_s_std'])} | "
            f"{_pm(r['energy_vs_DGL'], r['energy_vs_DGL_std'])} | "
            f"{_pm(r['energy_vs_RapidGNN'], r['energy_vs_RapidGNN_std'])} | "
            f"{r['hit_rate']:.3f} | {r['fetch_mb_per_step']:.2f} | {r['extra_mb']:.1f} | "
            f"{window} |")
    return lines


def markdown(result: dict) -> str:
    f = ", ".join(f"{v:.3g}" for v in result["time_dilation"])
    lines = [f"# GreenDyGNN on {', '.join(result['datasets'])} (generated by "
             "benchmarks/collect_greendygnn.py)", "",
             "Energy: target-machine model (commgnn.energy.target), J per epoch, all "
             f"workers, target time (raw ÷ dilation f = {f}), with the wait in the real "
             "all-reduce for the slowest worker counted idle (`in-run J`: the run's own "
             "figure, which before target energy v2 counted it busy), and each worker's "
             "wait at an epoch's end for the slowest counted idle (target energy v3). "
             "Energy models of the runs: "
             + ", ".join(f"{m}: {n}" for m, n in result["energy_models"].items())
             + ". Congested epochs: "
             "those of each congested run's own schedule with an injected delay "
             + "; ".join(f"({n}: {e})" for n, e in result["congested_epochs"].items())
             + "; a clean run's: the same epochs.", "",
             "## Methods under congestion, whole run (Table I, Figure 4; mean ± std over "
             "seeds)", ""]
    lines += _methods_table(result["methods_whole_run"], total=True)
    lines += ["", "## Methods under congestion, congested epochs only", ""]
    lines += _methods_table(result["methods"], total=False)
    lines += ["", "## Methods without congestion, whole run (Figure 6)", ""]
    lines += _methods_table(result["methods_clean"], total=True)
    lines += ["", "## Congestion overhead (Figure 5: congested epochs vs the clean run's same "
              "epochs, seed by seed)", "",
              "| network | method | seed | clean J/epoch | congested J/epoch | energy overhead | "
              "time overhead |", "|---|---|---|---|---|---|---|"]
    for r in result["overhead"]:
        lines.append(f"| {r['network']} | {r['method']} | {r['seed']} | {r['clean_j']:.1f} | "
                     f"{r['congested_j']:.1f} | "
                     f"{r['overhead_pct']:+.1f} % | {r['time_overhead_pct']:+.1f} % |")
    lines += ["", "## Energy vs window W (GreenDyGNN-static, seed 0, congested epochs)", "",
              "| network | optimal W | J/epoch by W | hit rate by W |", "|---|---|---|---|"]
    for r in result["sweep"]:
        energy = ", ".join(f"{w}: {e:.1f}" for w, e in r["energy_j_by_W"].items())
        hits = ", ".join(f"{w}: {h:.3f}" for w, h in r["hit_rate_by_W"].items())
        lines.append(f"| {r['network']} | {r['optimal_W']} | {energy} | {hits} |")
    for net in result["phases"]:
        lines += ["", f"## Best static window per phase ({net['network']}; GreenDyGNN-static, "
                  "seed 0)", "", "| phase | epochs | best W | J/epoch at best W | J/epoch by W |",
                  "|---|---|---|---|---|"]
        for r in net["phases"]:
            by_w = ", ".join(f"{w}: {e:.1f}" for w, e in r["static_j_by_W"].items())
            epochs = ", ".join(map(str, r["epochs"]))
            lines.append(f"| {r['phase']} | {epochs} | {r['best_W']} | {r['best_j']:.1f} | "
                         f"{by_w} |")
        phase_names = [r["phase"] for r in net["phases"]]
        lines += ["", "Each method against the best static window of each phase (J/epoch, "
                  "mean over seeds; oracle: every epoch at its phase's best static window):",
                  "", "| method | seeds | " + " | ".join(phase_names)
                  + " | J/epoch | vs per-phase oracle |",
                  "|---|---|" + "---|" * len(phase_names) + "---|---|"]
        for m in net["methods"]:
            cells = []
            for phase in phase_names:
                j = m["j_by_phase"].get(phase)
                pct = m["vs_best_static_pct_by_phase"].get(phase)
                cells.append("" if j is None else f"{j:.1f} ({pct:+.1f} %)")
            lines.append(f"| {m['method']} | {m['seeds']} | " + " | ".join(cells)
                         + f" | {m['energy_j']:.1f} | {m['vs_oracle_pct']:+.1f} % |")
    congested = [r for r in result["per_epoch"] if r["network"] in result["congested_epochs"]]
    if congested:
        methods = list(dict.fromkeys(r["method"] for r in congested))
        controllers = list(dict.fromkeys(r["method"] for r in congested
                                         if r["base_method"] in CONTROLLERS))
        lines += ["", "## Per epoch under congestion (Figure 7: hit rate of every method; "
                  "mean window W and inferred delay δ̂ of each controller; means over seeds)",
                  "", "| network | epoch | injected delay ms | "
                  + " | ".join(f"{m} hit" for m in methods) + " | "
                  + " | ".join(f"{m} W / δ̂ ms" for m in controllers) + " |",
                  "|---|---|---|" + "---|" * (len(methods) + len(controllers))]
        by = {(r["network"], r["epoch"], r["method"]): r for r in congested}
        for network, epoch in sorted({(r["network"], r["epoch"]) for r in congested}):
            first = next(r for r in congested if (r["network"], r["epoch"]) == (network, epoch))
            hits = [f"{by[(network, epoch, m)]['hit_rate']:.3f}" if (network, epoch, m) in by
                    else "" for m in methods]
            windows = [f"{by[(network, epoch, m)]['mean_window']:.1f} / "
                       f"{by[(network, epoch, m)]['delay_est_ms']:.1f}"
                       if (network, epoch, m) in by else "" for m in controllers]
            lines.append(f"| {network} | {epoch} | {first['delay_ms']:g} | "
                         + " | ".join(hits + windows) + " |")
    return "\n".join(lines) + "\n"


def main(results: Path, prefix: Path) -> None:
    runs = load_runs([results / "tables" / "runs.csv"])
    epochs = epoch_table(results, runs)
    congested = per_run(epochs, congested_only=True)
    whole = per_run(epochs, congested_only=False)
    marked = epochs[epochs["congested"] & epochs["congested_epoch"]]
    result = {"datasets": sorted(runs["dataset"].unique().tolist()),
              "energy_models": energy_models(results, runs),
              "time_dilation": sorted(runs["time_dilation"].round(3).unique().tolist()),
              "congested_epochs": {n: sorted(int(e) for e in g["epoch"].unique())
                                   for n, g in marked.groupby("network")},
              "methods_whole_run": methods(whole, congested=True),
              "methods": methods(congested, congested=True),
              "methods_clean": methods(whole, congested=False),
              "overhead": overhead(congested), "sweep": sweep(congested),
              "phases": phases(epochs), "per_epoch": per_epoch(epochs)}
    prefix.parent.mkdir(parents=True, exist_ok=True)
    prefix.with_suffix(".json").write_text(json.dumps(result, indent=2, default=float) + "\n")
    prefix.with_suffix(".md").write_text(markdown(result))
    runs.to_csv(prefix.with_name(prefix.name + "_runs.csv"), index=False)
    figures = prefix.with_name(prefix.name + "_figures")
    figures.mkdir(exist_ok=True)
    for path in sorted((results / "figures").glob("greendygnn_*")):
        shutil.copy(path, figures / path.name)
    print(prefix.with_suffix(".md").read_text())


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
