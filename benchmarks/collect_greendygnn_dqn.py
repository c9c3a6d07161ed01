"""Collect the GreenDyGNN control-plane benchmarks (benchmarks/configs/greendygnn_dqn_arxiv.yaml,
greendygnn_eval_products.yaml, greendygnn_eval_reddit.yaml): calibration fits, simulator
validation (Figure 8, where the config ran it), policy
training (time, learning curve, simulated comparison with every static window per
archetype), the learned controller's windows, the ablation (Table II: whole-run energy, as
the paper's totals) and the comparison with the best static window measured under the
paper's schedule, and when each controller decided its windows: the double-buffered pipeline
decides window k + 1 at the first step of window k (its builder fills it meanwhile), so a
window's size is chosen one window ahead; the table counts the congested steps run under a
window decided in a clean epoch. Energies as in collect_greendygnn.py (target model, J per
epoch, straggler wait counted idle). One workload per results directory: the first control
directory is read.

Usage: python benchmarks/collect_greendygnn_dqn.py RESULTS_DIR OUT_PREFIX
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from collect_greendygnn import CONTROLLERS, _pm, _run_dir, epoch_table, methods, per_run, sweep

from commgnn.systems.greendygnn.figures.greendygnn_fig7 import epoch_delays_ms
from commgnn.systems.greendygnn.figures.greendygnn_runs import load_runs

#: Table II's rows and the baselines beside them: (label or method, the row's name). A
#: label matches first; a method matches where exactly one label of it ran.
ABLATION = (("GreenDyGNN", "GreenDyGNN (full, dqn)"),
            ("GreenDyGNN w/o cost weights", "w/o Cost Weights (dqn, uniform)"),
            ("GreenDyGNN-static(16)", "w/o RL (static W = 16)"),
            ("GreenDyGNN-heuristic", "heuristic (Eq. 7)"), ("RapidGNN", "RapidGNN"),
            ("DGL", "DGL"), ("BGL", "BGL"))
#: The learned controller's methods (with and without cost weights).
LEARNED = ("GreenDyGNN", "GreenDyGNN w/o cost weights")


def _find(rows: list[dict], key: str) -> dict | None:
    """The row labelled ``key``, else the one row of method ``key`` (None: none or several)."""
    for r in rows:
        if r["method"] == key:
            return r
    of_method = [r for r in rows if r["base_method"] == key]
    return of_method[0] if len(of_method) == 1 else None


def control_dir(results: Path) -> Path:
    found = sorted((results / "control").glob("*/*/*"))
    if not found:
        raise SystemExit(f"{results}/control: no control directory")
    return found[0]


def calibration_summary(control: Path) -> dict:
    cal = json.loads((control / "calibration" / "calibration.json").read_text())
    fit = cal["rpc"]["fit"]
    return {"rpc_fit": fit,
            "runs": {k: cal["runs"][k] for k in ("windows", "step_s", "compute_s",
                                                  "rebuild_s", "miss_rows")},
            "hit_curve": cal["fits"]["hit_curve"], "rebuild_fit": cal["fits"]["rebuild"],
            "row_cost_s": cal["fits"]["row_cost_s"],
            "steps_per_epoch": cal["workload"]["steps_per_epoch"],
            "time_dilation": cal["workload"]["time_dilation"]}


def dqn_vs_best_static(per: pd.DataFrame) -> list[dict]:
    """Per congested network, seed 0: every static window's energy, the dqn run's, and
    the dqn run against the best of them."""
    out = []
    for network, group in per[(per["seed"] == 0) & (per["network"] != "clean")].groupby(
            "network"):
        static = group[group["method"] == "GreenDyGNN-static"]
        dqn = group[group["method"] == "GreenDyGNN"]
        if static.empty or dqn.empty:
            continue
        by_w = {int(w): float(e) for w, e in zip(
            static["label"].str.extract(r"\((\d+)\)")[0].astype(int), static["energy_j"],
            strict=True)}
        best = min(by_w, key=by_w.get)
        energy = float(dqn["energy_j"].iloc[0])
        out.append({"network": network, "static_j_by_W": dict(sorted(by_w.items())),
                    "best_W": best, "dqn_j": energy,
                    "dqn_vs_best_pct": 100 * (energy / by_w[best] - 1)})
    return out


def window_trace(epochs: pd.DataFrame) -> list[dict]:
    dqn = epochs[epochs["method"].isin(LEARNED)]
    return [{"variant": label, "network": n, "epoch": int(e),
             "mean_window": float(g["mean_window"].mean()),
             "delay_est_ms": float(g["delay_est_ms"].mean()), "seeds": len(g)}
            for (label, n, e), g in dqn.groupby(["label", "network", "epoch"])]


def windows_of(steps: pd.DataFrame, steps_per_epoch: int) -> list[dict]:
    """One worker's windows in run order (its step records, one row per step): where each
    started and ran, its size and template, and where it was decided — at the first step of
    the window before it (window 0 and 1: at the run's first step), with the inferred delay
    recorded there."""
    steps = steps.assign(g=steps["epoch"] * steps_per_epoch + steps["step"]).sort_values("g")
    out: list[dict] = []
    for index, rows in steps.groupby("window_index", sort=False):
        out.append({"window_index": int(index), "start": int(rows["g"].iloc[0]),
                    "steps": len(rows), "window": int(rows["window"].iloc[0]),
                    "bias_owner": int(rows["bias_owner"].iloc[0]),
                    "epochs": sorted(int(e) for e in rows["epoch"].unique()),
                    "delay_est_ms": float(rows["delay_est_ms"].iloc[0])})
    for i, w in enumerate(out):
        at = out[max(0, i - 1)]
        w["decided_at"] = 0 if i <= 1 else at["start"]
        w["decided_delay_est_ms"] = 0.0 if i <= 1 else at["delay_est_ms"]
    return out


def decision_lag(steps: pd.DataFrame, steps_per_epoch: int,
                 delays_ms: list[float]) -> dict:
    """One worker: its windows (:func:`windows_of`), and how many of its steps in congested
    epochs (``delays_ms`` > 0, the run's schedule) ran under a window decided in a clean
    epoch."""
    windows = windows_of(steps, steps_per_epoch)
    congested = stale = 0
    for w in windows:
        decided_clean = delays_ms[w["decided_at"] // steps_per_epoch] == 0
        for g in range(w["start"], w["start"] + w["steps"]):
            if delays_ms[g // steps_per_epoch] > 0:
                congested += 1
                stale += int(decided_clean)
    return {"windows": windows, "congested_steps": congested, "stale_steps": stale}


def decisions(results: Path, runs: pd.DataFrame) -> list[dict]:
    """Per congested controller run and worker: :func:`decision_lag`, with the windows of at
    least one epoch listed."""
    out = []
    for _, run in runs[runs["method"].isin(CONTROLLERS) & runs["congested"]].iterrows():
        directory = _run_dir(results, run)
        summary = json.loads((directory / "summary.json").read_text())
        delays = epoch_delays_ms(summary)
        if any(np.isnan(d) for d in delays):
            continue  # a time-based schedule: no congested epochs to count
        for worker in range(int(run["workers"])):
            steps = pd.read_json(directory / f"steps_w{worker}.jsonl", lines=True)
            per_epoch = int(steps.groupby("epoch")["step"].max().max()) + 1
            lag = decision_lag(steps, per_epoch, delays)
            out.append({"label": run["label"], "network": run["network"],
                        "seed": int(run["seed"]), "worker": worker,
                        "steps_per_epoch": per_epoch, "n_windows": len(lag["windows"]),
                        "congested_steps": lag["congested_steps"],
                        "stale_steps": lag["stale_steps"],
                        "long_windows": [w for w in lag["windows"] if w["steps"] >= per_epoch]})
    return out


def ablation(method_rows: list[dict]) -> list[dict]:
    """Table II: each variant's whole-run energy per epoch against the full system's (one
    congested network)."""
    full = _find(method_rows, "GreenDyGNN")
    out = []
    for key, name in ABLATION:
        r = _find(method_rows, key)
        if r is None:
            continue
        out.append({"variant": name, "label": r["method"], "energy_j": r["energy_j"],
                    "energy_j_std": r["energy_j_std"], "total_kj": r["total_kj"],
                    "seeds": r["seeds"],
                    "vs_full_pct": 100 * (r["energy_j"] / full["energy_j"] - 1)
                    if full else float("nan")})
    return out


def validation_lines(val: dict | None) -> list[str]:
    """Figure 8's section: the simulator's error on held-out runs, or why there is none."""
    if val is None:
        return ["Not run: the config sets `control.validate: false` (no validation/ in the "
                "control directory).", ""]
    lines = [f"Mean error {100 * val['mean_error']:.1f} %, max {100 * val['max_error']:.1f} % "
             "(paper: 2.8 %, < 5 %).", "",
             "| W | delay ms | measured s | predicted s | error |", "|---|---|---|---|---|"]
    for p in val["points"]:
        lines.append(f"| {p['window']} | {p['delay_ms']:g} | {p['measured_s']:.4f} | "
                     f"{p['predicted_s']:.4f} | {100 * p['error']:.1f} % |")
    return lines


def read_validation(control: Path) -> dict | None:
    """The control directory's validation.json, or None where validation was not run."""
    path = control / "validation" / "validation.json"
    return json.loads(path.read_text()) if path.is_file() else None


def markdown(result: dict) -> str:
    cal, val, pol = result["calibration"], result["validation"], result["policy"]
    fit = cal["rpc_fit"]
    lines = [f"# GreenDyGNN's control plane on {', '.join(result['datasets'])} (generated by "
             "benchmarks/collect_greendygnn_dqn.py)", "",
             "Target time (raw ÷ f), target-model energy (J per epoch, all workers): the "
             "methods over the congested epochs, the ablation over the whole run.",
             "", "## Calibration (Algorithm 1)", "",
             "The paper's fitted α, β, γ are blank in its copy: no paper column.", "",
             "| parameter | fitted |", "|---|---|",
             f"| α (ms) | {fit['alpha_s'] * 1e3:.3f} |",
             f"| β (s/B) | {fit['beta_s_per_byte']:.3g} |",
             f"| γ (s/B/ms) | {fit['gamma_s_per_byte_ms']:.3g} |",
             f"| κ (delay coefficient) | {fit['delay_coef']:.3f} |",
             f"| RPC fit error mean / max | {100 * fit['residual_rel_mean']:.1f} % / "
             f"{100 * fit['residual_rel_max']:.1f} % |", "",
             "| W (clean run) | step s | compute s | rebuild s/window | miss rows/step |",
             "|---|---|---|---|---|"]
    r = cal["runs"]
    for i, w in enumerate(r["windows"]):
        lines.append(f"| {w} | {r['step_s'][i]:.4f} | {r['compute_s'][i]:.4f} | "
                     f"{r['rebuild_s'][i]:.4f} | {r['miss_rows'][i]:.0f} |")
    h = cal["hit_curve"]
    lines += ["", f"Hit-rate logistic (Eq. 2): h_lo {h['h_lo']:.3f}, h_hi {h['h_hi']:.3f}, "
              f"slope {h['slope']:.2f}, centre log2 W {h['centre']:.2f}, max |error| "
              f"{h['max_abs_error']:.4f}. Rebuild power law b = "
              f"{cal['rebuild_fit']['b']:.2f}.", "",
              "## Simulator validation (Figure 8; held-out runs, all non-coordinator "
              "machines delayed)", ""]
    lines += validation_lines(val)
    lines += ["", "## Policy training (Double DQN in the simulator, one core)", "",
              f"{pol['episodes']} episodes, {pol['gradient_steps']} gradient steps in "
              f"{pol['seconds']:.1f} s; mean reward first/last 100 episodes "
              f"{pol['reward_first']:.3f} / {pol['reward_last']:.3f}.", "",
              "Simulated energy per archetype (held-out profiles; J per run):", "",
              "| archetype | policy | W=16 | best static (W, template) | policy vs best "
              "static | policy mean W |", "|---|---|---|---|---|---|"]
    for name, e in pol["evaluation"].items():
        lines.append(f"| {name} | {e['policy_j']:.0f} | {e['reference_j']:.0f} | "
                     f"{e['best_static_j']:.0f} (W={e['best_static_window']}, "
                     f"t={e['best_static_template']}) | "
                     f"{100 * (e['policy_j'] / e['best_static_j'] - 1):+.1f} % | "
                     f"{e['policy_mean_window']:.1f} |")
    lines += ["", "## Under the paper's schedule (mean ± std over seeds, congested epochs)",
              "", "| method | J/epoch | ÷ DGL | ÷ RapidGNN | epoch s | hit rate | mean W |",
              "|---|---|---|---|---|---|---|"]
    for m in result["methods"]:
        window = "" if np.isnan(m["mean_window"]) else f"{m['mean_window']:.1f}"
        lines.append(f"| {m['method']} | {_pm(m['energy_j'], m['energy_j_std'], 1)} | "
                     f"{_pm(m['energy_vs_DGL'], m['energy_vs_DGL_std'])} | "
                     f"{_pm(m['energy_vs_RapidGNN'], m['energy_vs_RapidGNN_std'])} | "
                     f"{_pm(m['time_s'], m['time_s_std'])} | {m['hit_rate']:.3f} | "
                     f"{window} |")
    lines += ["", "## Ablation (Table II analogue; whole run under congestion)", "",
              "| variant | label | J/epoch | kJ a run | seeds | vs full |",
              "|---|---|---|---|---|---|"]
    for a in result["ablation"]:
        lines.append(f"| {a['variant']} | {a['label']} | "
                     f"{_pm(a['energy_j'], a['energy_j_std'], 1)} | {a['total_kj']:.2f} | "
                     f"{len(a['seeds'])} | {a['vs_full_pct']:+.1f} % |")
    lines += ["", "## Best static window under the paper's schedule (seed 0)", ""]
    for s in result["sweep"]:
        energy = ", ".join(f"W={w}: {e:.1f}" for w, e in s["energy_j_by_W"].items())
        lines.append(f"- {s['network']}: optimal W = {s['optimal_W']} ({energy})")
    lines += ["", "## The learned controller vs every static window measured (seed 0, "
              "congested epochs)", "", "| network | J/epoch by static W | best W | dqn | "
              "dqn vs best static |", "|---|---|---|---|---|"]
    for d in result["dqn_vs_best_static"]:
        energy = ", ".join(f"W={w}: {e:.1f}" for w, e in d["static_j_by_W"].items())
        lines.append(f"| {d['network']} | {energy} | {d['best_W']} | {d['dqn_j']:.1f} | "
                     f"{d['dqn_vs_best_pct']:+.2f} % |")
    lines += ["", "## The learned controller's mean window per epoch", "",
              "| variant | network | epoch | mean W | inferred delay ms | seeds |",
              "|---|---|---|---|---|---|"]
    for t in result["windows"]:
        lines.append(f"| {t['variant']} | {t['network']} | {t['epoch']} | "
                     f"{t['mean_window']:.1f} | {t['delay_est_ms']:.1f} | {t['seeds']} |")
    lines += ["", "## When the controllers decided (congested runs)", "",
              "Window k + 1 is decided at the first step of window k, so a window runs "
              "on a decision one window old. Stale: steps of congested epochs under a "
              "window decided in a clean epoch. Long windows (≥ one epoch): W, template "
              "(bias owner, −1 uniform), the step it was decided at → the steps it ran "
              "(global steps; epoch = step ÷ steps per epoch), δ̂ at the decision.", "",
              "| run | worker | windows | congested steps | stale | long windows |",
              "|---|---|---|---|---|---|"]
    for d in result["decisions"]:
        spe = d["steps_per_epoch"]
        long = "; ".join(
            f"W={w['window']} t={w['bias_owner']} decided {w['decided_at']} (e"
            f"{w['decided_at'] // spe}, δ̂ {w['decided_delay_est_ms']:.0f} ms) → "
            f"{w['start']}–{w['start'] + w['steps'] - 1} (e{w['epochs'][0]}–{w['epochs'][-1]})"
            for w in d["long_windows"]) or "—"
        lines.append(f"| {d['label']} s{d['seed']} | {d['worker']} | {d['n_windows']} | "
                     f"{d['congested_steps']} | {d['stale_steps']} | {long} |")
    return "\n".join(lines) + "\n"


def main(results: Path, prefix: Path) -> None:
    control = control_dir(results)
    runs = load_runs([results / "tables" / "runs.csv"])
    epochs = epoch_table(results, runs)
    congested = per_run(epochs, congested_only=True)
    whole = per_run(epochs, congested_only=False)
    training = json.loads((control / "policy" / "training.json").read_text())
    rewards = training["episode_rewards"]
    method_rows = methods(congested)
    result = {
        "datasets": sorted(runs["dataset"].unique().tolist()),
        "calibration": calibration_summary(control),
        "validation": read_validation(control),
        "policy": {k: training[k] for k in ("seconds", "episodes", "gradient_steps",
                                            "evaluation", "env", "dqn")}
        | {"reward_first": float(np.mean(rewards[:100])),
           "reward_last": float(np.mean(rewards[-100:]))},
        "methods": method_rows, "ablation": ablation(methods(whole)),
        "sweep": sweep(congested), "windows": window_trace(epochs),
        "decisions": decisions(results, runs),
        "dqn_vs_best_static": dqn_vs_best_static(congested)}
    prefix.parent.mkdir(parents=True, exist_ok=True)
    prefix.with_suffix(".json").write_text(json.dumps(result, indent=2, default=float) + "\n")
    prefix.with_suffix(".md").write_text(markdown(result))
    figures = prefix.with_name(prefix.name + "_figures")
    figures.mkdir(exist_ok=True)
    for name in ("greendygnn_fig7", "greendygnn_fig8", "greendygnn_policy",
                 "greendygnn_table2", "greendygnn_calibration"):
        for suffix in (".png", ".csv"):
            path = results / "figures" / f"{name}{suffix}"
            if path.exists():
                shutil.copy(path, figures / path.name)
    print(prefix.with_suffix(".md").read_text())


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
