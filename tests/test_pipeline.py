"""End-to-end: a real `snakemake --cores 2` run on a tiny config in a temporary directory."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest
import yaml

from commgnn.data.store import load_dataset
from commgnn.ledger import CLAIMS
from commgnn.partition import load_partition
from commgnn.report.claims import VERDICTS
from commgnn.train.clocks import CLOCKS, JUDGED

sys.path.insert(0, str(Path(__file__).parent / "systems" / "greendygnn"))
from control_checks import check_calibration, check_validation
from dry_run import job_counts
from tiny_pipeline import TINY, snakemake


def check_side_by_side(out: Path) -> None:
    """Every system in the comparison, the claims ledger and the figure index."""
    runs = pd.read_csv(out / "tables" / "runs.csv")
    compare = pd.read_csv(out / "figures" / "compare.csv")
    assert set(compare["base_system"]) == set(runs["base_system"])
    clean = compare[(compare["network"] == "10gbe") & (compare["model"] == "sage")]
    assert {"default", "oracle", "rapidgnn", "hopgnn", "p3", "grappa"} <= set(clean["entry"])
    assert clean.set_index("entry").loc["oracle", "vs_oracle"] == pytest.approx(1.0)
    assert (clean["traffic_mb_per_step"] >= 0).all()
    claims = pd.read_csv(out / "figures" / "claims.csv")
    assert set(claims["paper"]) == {"RapidGNN", "GreenDyGNN", "Grappa", "HopGNN"}
    assert claims["verdict"].isin(VERDICTS).all()
    # one pipeline, one testbed: every judged row names it, none pools two
    assert set(claims.loc[claims["provenance"].notna(), "provenance"]) <= {
        "synthetic v2; congestion v3; dilation per workload; target energy v3; evaluation v2"}
    # a claim on time or modelled energy gets a verdict only when every run behind it is on
    # a judged clock: the tiny config's clean runs are undilated (raw CPU), never judged; its
    # congested runs are on the workload's probe (`auto`), dilated where this host's probe
    # is slower than the reference step (f > 1), raw CPU where it is faster
    timed = claims[claims["id"].isin({claim.id for claim in CLAIMS if claim.dilated})]
    clocks = timed["clock"].fillna("").map(lambda text: {c for c in CLOCKS if c in text})
    on_judged = clocks.map(lambda found: bool(found) and found <= set(JUDGED))
    assert (~on_judged).any()  # the clean runs' claims (raw CPU) are there, unjudged
    assert (timed.loc[~on_judged, "verdict"].isin(["not comparable", "not measured"])).all(), \
        timed.loc[~on_judged]
    assert (runs.loc[runs["network"] == "10gbe", "time_dilation"] == 1).all()
    index = pd.read_csv(out / "figures" / "figure_index.csv")
    assert {"compare", "claims", "hopgnn_fig11", "grappa_table5"} <= set(index["module"])
    # where each run's wall time went
    assert (runs["wall_total_raw_s"] > runs["wall_epochs_raw_s"]).all()
    phases = runs[[c for c in runs if c.startswith("wall_") and c.endswith("_raw_s")
                   and c != "wall_total_raw_s"]]
    assert phases.sum(axis=1).to_numpy() == pytest.approx(runs["wall_total_raw_s"])


def check_logs(out: Path) -> None:
    """One line per epoch per run, no warning repeated per worker; `commgnn status`."""
    logs = sorted((out / "logs" / "train").rglob("*.log"))
    assert logs
    for log in logs:
        text = log.read_text()
        if "distdgl" in str(log):
            continue
        assert text.count(" INFO epoch 1/1: ") == 1, (log, text[-2000:])
        assert "Warning" not in text, (log, text[-2000:])
    control = sorted((out / "logs" / "control").rglob("*.log"))  # calibration's workers too
    assert control
    for log in control:
        assert "Warning" not in log.read_text(), log
    status = subprocess.run([sys.executable, "-m", "commgnn", "status", str(out)],
                            capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    assert status.stdout.splitlines()[-1].startswith(f"{len(logs)} finished")


def check_report(repo: Path, workdir: Path) -> None:
    """`snakemake --report`: every figure the run built is in it."""
    report = workdir / "report.zip"
    proc = snakemake(repo, workdir, TINY, "--report", str(report))
    assert proc.returncode == 0, proc.stderr[-4000:]
    with zipfile.ZipFile(report) as archive:
        names = archive.namelist()
    built = sorted(p.name for p in (workdir / "out" / "figures").glob("*.png"))
    assert built
    missing = [name for name in built if not any(n.endswith(name) for n in names)]
    assert not missing, missing


@pytest.mark.timeout(600)
def test_tiny_pipeline_end_to_end(repo_root, tiny_pipeline):
    tmp_path = tiny_pipeline
    out = tmp_path / "out"
    ds = load_dataset(out / "datasets" / "tiny", verify_checksums=True)
    assert ds.num_nodes > 0
    for name, parts in (("metis2", 2), ("chunk3", 3)):
        part = load_partition(out / "partitions" / "tiny" / name)
        assert part.num_parts == parts
        assert part.book.owner.shape == (ds.num_nodes,)
        assert (out / "logs" / "partition" / "tiny" / f"{name}.log").is_file()
    assert (out / "benchmarks" / "dataset" / "tiny.tsv").is_file()
    table = pd.read_csv(out / "tables" / "partition_stats.csv")
    assert set(table["partitioning"]) == {"metis2", "chunk3"}
    assert len(table) == 2 + 3
    runs = pd.read_csv(out / "tables" / "runs.csv")
    assert sorted(runs["system"]) == ["bgl", "clustergcn", "default", "dgl-global", "grappa",
                                      "grappa-uw", "greendygnn", "greendygnn", "greendygnn-dqn",
                                      "greendygnn-heuristic",
                                      "hopgnn", "hopgnn-naive", "oracle", "p3", "p3", "p3",
                                      "rapidgnn", "rapidgnn-h200"]
    by_system = runs.set_index("system")
    assert by_system.loc["default", "remote_rows_per_epoch"] > 0
    assert by_system.loc["oracle", "remote_rows_per_epoch"] == 0
    assert by_system.loc["rapidgnn-h200", "step_remote_rows_per_epoch"] < \
        by_system.loc["rapidgnn", "step_remote_rows_per_epoch"] < \
        by_system.loc["default", "remote_rows_per_epoch"]
    assert (out / "presample" / "tiny" / "metis2" / "b256_s0" / "meta.json").is_file()
    fig5 = pd.read_csv(out / "figures" / "rapidgnn_fig5.csv")
    assert sorted(fig5["n_hot"]) == [50, 200]
    assert (out / "figures" / "rapidgnn_fig5.png").stat().st_size > 0
    assert (out / "figures" / "rapidgnn_fig3.png").stat().st_size > 0
    # Grappa: isolated runs (no feature traffic) and its tables
    assert (by_system.loc[["grappa", "grappa-uw"], "remote_rows_per_epoch"] == 0).all()
    assert by_system.loc["grappa", "shuffle_bytes_per_epoch"] > 0
    table3 = pd.read_csv(out / "figures" / "grappa_table3.csv")
    assert {"Grappa", "Grappa-UW", "default (metis2)"} <= set(table3["variant"])
    grappa_rows = table3["variant"].str.startswith(("Grappa", "default"))
    assert (table3.loc[grappa_rows, "speedup_vs_default"] > 0).all()
    table1 = pd.read_csv(out / "figures" / "grappa_table1.csv")
    assert set(table1["partitioning"]) == {"metis2"} and (table1["remote_rows"] > 0).all()
    assert (table1["distinct_remote_rows"] > 0).all() and (table1["batches"] > 0).all()
    for name in ("grappa_table4", "grappa_table7", "grappa_table8", "grappa_fig4"):
        assert (out / "figures" / f"{name}.png").stat().st_size > 0
    # HopGNN: migration instead of most fetches, and its figures
    assert by_system.loc["hopgnn", "migration_bytes_per_epoch"] > 0
    assert by_system.loc["hopgnn", "remote_rows_per_epoch"] < \
        by_system.loc["dgl-global", "remote_rows_per_epoch"]
    assert by_system.loc["hopgnn-naive", "remote_rows_per_epoch"] == 0
    fig11 = pd.read_csv(out / "figures" / "hopgnn_fig11.csv")
    assert {"DGL", "p3", "Naive", "All"} <= set(fig11["variant"])
    assert (fig11["speedup_vs_p3"].notna() == (fig11["variant"] == "All")).all()
    # P3 (also with the deep models), Cluster-GCN: no feature row on the network
    p3 = runs[runs["system"] == "p3"].set_index("model")
    assert sorted(p3.index) == ["deepgcn", "film", "sage"]
    assert (p3["remote_rows_per_epoch"] == 0).all() and (p3["layers"] == 2).all()
    assert (p3[["graph_bytes_per_step", "activations_bytes_per_step",
                "activation_grads_bytes_per_step"]] > 0).all().all()
    assert p3["test_acc"].between(0, 1).all()
    assert by_system.loc["clustergcn", "remote_rows_per_epoch"] == 0
    assert by_system.loc["clustergcn", "gradients_bytes_per_step"] > 0
    assert (out / "figures" / "grappa_table5.png").stat().st_size > 0
    fig14 = pd.read_csv(out / "figures" / "hopgnn_fig14.csv").set_index("variant")
    assert fig14.loc["All", "miss_rate"] < fig14.loc["DGL", "miss_rate"]
    table1 = pd.read_csv(out / "figures" / "hopgnn_table1.csv")
    assert (table1["r_micro"] > table1["r_sub"]).all()
    for name in ("hopgnn_fig13", "hopgnn_fig16", "hopgnn_table3"):
        assert (out / "figures" / f"{name}.png").stat().st_size > 0
    # GreenDyGNN under the congestion preset: its figures, BGL and the congestion label
    runs = pd.read_csv(out / "tables" / "runs.csv").set_index(["system", "network"])
    assert runs.loc[("greendygnn", "10gbe-single"), "congestion"] == "scenario:single-link"
    assert runs.loc[("greendygnn", "10gbe"), "congestion"] == "none"
    assert runs.loc[("bgl", "10gbe-single"), "energy_target_j"] > 0
    # one clock per workload: every system of it divides by the one probe
    single = runs.xs("10gbe-single", level="network")
    assert len(single) == 4 and single["workload_key"].nunique() == 1
    assert set(single["time_dilation_source"]) == {"workload probe"}
    (probe_file,) = (out / "dilation" / "tiny").glob("*.json")
    probe = json.loads(probe_file.read_text())
    assert probe_file.stem == single["workload_key"].iloc[0]
    assert (single["compute_step_probe_s"] == probe["probe_s"]).all()
    assert single["time_dilation"].nunique() == 1
    assert set(single["reference_step_source"]) == {"derived"}  # SAGE-2 h16's relatives
    assert (runs.xs("10gbe", level="network")["time_dilation"] == 1).all()
    fig5 = pd.read_csv(out / "figures" / "greendygnn_fig5.csv")
    assert set(fig5["method"]) == {"GreenDyGNN-static"}  # the one clean/congested pair
    table = pd.read_csv(out / "figures" / "greendygnn_table1.csv")
    assert {"BGL", "GreenDyGNN-static", "GreenDyGNN-heuristic"} <= set(table["method"])
    for name in ("greendygnn_fig2", "greendygnn_fig4", "greendygnn_fig9"):
        assert (out / "figures" / f"{name}.png").stat().st_size > 0
    # GreenDyGNN part 2: calibrate -> train_policy -> the dqn run reads the policy
    control = out / "control" / "tiny" / "metis2" / "sage_b256_10gbe-single"
    for part, name in (("calibration", "calibration.json"), ("policy", "policy.pt"),
                       ("policy", "training.json"), ("validation", "validation.json")):
        assert (control / part / name).is_file()
    assert runs.loc[("greendygnn-dqn", "10gbe-single"), "policy_fallback"] == 0
    presample = out / "presample" / "tiny" / "metis2" / "b256_s0"
    check_calibration(control / "calibration", presample, capacity=100, windows=[2, 8],
                      rpc_points=12)
    validation = check_validation(control / "validation", [(4, 5.0)])
    assert validation["points"][0]["measured_s"] > 0
    fig8 = pd.read_csv(out / "figures" / "greendygnn_fig8.csv")
    assert list(fig8["window"]) == [4] and list(fig8["delay_ms"]) == [5]
    for name in ("greendygnn_fig7", "greendygnn_policy", "greendygnn_table2",
                 "greendygnn_calibration"):
        assert (out / "figures" / f"{name}.png").stat().st_size > 0
    for system in ("default", "oracle"):
        run_dir = out / "runs" / system / "tiny" / "metis2" / "sage_b256_10gbe_s0"
        assert (run_dir / "summary.json").is_file()
        assert (run_dir / "steps_w0.jsonl").is_file() and (run_dir / "steps_w1.jsonl").is_file()
    meta = json.loads((out / "datasets" / "tiny" / "meta.json").read_text())
    assert meta["source"]["preset"] == "tiny"
    check_side_by_side(out)
    check_logs(out)
    check_report(repo_root, tmp_path)
    # A second run has nothing to do.
    again = snakemake(repo_root, tmp_path, TINY, "--dry-run")
    assert again.returncode == 0
    assert "Nothing to be done" in again.stdout + again.stderr
    assert "records other settings" not in again.stderr  # every summary matches its spec


def test_invalid_config_fails_before_any_job(repo_root, tmp_path):
    bad = {**TINY, "partitionings": {"m": {"method": "metis", "parts": -1}}}
    proc = snakemake(repo_root, tmp_path, bad)
    assert proc.returncode != 0
    assert "parts" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_named_and_deep_models_reach_the_run_ids(repo_root, tmp_path):
    """A named model and a 10-layer depth suffix name run directories (dry run)."""
    config = {**TINY, "models": {"sage_h8": {"model": "sage", "hidden": 8}},
              "training": {**TINY["training"],
                           "depth_fanouts": {10: [2] * 10}},
              "experiments": [{"systems": ["default"], "datasets": ["tiny"],
                               "partitionings": ["metis2"],
                               "models": ["sage_h8", "film-10"], "batch_sizes": [256]}]}
    proc = snakemake(repo_root, tmp_path, config, "--dry-run")
    assert proc.returncode == 0, proc.stderr[-3000:]
    for model in ("sage_h8", "film-10"):
        assert f"runs/default/tiny/metis2/{model}_b256_none_s0" in proc.stdout


def test_a_workload_keeps_its_probe_when_runs_are_added_or_reordered(repo_root,
                                                                    tiny_pipeline):
    """A config that lists the `auto` workload's systems in another order and runs seed 1
    alone asks for the seed-1 runs and no new probe (a new probe would give the workload a
    second clock, and every run of it would train again)."""
    config = copy.deepcopy(TINY)
    entry = config["experiments"][1]  # the 10gbe-single (time_dilation: auto) entry
    assert entry["networks"] == ["10gbe-single"]
    entry["systems"] = list(reversed(entry["systems"]))
    entry["seeds"] = [1]
    path = tiny_pipeline / "reordered.yaml"
    path.write_text(yaml.safe_dump(config))
    counts = job_counts(repo_root, tiny_pipeline, path)
    assert "dilation" not in counts
    assert counts["train"] >= len(entry["systems"])
