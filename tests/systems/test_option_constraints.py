"""Constraints between a system's options and the run (issue 40): each is declared by its
system (``run_problems``, ``path_problems``) or, for congestion, by the network checks, and
refused by ``commgnn validate`` before any work, naming the key path the user wrote (a
variant's own name, not its base system's); the valid neighbour of each config passes."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from commgnn.checks import path_problems
from commgnn.core.config import ConfigError, validate
from commgnn.experiments import expand_experiments
from commgnn.systems.clustergcn.system import ClusterGCNSystem
from commgnn.systems.grappa.system import GrappaSystem
from commgnn.systems.greendygnn.controller import WINDOWS
from commgnn.systems.greendygnn.dqn import QNetwork, save_policy

# 2000 nodes, 1200 of them training nodes: with batches of 256, at most 5 steps an epoch
BASE = {
    "datasets": {"tiny": {"source": "synthetic", "preset": "tiny", "seed": 3}},
    "partitionings": {"m2": {"method": "metis", "parts": 2},
                      "c2": {"method": "chunk", "parts": 2, "chunks": 3}},
    "training": {"epochs": 3, "fanouts": [5, 5]},
    "networks": {"congested": {"preset": "10gbe", "congestion": {
        "kind": "scenario", "name": "single-link", "onset_epoch": 1}}},
    "systems": {},
    "experiments": [],
}


def _config(system: str, entry: dict, *, partitioning: str = "m2", model: str = "sage",
            network: str = "10gbe", **extra) -> dict:
    config = copy.deepcopy(BASE)
    config["systems"][system] = entry
    config["experiments"] = [{"systems": [system], "datasets": ["tiny"],
                              "partitionings": [partitioning], "models": [model],
                              "batch_sizes": [256], "networks": [network]}]
    config.update(extra)
    return config


def _refused(config: dict) -> str:
    validate(config)  # the schema alone accepts it
    with pytest.raises(ConfigError) as info:
        expand_experiments(config)
    return str(info.value)


def _grappa(**options) -> dict:
    return _config("grappa-uw", {"system": "grappa", "estimator": "none", **options},
                   partitioning="c2")


def _greendygnn(**options) -> dict:
    return _config("gd-heuristic", {"system": "greendygnn", "controller": "heuristic",
                                    "window": 2, "warmup_epochs": 1, **options})


#: name: (bad options, their valid neighbour, config of options, the refusal)
OPTIONS = {
    "grappa active workers beyond the run's": (
        {"active_workers": 3}, {"active_workers": 2}, _grappa,
        "systems.grappa-uw.active_workers: 3: more than the run's 2 workers (0: all of them) "
        "(experiments[0], run grappa-uw/tiny/c2/sage_b256_10gbe_s0)"),
    "grappa super-epoch as long as the run": (
        {"super_epoch_epochs": 3}, {"super_epoch_epochs": 2}, _grappa,
        "systems.grappa-uw.super_epoch_epochs: 3: the partitions never switch in a 3-epoch "
        "run"),
    "grappa super-epoch with fixed partitions": (
        {"switching": "fixed", "super_epoch_epochs": 1}, {"switching": "fixed"}, _grappa,
        "systems.grappa-uw.super_epoch_epochs: 1: switching: fixed never switches "
        "partitions"),
    "grappa deficit patience beyond an epoch": (
        {"deficit_threshold": 0.5, "deficit_patience": 6},
        {"deficit_threshold": 0.5, "deficit_patience": 5, "super_epoch_epochs": 10}, _grappa,
        "systems.grappa-uw.deficit_patience: 6: more than the at most 5 steps of an epoch"),
    "hopgnn merges beyond the time steps": (
        {"merging": "fixed", "merges": 2}, {"merging": "fixed", "merges": 1},
        lambda **o: _config("hopgnn-fixed", {"system": "hopgnn", **o}),
        "systems.hopgnn-fixed.merges: 2: more than a 2-worker iteration can merge away (1: "),
    "clustergcn batches of more clusters than a worker has": (
        {"clusters": 8, "clusters_per_batch": 5}, {"clusters": 8, "clusters_per_batch": 4},
        lambda **o: _config("cg", {"system": "clustergcn", **o}, model="gcn"),
        "systems.cg.clusters_per_batch: 5: more than the 4 clusters a worker has (clusters "
        "8 / 2 workers)"),
    "clustergcn more clusters than nodes": (
        {"clusters": 2002}, {"clusters": 2000},
        lambda **o: _config("cg", {"system": "clustergcn", "clusters_per_batch": 2, **o},
                            model="gcn"),
        "systems.cg.clusters: 2002: 1001 clusters per worker, but the smallest of 2 parts of "
        "dataset 'tiny' (2000 nodes) has at most 1000"),
    "p3 pipeline as deep as an epoch": (
        {"pipeline": 5}, {"pipeline": 4},
        lambda **o: _config("p3-deep", {"system": "p3", **o}),
        "systems.p3-deep.pipeline: 5: not fewer than the at most 5 steps of an epoch"),
    "greendygnn warm-up longer than the run": (
        {"warmup_epochs": 4}, {"warmup_epochs": 3}, _greendygnn,
        "systems.gd-heuristic.warmup_epochs: 4: more than the run's 3 epochs: the congestion "
        "baseline is never set, the heuristic controller never sees congestion"),
    "greendygnn first window as long as the run": (
        {"window": 16}, {"window": 8}, _greendygnn,
        "systems.gd-heuristic.window: 16: not shorter than the run (at most 15 steps: 3 "
        "epochs of at most 5): the first window lasts to its end, the heuristic controller "
        "never decides one"),
    "greendygnn policy without the dqn controller": (
        {"policy": "p.pt"}, {},
        _greendygnn,
        "systems.gd-heuristic.policy: 'p.pt': only the dqn controller reads a policy "
        "(controller: heuristic)"),
}


@pytest.mark.parametrize("case", sorted(OPTIONS))
def test_an_option_the_run_makes_meaningless_is_refused(case):
    bad, good, config, expected = OPTIONS[case]
    message = _refused(config(**bad))
    assert message.startswith(expected) or expected in message, message
    assert "\n" not in message
    assert len(expand_experiments(config(**good))) == 1


def test_a_problem_of_several_cells_is_one_line():
    config = _grappa(active_workers=3)
    config["experiments"][0]["seeds"] = [0, 1, 2]
    assert _refused(config) == (
        "systems.grappa-uw.active_workers: 3: more than the run's 2 workers (0: all of them) "
        "(experiments[0], run grappa-uw/tiny/c2/sage_b256_10gbe_s0 and 2 other runs)")


def test_grappa_super_epochs_past_the_run_switch_on_a_deficit_alone():
    assert len(expand_experiments(_grappa(super_epoch_epochs=10, deficit_threshold=0.1,
                                          deficit_patience=1))) == 1


def test_the_workers_name_the_variant_key():
    partition = SimpleNamespace(workers=2)
    with pytest.raises(ConfigError, match=r"^systems\.grappa-uw\.active_workers: 3: more "
                                          r"than the run's 2 workers"):
        GrappaSystem({"active_workers": 3}, where="systems.grappa-uw").check_partition(
            partition, 2)
    with pytest.raises(ConfigError, match=r"^systems\.cg9\.clusters: 9: not a multiple"):
        ClusterGCNSystem({"clusters": 9}, where="systems.cg9").check_partition(
            SimpleNamespace(num_parts=2), 2)
    with pytest.raises(ConfigError, match=r"^systems\.grappa-x\.estimator: 'nope' is not"):
        GrappaSystem({"estimator": "nope"}, where="systems.grappa-x")


# -- a policy file ---------------------------------------------------------------------------
def _policy(path: Path, world: int) -> Path:
    save_policy(path, QNetwork(4, 2, [4]), {"world": world, "windows": list(WINDOWS)})
    return path


def _dqn(policy: Path | str, tmp_path: Path) -> dict:
    return _config("gd-dqn", {"system": "greendygnn", "controller": "dqn", "window": 2,
                              "warmup_epochs": 1, "policy": str(policy)},
                   results_dir=str(tmp_path / "results"))


def _commgnn(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "commgnn", *args], capture_output=True,
                          text=True, check=False, timeout=120)


def test_a_missing_policy_file_is_refused_by_validate(tmp_path):
    missing = tmp_path / "nope" / "policy.pt"
    config = _dqn(missing, tmp_path)
    assert path_problems(config) == [f"systems.gd-dqn.policy: '{missing}': no such file"]
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(config))
    proc = _commgnn("validate", str(path))
    assert (proc.returncode, proc.stderr) == (
        2, f"commgnn validate: error: {path}: systems.gd-dqn.policy: '{missing}': no such "
           "file\n")
    assert _commgnn("validate", "--no-host", str(path)).returncode == 0  # another host's
    empty = tmp_path / "empty"
    empty.mkdir()
    assert path_problems(_dqn(empty, tmp_path)) == [
        f"systems.gd-dqn.policy: '{empty}': a directory without policy.pt"]
    _policy(empty / "policy.pt", world=2)
    assert path_problems(_dqn(empty, tmp_path)) == []
    assert path_problems(_dqn(empty / "policy.pt", tmp_path)) == []
    assert len(expand_experiments(_dqn(empty, tmp_path))) == 1


def test_a_policy_trained_for_other_workers_is_refused(tmp_path):
    policy = _policy(tmp_path / "policy.pt", world=4)
    assert _refused(_dqn(policy, tmp_path)) == (
        f"systems.gd-dqn.policy: '{policy}': trained for 4 workers, the run has 2 "
        "(experiments[0], run gd-dqn/tiny/m2/sage_b256_10gbe_s0)")
    garbage = tmp_path / "garbage.pt"
    garbage.write_text("not a policy")
    assert _refused(_dqn(garbage, tmp_path)).startswith(
        f"systems.gd-dqn.policy: '{garbage}': {garbage}: not a readable policy file")
    assert len(expand_experiments(_dqn(_policy(tmp_path / "p2.pt", world=2), tmp_path))) == 1


# -- congestion that never fires -------------------------------------------------------------
def _congested(congestion: dict, **experiment) -> dict:
    config = _config("default", {}, network="congested")
    del config["systems"]["default"]
    config["networks"]["congested"]["congestion"] = congestion
    config["experiments"][0].update(experiment)
    return config


SINGLE = {"kind": "scenario", "name": "single-link"}

#: name: (a schedule that never fires in 3 epochs, its neighbour that does, the refusal)
SILENT = {
    "scenario onset at the run's end": (
        {**SINGLE, "onset_epoch": 3}, {**SINGLE, "onset_epoch": 1},
        "networks.congested.congestion.onset_epoch: 3: never fires in a 3-epoch run "
        "(experiments[0])"),
    "scenario onset by default": (
        SINGLE, {**SINGLE, "onset_epoch": 0},
        "networks.congested.congestion.onset_epoch: 3 (the default): never fires in a "
        "3-epoch run (experiments[0])"),
    "scenario onset on the final, clean epoch": (
        {**SINGLE, "onset_epoch": 2}, {**SINGLE, "onset_epoch": 2, "final_clean": False},
        "networks.congested.congestion.onset_epoch: 2: never fires in a 3-epoch run: its "
        "first congested epoch is the final one, which final_clean keeps clean "
        "(experiments[0])"),
    "scenario without delay": (
        {**SINGLE, "onset_epoch": 0, "delay_ms": 0}, {**SINGLE, "onset_epoch": 0,
                                                      "delay_ms": 1},
        "networks.congested.congestion.delay_ms: 0: never fires in a 3-epoch run: no delay "
        "(experiments[0])"),
    "greendygnn pattern's warm-up by default": (
        {"kind": "greendygnn"}, {"kind": "greendygnn", "warmup_epochs": 1},
        "networks.congested.congestion.warmup_epochs: 3 (the default): never fires in a "
        "3-epoch run (experiments[0])"),
    "epoch table past the end": (
        {"kind": "epochs", "table": {"3": {"1": 5}, "7": {"1": 5}}},
        {"kind": "epochs", "table": {"2": {"1": 5}, "7": {"1": 5}}},
        "networks.congested.congestion.table: epochs [3, 7]: never fires in a 3-epoch run "
        "(epochs 0..2) (experiments[0])"),
    "time segments without delay": (
        {"kind": "time", "segments": [{"start_s": 0, "delays_ms": {"1": 0}}]},
        {"kind": "time", "segments": [{"start_s": 0, "delays_ms": {"1": 3}}]},
        "networks.congested.congestion.segments: [{'start_s': 0, 'delays_ms': {'1': 0}}]: "
        "never fires in a 3-epoch run: no segment delays a machine (experiments[0])"),
    "no traffic class": (
        {**SINGLE, "onset_epoch": 0, "applies_to": []},
        {**SINGLE, "onset_epoch": 0, "applies_to": ["fetch"]},
        "networks.congested.congestion.applies_to: []: delays no traffic class"),
}


@pytest.mark.parametrize("case", sorted(SILENT))
def test_a_congestion_schedule_that_never_fires_is_refused(case):
    silent, firing, expected = SILENT[case]
    assert _refused(_congested(silent)) == expected
    assert len(expand_experiments(_congested(firing))) == 1


def test_an_experiment_s_own_epochs_decide_whether_congestion_fires():
    config = _congested({**SINGLE, "onset_epoch": 1})
    config["experiments"].append({**config["experiments"][0], "epochs": 1, "seeds": [1]})
    assert _refused(config) == ("networks.congested.congestion.onset_epoch: 1: never fires "
                                "in a 1-epoch run (experiments[1])")
    config["experiments"][1]["epochs"] = 4
    assert len(expand_experiments(config)) == 2


def test_the_clean_scenario_is_a_control():
    assert len(expand_experiments(_congested({"kind": "scenario", "name": "clean"}))) == 1


# -- control.network -------------------------------------------------------------------------
def test_the_control_network_is_one_a_dqn_run_is_calibrated_on():
    config = _config("gd-dqn", {"system": "greendygnn", "controller": "dqn", "window": 2,
                                "warmup_epochs": 1}, control={"network": "1gbe"})
    assert _refused(config) == (
        "control.network: '1gbe': no experiment runs on it, and the workload of the dqn "
        "runs that get the pipeline's policy (experiments[0]) is calibrated on a network "
        "of the experiment matrix (10gbe)")
    config["control"]["network"] = "10gbe"
    assert len(expand_experiments(config)) == 1
    # no run gets the pipeline's policy: nothing is calibrated on it
    config = _greendygnn()
    config["control"] = {"network": "1gbe"}
    assert len(expand_experiments(config)) == 1
