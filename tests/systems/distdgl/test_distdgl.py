"""``distdgl``: DistDGL 2.1.0 in its own environment on commgnn's partitions.

The end-to-end tests need the DGL environment (``bash setup.sh --dgl``) and a mount
namespace per machine (``unshare --mount``); they skip, saying which, without them."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import pytest
import yaml
from polling import wait_for

from commgnn.core.errors import HostError, StaleInputError
from commgnn.systems.distdgl import SCRIPTS
from commgnn.systems.distdgl.system import (
    DGL_PYTHON_ENV,
    check_dgl_partition,
    dgl_evaluation_samples,
    dgl_python,
    namespace_command,
    require_dgl_python,
)
from commgnn.train.evaluate import evaluation_sample
from commgnn.train.plateau import at_plateau
from commgnn.train.summary import COMMON_KEYS

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def dgl_env() -> Path:
    python = dgl_python()
    if python is None:
        pytest.skip("no DGL environment (bash setup.sh --dgl, or COMMGNN_DGL_PYTHON)")
    try:
        namespace_command()
    except HostError as exc:
        pytest.skip(str(exc))
    return python


def convert(python: Path, dataset: Path, partition: Path, out: Path) -> None:
    done = subprocess.run([str(python), str(SCRIPTS / "convert.py"), "--dataset", str(dataset),
                           "--partition", str(partition), "--out", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]


def dgl_processes(tag: Path) -> list[psutil.Process]:
    """This test's DistDGL processes: the machines, servers and trainers whose command
    line names ``tag`` (its directory) or whose machine's does."""
    found = []
    for proc in psutil.process_iter(["cmdline", "environ"]):
        line = " ".join(proc.info["cmdline"] or [])
        env = proc.info["environ"] or {}
        if str(tag) in line or str(tag) in env.get("DGL_IP_CONFIG", ""):
            found.append(proc)
    return found


def start_run(spec, dataset: Path, partition: Path, dgl_parts: Path, out: Path):
    """``commgnn train`` of a distdgl ``spec``, once both trainers have stepped."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "commgnn", "train", "--spec", spec.to_json(), "--dataset",
         str(dataset), "--partition", str(partition), "--out", str(out), "--checkpoints",
         str(out.parent / "ckpt"), "--input", f"dgl_partition={dgl_parts}"],
        stderr=subprocess.PIPE, text=True)
    staging = out.with_name(out.name + ".partial")
    wait_for(lambda: all((staging / f"steps_w{w}.jsonl").exists() and
                         (staging / f"steps_w{w}.jsonl").stat().st_size > 0 for w in range(2))
             or proc.poll() is not None, 120, "training steps")
    return proc


# -- without the DGL environment ----------------------------------------------------------
def test_the_main_environment_never_imports_dgl():
    code = ("import sys; from commgnn.systems.registry import discover; discover(); "
            "import commgnn.cli, commgnn.systems.distdgl.system, commgnn.systems.distdgl; "
            "print('dgl' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "False"


def test_a_missing_dgl_environment_says_how_to_build_it(monkeypatch, tmp_path):
    monkeypatch.setenv(DGL_PYTHON_ENV, str(tmp_path / "none" / "python"))
    with pytest.raises(HostError) as caught:
        require_dgl_python()
    assert str(caught.value) == (f"{DGL_PYTHON_ENV}: '{tmp_path / 'none' / 'python'}': no "
                                 "such interpreter")


def test_a_dgl_partition_of_other_inputs_is_refused(tiny_inputs, tmp_path):
    import hashlib

    dataset, partition = tiny_inputs
    out = tmp_path / "dgl"
    out.mkdir()
    (out / "graph.json").write_text("{}")
    record = {"parts": 2, "partition_meta_sha256": hashlib.sha256(
        (partition / "meta.json").read_bytes()).hexdigest(),
        "dataset_meta_sha256": "0" * 64}
    (out / "commgnn.json").write_text(json.dumps(record))
    with pytest.raises(StaleInputError, match=rf"{out}: stale: converted from another "
                                              rf"{dataset} \(dataset_meta_sha256 000000000000"):
        check_dgl_partition(out, dataset, partition, 2)
    record["dataset_meta_sha256"] = hashlib.sha256(
        (dataset / "meta.json").read_bytes()).hexdigest()
    (out / "commgnn.json").write_text(json.dumps(record))
    assert check_dgl_partition(out, dataset, partition, 2)["parts"] == 2
    with pytest.raises(StaleInputError, match="holds 2 parts, the run needs 3"):
        check_dgl_partition(out, dataset, partition, 3)


def test_what_distdgl_cannot_run_is_refused_at_validate():
    from commgnn.core.config import ConfigError
    from commgnn.experiments import expand_experiments

    config = {"datasets": {"tiny": {"source": "synthetic", "preset": "tiny"}},
              "partitionings": {"m2": {"method": "metis", "parts": 2}},
              "networks": {"slow": {"preset": "10gbe"}},
              "experiments": [{"systems": ["distdgl"], "datasets": ["tiny"],
                               "partitionings": ["m2"], "models": ["sage", "gat"],
                               "networks": ["none", "slow"], "batch_sizes": [64]}]}
    with pytest.raises(ConfigError) as caught:
        expand_experiments(config)
    lines = str(caught.value).splitlines()
    assert lines[0] == "4 problems:"  # gat (twice), the shaped network (twice)
    assert any("distdgl/tiny/m2/gat_b64_none_s0: system 'distdgl' trains GraphSAGE and "
               "GCN, not 'gat'" in line for line in lines)
    assert any("sage_b64_slow_s0: system 'distdgl' runs on DGL's own sockets" in line
               for line in lines)


# -- with it --------------------------------------------------------------------------------
def test_the_conversion_keeps_commgnns_partitions(dgl_env, tiny_inputs, tmp_path):
    """DGL reshuffles node ids so that each part is a contiguous range; mapped back
    (``orig_nids``), every range holds exactly the nodes commgnn's partition gave it."""
    dataset, partition = tiny_inputs
    convert(dgl_env, dataset, partition, tmp_path / "dgl")
    config = json.loads((tmp_path / "dgl" / "graph.json").read_text())
    orig = np.load(tmp_path / "dgl" / "orig_nids.npy")
    owner = np.load(partition / "book.npz")["owner"]
    ranges = config["node_map"]["_N"]
    assert len(ranges) == 2 and sorted(orig.tolist()) == list(range(len(owner)))
    for part, (start, end) in enumerate(ranges):
        assert (owner[orig[start:end]] == part).all()
        assert end - start == int((owner == part).sum())



def test_the_trainers_score_commgnns_evaluation_sample(dgl_env, tiny_inputs, tmp_path,
                                                       make_spec):
    """The nodes handed to DistDGL's trainers, mapped back to commgnn ids, are the sample
    every commgnn system of the seed scores (``train/evaluate.py``)."""
    dataset, partition = tiny_inputs
    convert(dgl_env, dataset, partition, tmp_path / "dgl")
    spec = make_spec(system="distdgl", eval_max_nodes=10)
    files = dgl_evaluation_samples(spec, dataset, tmp_path / "dgl", tmp_path)
    orig = np.load(tmp_path / "dgl" / "orig_nids.npy")
    for split in ("val", "test"):
        expected = evaluation_sample(np.load(dataset / f"{split}_idx.npy"), 10, 2, spec.seed,
                                     split)
        assert expected.shape == (20,)
        assert np.array_equal(np.sort(orig[np.load(files[split])]), expected)

PIPELINE = {
    "results_dir": "out",
    "datasets": {"tiny": {"source": "synthetic", "preset": "tiny", "seed": 3}},
    "partitionings": {"metis2": {"method": "metis", "parts": 2}},
    "training": {"epochs": 2, "fanouts": [5, 5], "hidden": 16, "eval_max_nodes": 200},
    "experiments": [{"systems": ["distdgl", "default"], "datasets": ["tiny"],
                     "partitionings": ["metis2"], "models": ["sage", "gcn"],
                     "batch_sizes": [256], "networks": ["none"]}],
}


def test_distdgl_runs_end_to_end_from_the_pipeline(dgl_env, repo_root, tmp_path):
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(PIPELINE))
    done = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--snakefile",
         str(repo_root / "Snakefile"), "--directory", str(tmp_path), "--configfile",
         str(tmp_path / "c.yaml"), "--workflow-profile", "none"],
        capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    runs = tmp_path / "out" / "runs"
    dgl = json.loads((runs / "distdgl/tiny/metis2/sage_b256_none_s0/summary.json").read_text())
    ours = json.loads((runs / "default/tiny/metis2/sage_b256_none_s0/summary.json").read_text())
    assert set(COMMON_KEYS) <= set(dgl)
    assert (dgl["system"], dgl["launcher"], dgl["time_dilation"], dgl["network_shaped"],
            dgl["epochs"]) == ("distdgl", "distdgl", 1.0, False, 2)
    # Same partition, fan-outs and batch size, uniform sampling: the same step count, and
    # remote input rows within a few percent (different random draws).
    assert dgl["steps_per_epoch"] == ours["steps_per_epoch"]
    assert abs(dgl["remote_rows_per_epoch"] / ours["remote_rows_per_epoch"] - 1) < 0.1
    assert 0 <= dgl["test_acc"] <= 1 and dgl["energy_j"] is None  # not metered: null
    table = pd.read_csv(tmp_path / "out" / "tables" / "runs.csv")
    assert set(table["system"]) == {"distdgl", "default"} and len(table) == 4
    steps = pd.read_csv(runs / "distdgl/tiny/metis2/sage_b256_none_s0/steps.csv")
    assert len(steps) == 2 * 2 * dgl["steps_per_epoch"]
    gcn = [json.loads((runs / f"{s}/tiny/metis2/gcn_b256_none_s0/summary.json").read_text())
           for s in ("distdgl", "default")]
    assert gcn[0]["model"] == "gcn" and gcn[0]["steps_per_epoch"] == gcn[1]["steps_per_epoch"]
    assert abs(gcn[0]["remote_rows_per_epoch"] / gcn[1]["remote_rows_per_epoch"] - 1) < 0.1
    assert not dgl_processes(tmp_path)


def test_distdgl_stops_at_commgnns_plateau_rule(dgl_env, tiny_inputs, tmp_path, make_spec):
    """``training.stop_at_plateau`` ends a DistDGL run by the rule commgnn's trainer uses
    (``train/plateau.py``, loaded by path in the DGL environment)."""
    dataset, partition = tiny_inputs
    convert(dgl_env, dataset, partition, tmp_path / "dgl")
    spec = make_spec(system="distdgl", epochs=60, stop_at_plateau=0.01)
    out = tmp_path / "run"
    done = subprocess.run(
        [sys.executable, "-m", "commgnn", "train", "--spec", spec.to_json(), "--dataset",
         str(dataset), "--partition", str(partition), "--out", str(out), "--checkpoints",
         str(tmp_path / "ckpt"), "--input", f"dgl_partition={tmp_path / 'dgl'}"],
        capture_output=True, text=True, timeout=280)
    assert done.returncode == 0, done.stderr[-3000:]
    vals = [json.loads(line)["val_acc"] for line in
            (out / "epochs.jsonl").read_text().splitlines()]
    n = len(vals)
    assert n < 60, "the tiny run should plateau inside its bound"
    assert at_plateau(vals, 0.01)
    assert not any(at_plateau(vals[:k], 0.01) for k in range(1, n))  # at the first time
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["epochs"], summary["stopped_at_plateau"]) == (n, True)


def test_a_failed_machine_ends_the_run_naming_it(dgl_env, tiny_inputs, tmp_path, make_spec):
    dataset, partition = tiny_inputs
    convert(dgl_env, dataset, partition, tmp_path / "dgl")
    spec = make_spec(system="distdgl", epochs=2000, eval_every=0)
    proc = start_run(spec, dataset, partition, tmp_path / "dgl", tmp_path / "run")
    assert proc.poll() is None, proc.stderr.read()[-3000:]
    trainer = next(p for p in dgl_processes(tmp_path) if "trainer.py" in " ".join(p.cmdline())
                   and p.environ().get("COMMGNN_MACHINE") == "1")
    killed_at = time.monotonic()
    os.kill(trainer.pid, signal.SIGKILL)
    _, err = proc.communicate(timeout=60)
    took = time.monotonic() - killed_at
    print(f"distdgl trainer killed: run ended in {took:.1f} s")
    assert proc.returncode == 2
    assert err.strip().splitlines()[-1].startswith(
        "commgnn train: error: distdgl machine 1 failed: machine 1: its trainer exited "
        "with -9")
    assert took < 30
    wait_for(lambda: not dgl_processes(tmp_path), 10, "every DistDGL process to be gone")
    assert not (tmp_path / "run").exists()


def test_the_machine_named_is_the_cause_not_the_peer_it_took_down(tmp_path):
    """Machine 0's trainer fails on the connection machine 1's death reset, and records
    its failure first: the run still names machine 1 (CI once named machine 0)."""
    from commgnn.core.errors import WorkerFailed
    from commgnn.systems.distdgl.machine import failed, lost_a_peer
    from commgnn.systems.distdgl.system import _wait

    (tmp_path / "trainer_0.log").write_text(
        "Traceback (most recent call last):\nRuntimeError: [../third_party/gloo/gloo/"
        "transport/tcp/pair.cc:525] Read error [127.0.0.1]:20889: Connection reset by peer\n")
    (tmp_path / "trainer_1.log").write_text("epoch 0 step 3\n")
    assert lost_a_peer(tmp_path / "trainer_0.log")
    assert not lost_a_peer(tmp_path / "trainer_1.log")
    assert not lost_a_peer(tmp_path / "absent.log")
    failed(tmp_path, 0, "its trainer exited with 1", consequence=True)
    time.sleep(0.01)
    failed(tmp_path, 1, "its trainer exited with -9")
    for machine, why in ((0, "machine 0: its trainer exited with 1"),
                         (1, "machine 1: its trainer exited with -9")):
        (tmp_path / f"machine_{machine}.log").write_text(why + "\n")
    machines = [(subprocess.Popen([sys.executable, "-c", "raise SystemExit(1)"]), None)
                for _ in range(2)]
    with pytest.raises(WorkerFailed, match=r"^distdgl machine 1 failed: machine 1: its "
                                           r"trainer exited with -9; trainer: epoch 0 step 3$"):
        _wait(machines, tmp_path, stall_s=30)
    # Without the consequence mark, the earliest failure is the one named.
    failed(tmp_path, 0, "its trainer exited with 1")
    time.sleep(0.01)
    failed(tmp_path, 1, "its trainer exited with -9")
    with pytest.raises(WorkerFailed, match=r"^distdgl machine 0 failed"):
        _wait(machines, tmp_path, stall_s=30)


def test_a_trainer_that_raises_ends_the_run_fast(dgl_env, tiny_inputs, tmp_path, make_spec):
    """An exception in a trainer (here: labels beyond the dataset's class count) must not
    wait in DGL's exit barrier for peers that wait in the all-reduce."""
    import shutil

    dataset, partition = tiny_inputs
    broken = Path(shutil.copytree(dataset, tmp_path / "dataset"))
    meta = json.loads((broken / "meta.json").read_text())
    meta["stats"]["num_classes"] = 1
    (broken / "meta.json").write_text(json.dumps(meta))
    convert(dgl_env, broken, partition, tmp_path / "dgl")
    spec = make_spec(system="distdgl", epochs=2, eval_every=0)
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "commgnn", "train", "--spec", spec.to_json(), "--dataset",
         str(broken), "--partition", str(partition), "--out", str(tmp_path / "run"),
         "--checkpoints", str(tmp_path / "ckpt"), "--input",
         f"dgl_partition={tmp_path / 'dgl'}"], capture_output=True, text=True, timeout=120)
    took = time.monotonic() - started
    print(f"distdgl trainer raised: run ended in {took:.1f} s")
    assert done.returncode == 2
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("commgnn train: error: distdgl machine ") and \
        "its trainer exited with 1" in line and "out of bounds" in line, line
    assert took < 30
    wait_for(lambda: not dgl_processes(tmp_path), 10, "every DistDGL process to be gone")


def test_sigterm_stops_every_machine(dgl_env, tiny_inputs, tmp_path, make_spec):
    dataset, partition = tiny_inputs
    convert(dgl_env, dataset, partition, tmp_path / "dgl")
    proc = start_run(make_spec(system="distdgl", epochs=2000, eval_every=0), dataset,
                     partition, tmp_path / "dgl", tmp_path / "run")
    assert proc.poll() is None, proc.stderr.read()[-3000:]
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert err.strip().splitlines()[-1] == ("commgnn train: error: received signal SIGTERM; "
                                            "stopped every DistDGL machine")
    wait_for(lambda: not dgl_processes(tmp_path), 10, "every DistDGL process to be gone")
