"""Config checks beyond the schema: every cross-field and host constraint is one line naming
the key and the value, reported by `commgnn validate`, the CLI steps and the workflow
before any work."""

from __future__ import annotations

import copy
import json
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
import torch
import yaml

from commgnn import cli
from commgnn.checks import config_problems, host_problems, training_host_problems
from commgnn.core.config import ConfigError, read_yaml, validate
from commgnn.experiments import expand_experiments

BASE = {
    "datasets": {"tiny": {"source": "synthetic", "preset": "tiny", "nodes": 300, "seed": 1}},
    "partitionings": {"m2": {"method": "metis", "parts": 2},
                      "c2": {"method": "chunk", "parts": 2}},
    "networks": {"n": {"preset": "10gbe"}},
    "training": {"fanouts": [5, 5]},
    "experiments": [{"systems": ["default"], "datasets": ["tiny"], "partitionings": ["m2"],
                     "networks": ["n"], "batch_sizes": [64]}],
}


def _with(mutate) -> dict:
    config = copy.deepcopy(BASE)
    mutate(config)
    return config


def test_base_config_passes():
    validate(BASE)
    assert config_problems(BASE) == []
    assert len(expand_experiments(BASE)) == 1


CROSS_FIELD = {
    "parts > nodes": (
        lambda c: c["partitionings"].update(m400={"method": "metis", "parts": 400}),
        "partitionings.m400.parts: 400: more parts than dataset 'tiny' has nodes (300)"),
    "chunks < parts": (
        lambda c: c["partitionings"].update(c4={"method": "chunk", "parts": 4, "chunks": 3}),
        "partitionings.c4: partitioning.chunks = 3 < parts = 4: every worker needs its own "
        "base chunk"),
    "chunks on metis": (
        lambda c: c["partitionings"]["m2"].update(chunks=4),
        "partitionings.m2: partitioning: ['chunks'] only apply to method 'chunk'"),
    "balance_train without METIS": (
        lambda c: c["partitionings"]["c2"].update(balance_train=True),
        "partitionings.c2: partitioning.balance_train only applies to METIS partitioning"),
    "split past 1": (
        lambda c: c["datasets"]["tiny"].update(split={"train": 0.6, "val": 0.3, "test": 0.3}),
        "datasets.tiny: synthetic: 'split' fractions"),
    "degree >= nodes": (
        lambda c: c["datasets"]["tiny"].update(nodes=50, avg_degree=60),
        "datasets.tiny: synthetic: 'avg_degree' = 60 must be in (0, nodes - 1]"),
    "classes > nodes": (
        lambda c: c["datasets"]["tiny"].update(nodes=10, classes=20),
        "datasets.tiny: synthetic: 'classes' = 20 must be in [2, nodes]"),
    "rmat a+b+c": (
        lambda c: c["datasets"].update(r={"source": "rmat", "scale": 8, "a": 0.9, "b": 0.5}),
        "datasets.r: rmat: 'a' + 'b' + 'c' = 1.59 > 1"),
    "no training node per worker": (
        lambda c: c["datasets"]["tiny"].update(nodes=100, split={"train": 0.01}),
        "experiments[0]: dataset 'tiny' has 1 training nodes, fewer than partitioning "
        "'m2''s 2 parts"),
    "eval fan-outs of another depth": (
        lambda c: c["training"].update(eval_fanouts=[5]),
        "training.eval_fanouts: [5]: 1 fan-outs, but model 'sage' has 2 layers"),
    "eval fan-outs vs a deeper model": (
        lambda c: (c["training"].update(eval_fanouts=[5, 5], depth_fanouts={3: [5, 5, 5]}),
                   c["experiments"][0].update(models=["sage", "gcn-3"])),
        "training.eval_fanouts: [5, 5]: 2 fan-outs, but model 'gcn-3' has 3 layers"),
    "depth fan-outs of another length": (
        lambda c: c["training"].update(depth_fanouts={3: [5, 5]}),
        "training.depth_fanouts.3: [5, 5]: 2 fan-outs for 3 layers"),
    "link to a missing worker": (
        lambda c: c["networks"]["n"].update(links=[{"src": 0, "dst": 7, "latency_ms": 1}]),
        "networks.n.links[0].dst: 7: no such worker in a 2-worker run (workers 0..1)"),
    "link to itself": (
        lambda c: c["networks"]["n"].update(links=[{"src": 1, "dst": 1, "latency_ms": 1}]),
        "networks.n.links[0]: src = dst = 1"),
    "congested missing machine": (
        lambda c: c["networks"]["n"].update(
            congestion={"kind": "scenario", "name": "single-link", "nodes": [5]}),
        "networks.n.congestion.nodes[0]: 5: no such machine in a 2-worker run"),
    "epochs table missing machine": (
        lambda c: c["networks"]["n"].update(
            congestion={"kind": "epochs", "table": {"0": {"9": 5}}}),
        "networks.n.congestion.table.0.9: 9: no such machine in a 2-worker run (2 machines"),
    "machines, not workers": (
        lambda c: c["networks"]["n"].update(
            workers_per_node=2,
            congestion={"kind": "scenario", "name": "single-link", "nodes": [1]}),
        "networks.n.congestion.nodes[0]: 1: no such machine in a 2-worker run (1 machines"),
    "timeout below the floor": (
        lambda c: c["training"].update(rpc_timeout_s=0.01),
        "training.rpc_timeout_s: 0.01: shorter than 1.0 s"),
    "rpc timeout under one round trip": (
        lambda c: (c["networks"]["n"].update(latency_ms=40, time_dilation=100),
                   c["training"].update(rpc_timeout_s=5)),
        "training.rpc_timeout_s: 5: network 'n' with 2 workers takes 8 s for an empty "
        "round trip"),
    "collective timeout under one all-reduce": (
        lambda c: (c["networks"]["n"].update(latency_ms=40, time_dilation=100),
                   c["training"].update(collective_timeout_s=5, rpc_timeout_s=60)),
        "training.collective_timeout_s: 5: network 'n' with 2 workers takes 8 s for an "
        "empty all-reduce"),
    "undefined control network": (
        lambda c: c.update(control={"network": "nope"}),
        "control.network: network 'nope' is neither in 'networks' nor a preset"),
    "undefined dataset": (
        lambda c: c["experiments"][0].update(datasets=["nope"]),
        "experiments[0].datasets: ['nope'] not defined in 'datasets'"),
    "unknown PyG class": (
        lambda c: c.update(models={"gatv2": {"conv": "GATv3Conv"}}),
        "models.gatv2.conv: 'GATv3Conv' is not a torch_geometric.nn convolution"),
    "PyG conv without bipartite input": (
        lambda c: c.update(models={"g": {"conv": "GCNConv", "hidden": 16}}),
        "models.g.conv: 'GCNConv' does not accept bipartite input (in_channels=(6, 6): "
        "TypeError: "),
    "PyG conv rejecting its args": (
        lambda c: c.update(models={"g": {"conv": "GATv2Conv", "args": {"headz": 2}}}),
        "models.g.args: GATv2Conv(in_channels=(6, 6), out_channels=3, **{'headz': 2}) "
        "fails: TypeError: "),
    "unknown built-in": (
        lambda c: c.update(models={"m": {"model": "gin"}}),
        "models.m.model: 'gin' is not a built-in model (sage, gcn, gat, deepgcn, film)"),
    "built-in rejecting its args": (
        lambda c: c.update(models={"m": {"model": "film", "args": {"residul": False}}}),
        "models.m.args: film with args {'residul': False} fails: TypeError: "),
    "a named model called like a built-in": (
        lambda c: c.update(models={"gcn": {"model": "sage", "hidden": 8}}),
        "models.gcn: 'gcn' is a built-in model; a named model needs another name"),
    "a named model with model and conv": (
        lambda c: c.update(models={"m": {"model": "sage", "conv": "SAGEConv"}}),
        "models.m: needs exactly one of 'model' (a built-in: sage, gcn, gat, deepgcn, film) "
        "and 'conv'"),
    "undefined model": (
        lambda c: (c["training"].update(depth_fanouts={3: [5, 5, 5]}),
                   c["experiments"][0].update(models=["sage", "nope-3"])),
        "experiments[0].models: 'nope-3': 'nope' is neither a built-in model (sage, gcn, "
        "gat, deepgcn, film) nor in 'models'"),
    "system on a partitioning it cannot use": (
        lambda c: c["experiments"][0].update(systems=["grappa"]),
        "experiments[0]: system 'grappa' does not train on partitioning 'm2' (method metis)"),
}


@pytest.mark.parametrize("case", sorted(CROSS_FIELD))
def test_cross_field_problem_is_one_line_naming_the_key(case):
    mutate, expected = CROSS_FIELD[case]
    config = _with(mutate)
    validate(config)  # the schema alone accepts it
    with pytest.raises(ConfigError) as info:
        expand_experiments(config)
    message = str(info.value)
    assert expected in message, message
    assert "\n" not in message


def test_several_problems_are_listed_one_per_line():
    config = _with(lambda c: (c["partitionings"]["m2"].update(parts=400),
                              c["partitionings"]["c2"].update(chunks=1)))
    problems = config_problems(config)
    assert problems == [
        "partitionings.m2.parts: 400: more parts than dataset 'tiny' has nodes (300)",
        "partitionings.c2: partitioning.chunks = 1 outside [2, 65536]",
        "experiments[0]: dataset 'tiny' has 180 training nodes, fewer than partitioning "
        "'m2''s 400 parts: a worker would have none to train",
    ]
    with pytest.raises(ConfigError, match=r"^3 problems:\n  partitionings.m2.parts"):
        expand_experiments(config)


@pytest.mark.parametrize(("where", "spec", "typo"), [
    ("links.0", {"links": [{"src": 0, "dst": 1, "latncy_ms": 1}]}, "latncy_ms"),
    ("congestion", {"congestion": {"kind": "greendygnn", "sed": 1}}, "sed"),
    ("congestion", {"congestion": {"kind": "epochs", "table": {}, "perod": 2}}, "perod"),
    ("congestion.segments.0", {"congestion": {"kind": "time", "segments": [
        {"start_s": 0, "delay_ms": {"1": 5}}]}}, "delay_ms"),
    ("congestion", {"congestion": {"kind": "none", "delay_ms": 5}}, "delay_ms"),
])
def test_network_sub_schemas_are_strict(where, spec, typo):
    config = _with(lambda c: c["networks"]["n"].update(spec))
    with pytest.raises(ConfigError) as info:
        validate(config)
    assert str(info.value) == (f"config.networks.n.{where}: Additional properties are not "
                               f"allowed ('{typo}' was unexpected)")


def test_every_object_in_the_schema_is_strict():
    """Unknown keys are errors everywhere: each object lists its keys (or is a tagged union
    of strict ones); `system_options` is checked against the system's own declaration,
    which is strict (`System.option_schema`)."""
    from commgnn.core.config import schema

    loose = []

    def walk(node, path):
        if isinstance(node, dict):
            if node.get("type") == "object" and "additionalProperties" not in node \
                    and "allOf" not in node:
                loose.append(path)
            for key, value in node.items():
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{path}[{index}]")

    walk(schema(), "")
    assert loose == ["/$defs/system_options"]


def test_duplicate_yaml_keys_name_the_line(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("datasets:\n  tiny: {source: synthetic}\npartitionings:\n"
                    "  m2: {method: metis, parts: 2}\n  m2: {method: random, parts: 2}\n")
    with pytest.raises(ConfigError) as info:
        read_yaml(path)
    assert str(info.value) == f"{path}:5: duplicate key 'm2' (first at line 4)"


# -- this host ------------------------------------------------------------------------
def test_host_problems(tmp_path):
    results = tmp_path / "results"
    results.write_text("a file")
    config = _with(lambda c: (
        c.update(results_dir=str(results)),
        c["datasets"].update(cora={"source": "planetoid", "name": "cora",
                                   "path": str(tmp_path / "none")}),
        c["training"].update(interface="nonexistent0", master_addr="192.0.2.1")))
    assert host_problems(config) == [
        f"results_dir: '{results}': is a file, not a directory",
        f"datasets.cora.path: '{tmp_path / 'none'}': no such directory",
        "training.interface: 'nonexistent0': no such network interface here (have "
        + ", ".join(sorted(psutil.net_if_addrs())) + ")",
        "training.master_addr: '192.0.2.1': not an address of this host, where the local "
        "launcher starts the rendezvous",
    ]
    (tmp_path / "none").mkdir()
    (tmp_path / "none" / "ind.cora.x").write_text("")
    config["results_dir"] = str(results / "below")
    problems = host_problems(config)
    assert problems[0] == f"results_dir: '{results / 'below'}': is under the file {results}, " \
                          "not a directory"
    assert "lacks ind.cora.y, ind.cora.tx" in problems[1]


def test_master_on_another_interface_and_busy_port():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert training_host_problems({"master_port": port}) == [
            f"training.master_port: {port}: in use on 127.0.0.1 (0 picks a free port)"]
    interfaces = {name: [a.address.split("%")[0] for a in addrs
                         if a.family in (socket.AF_INET, socket.AF_INET6)]
                  for name, addrs in psutil.net_if_addrs().items()}
    other = next((name for name, addrs in interfaces.items()
                  if name != "lo" and addrs and "127.0.0.1" not in addrs), None)
    if other is not None:
        assert training_host_problems({"interface": other}) == [
            f"training.master_addr: '127.0.0.1': not on training.interface {other!r} "
            f"({', '.join(interfaces[other])})"]
    assert training_host_problems({"interface": "lo"}) == []
    assert training_host_problems({"master_addr": "192.0.2.1"}, rendezvous=False) == []
    assert training_host_problems({"master_addr": "127.0.1.1"}) == []  # Debian's host name


def test_a_port_a_finished_run_closed_is_free():
    """The store closes its connections first, leaving TIME_WAIT sockets on its port for a
    minute; it binds with SO_REUSEADDR, so the port is not in use for the next run."""
    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the store's
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        conn, _ = server.accept()
        conn.close()  # the server side closes first: its end waits in TIME_WAIT
        client.recv(1)
        client.close()
    assert training_host_problems({"master_port": port}) == []


@pytest.mark.skipif(torch.cuda.is_available(), reason="this host has a CUDA device")
def test_cuda_device_on_a_host_without_one():
    assert training_host_problems({"device": "cuda"}) == [
        "training.device: 'cuda': this host has no usable CUDA device"]


# -- the CLI ----------------------------------------------------------------------------
def _commgnn(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "commgnn", *args], capture_output=True,
                          text=True, check=False, cwd=cwd, timeout=120)


def test_validate_reports_one_line_per_problem(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(_with(lambda c: c["training"].update(eval_fanouts=[5]))))
    proc = _commgnn("validate", str(path))
    assert proc.returncode == 2
    assert proc.stderr == (f"commgnn validate: error: {path}: training.eval_fanouts: [5]: "
                           "1 fan-outs, but model 'sage' has 2 layers\n")
    path.write_text(yaml.safe_dump(_with(lambda c: c.update(results_dir=str(path)))))
    proc = _commgnn("validate", str(path))
    assert (proc.returncode, proc.stderr) == (
        2, f"commgnn validate: error: {path}: results_dir: '{path}': is a file, not a "
           "directory\n")
    assert _commgnn("validate", "--no-host", str(path)).returncode == 0


def test_steps_refuse_bad_input_before_any_work(tmp_path):
    out = tmp_path / "ds"
    proc = _commgnn("dataset", "--name", "x", "--out", str(out), "--spec",
                    json.dumps({"source": "synthetic", "nodes": 50, "avg_degree": 60}))
    assert (proc.returncode, proc.stderr) == (
        2, "commgnn dataset: error: datasets.x: synthetic: 'avg_degree' = 60 must be in "
           "(0, nodes - 1]\n")
    assert not out.exists()
    spec = {"system": "default", "dataset": "d", "partitioning": "p", "model": "sage",
            "batch_size": 8, "network": "none", "network_spec": {"preset": "none"},
            "seed": 0, "workers": 2, "training": {"interface": "nonexistent0"}}
    proc = _commgnn("train", "--spec", json.dumps(spec), "--dataset", str(tmp_path / "d"),
                    "--partition", str(tmp_path / "p"), "--out", str(tmp_path / "run"),
                    "--checkpoints", str(tmp_path / "ck"))
    assert proc.returncode == 2
    assert proc.stderr.startswith("commgnn train: error: training.interface: "
                                  "'nonexistent0': no such network interface here")
    assert proc.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_missing_inputs_and_os_errors_are_one_line(tmp_path):
    missing = tmp_path / "nope"
    proc = _commgnn("figure", "rapidgnn_fig5", "--out", str(tmp_path / "f.png"), str(missing))
    assert (proc.returncode, proc.stderr) == (2, f"commgnn figure: error: {missing}: missing\n")
    proc = _commgnn("runs-table", "--out", str(tmp_path / "r.csv"), str(missing))
    assert (proc.returncode, proc.stderr) == (
        2, f"commgnn runs-table: error: {missing / 'summary.json'}: missing (an unfinished "
           "run?)\n")
    afile = tmp_path / "afile"
    afile.write_text("")
    proc = _commgnn("download", "--name", "x", "--out", str(afile / "x"), "--spec",
                    json.dumps({"source": "ogb", "name": "ogbn-arxiv"}))
    assert (proc.returncode, proc.stderr) == (
        2, f"commgnn download: error: {afile / 'x'}: Not a directory\n")


def test_a_bug_is_one_line_and_debug_shows_the_traceback(monkeypatch, capsys):
    def broken(args):
        raise KeyError("spam")

    monkeypatch.setattr(cli, "cmd_systems", broken)
    assert cli.main(["systems"]) == 1
    assert capsys.readouterr().err == ("commgnn systems: error: internal error: KeyError: "
                                       "'spam' (run `commgnn --debug ...` for the "
                                       "traceback)\n")
    with pytest.raises(KeyError, match="spam"):
        cli.main(["--debug", "systems"])


# -- the workflow -------------------------------------------------------------------------
def _snakemake(repo_root: Path, workdir: Path, config: dict, *flags: str):
    (workdir / "c.yaml").write_text(yaml.safe_dump(config))
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", *flags, "--snakefile",
         str(repo_root / "Snakefile"), "--directory", str(workdir), "--configfile",
         str(workdir / "c.yaml"), "--workflow-profile", "none"],
        capture_output=True, text=True, check=False, timeout=300)


def test_workflow_stops_before_any_job(repo_root, tmp_path):
    """A cross-field problem stops even a dry run; a host problem stops a real run before
    its first job (and no output exists); both as the same one-line messages."""
    cross = _with(lambda c: (c.update(results_dir="res"),
                             c["networks"]["n"].update(links=[{"src": 0, "dst": 7}])))
    proc = _snakemake(repo_root, tmp_path, cross, "-n")
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        f"commgnn: invalid configuration ({tmp_path / 'c.yaml'}): networks.n.links[0].dst: "
        "7: no such worker in a 2-worker run (workers 0..1)")
    host = _with(lambda c: (c.update(results_dir="res"),
                            c["training"].update(interface="nonexistent0")))
    assert _snakemake(repo_root, tmp_path, host, "-n").returncode == 0  # jobs not run here
    proc = _snakemake(repo_root, tmp_path, host)
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1].startswith(
        f"commgnn: invalid configuration ({tmp_path / 'c.yaml'}): training.interface: "
        "'nonexistent0': no such network interface here")
    assert not (tmp_path / "res").exists()


def test_workflow_refuses_duplicate_keys(repo_root, tmp_path):
    """Snakemake's own loader lets the last duplicate win; the workflow names the line."""
    text = yaml.safe_dump(_with(lambda c: c.update(results_dir="res")), sort_keys=False)
    text = text.replace("datasets:\n", "datasets:\n  tiny: {source: synthetic}\n", 1)
    (tmp_path / "d.yaml").write_text(text)
    first, second = [i + 1 for i, line in enumerate(text.splitlines())
                     if line.startswith("  tiny:")][:2]
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", "-n", "--snakefile",
         str(repo_root / "Snakefile"), "--directory", str(tmp_path), "--configfile",
         str(tmp_path / "d.yaml"), "--workflow-profile", "none"],
        capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 1
    assert proc.stderr.splitlines()[-1] == (
        f"commgnn: invalid configuration ({tmp_path / 'd.yaml'}): {tmp_path / 'd.yaml'}:"
        f"{second}: duplicate key 'tiny' (first at line {first})")


def test_yaml_merge_keys_are_not_duplicates(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("base: &b {parts: 2, method: metis}\n"
                    "partitionings:\n  m2: {<<: *b, parts: 4}\n")
    assert read_yaml(path)["partitionings"] == {"m2": {"parts": 4, "method": "metis"}}


def test_an_experiment_sets_its_own_epochs():
    config = _with(lambda c: c["experiments"].append(
        {**c["experiments"][0], "systems": ["oracle"], "epochs": 7}))
    validate(config)
    epochs = {spec.system: spec.get("epochs") for spec in expand_experiments(config)}
    assert epochs == {"default": 3, "oracle": 7}  # training.epochs' default, the entry's own
    clash = _with(lambda c: c["experiments"].append({**c["experiments"][0], "epochs": 7}))
    with pytest.raises(ConfigError, match=r"experiments\[1\]: run default/tiny/m2/"
                                          r"sage_b64_n_s0 is also in an earlier experiment"):
        expand_experiments(clash)
    same = _with(lambda c: c["experiments"].append({**c["experiments"][0], "epochs": 3}))
    assert len(expand_experiments(same)) == 1  # the same run twice is one run


def test_named_models_reach_the_run_spec():
    """A named model's overrides reach RunSpec.training, its built-in or conv the model
    factory; a depth suffix works on names; specs without named models serialise as
    before (no ``model_options`` key, the same resume key)."""
    import hashlib
    from dataclasses import asdict

    from commgnn.core.spec import RunSpec

    config = _with(lambda c: (
        c.update(models={"sage_h16": {"model": "sage", "hidden": 16, "dropout": 0.1},
                         "gatv2": {"conv": "GATv2Conv", "args": {"heads": 2},
                                   "hidden": 8, "heads": 3},
                         "gcn_right": {"model": "gcn", "args": {"norm": "right"}}}),
        c["training"].update(hidden=32, depth_fanouts={10: [3] * 10}),
        c["experiments"][0].update(models=["sage", "sage_h16-10", "gatv2", "gcn_right",
                                           "deepgcn-10", "film"])))
    validate(config)
    specs = {spec.model: spec for spec in expand_experiments(config)}
    got = {name: (s.architecture, s.model_kwargs(), s.get("hidden"), s.get("heads"),
                  s.get("dropout"), len(s.get("fanouts"))) for name, s in specs.items()}
    assert got == {
        "sage": ("sage", {}, 32, 4, 0.5, 2),
        "sage_h16-10": ("sage", {}, 16, 4, 0.1, 10),
        "gatv2": ("conv", {"conv": "GATv2Conv", "args": {"heads": 2}}, 8, 3, 0.5, 2),
        "gcn_right": ("gcn", {"norm": "right"}, 32, 4, 0.5, 2),
        "deepgcn-10": ("deepgcn", {}, 32, 4, 0.5, 10),
        "film": ("film", {}, 32, 4, 0.5, 2),
    }
    assert specs["sage_h16-10"].run_id == "default/tiny/m2/sage_h16-10_b64_n_s0"
    for spec in specs.values():  # (JSON turns depth_fanouts' int keys into strings)
        back = RunSpec.from_json(spec.to_json())
        assert back.to_json() == spec.to_json() and back.model_options == spec.model_options
    plain = specs["sage"]
    assert "model_options" not in json.loads(plain.to_json())
    old = asdict(plain)
    del old["model_options"]
    assert RunSpec.from_json(json.dumps(old)).to_json() == plain.to_json()  # from before
    old["training"] = {k: v for k, v in old["training"].items() if k != "epochs"}
    assert plain.resume_key() == hashlib.sha256(json.dumps(old, sort_keys=True)
                                                .encode()).hexdigest()
    assert json.loads(specs["gatv2"].to_json())["model_options"]["conv"] == "GATv2Conv"


def test_eval_fanouts_training_follows_each_runs_depth():
    """``eval_fanouts: training`` passes the checks in a config of several depths and gives
    each run its own training fan-outs to evaluate with."""
    config = _with(lambda c: (
        c["training"].update(eval_fanouts="training", depth_fanouts={3: [5, 4, 3]}),
        c["experiments"][0].update(models=["sage", "gcn-3"])))
    validate(config)
    got = {s.model: (s.get("fanouts"), s.get("eval_fanouts"))
           for s in expand_experiments(config)}
    assert got == {"sage": (BASE["training"]["fanouts"], BASE["training"]["fanouts"]),
                   "gcn-3": ([5, 4, 3], [5, 4, 3])}


@pytest.mark.parametrize(("change", "error"), [
    (lambda c: c["training"].update(fanouts=[2] * 10), None),
    (lambda c: (c["training"].update(depth_fanouts={10: [2] * 10, 9: [2] * 9}),
                c["experiments"][0].update(models=["deepgcn-10", "film-9", "sage-1"])), None),
    (lambda c: c["training"].update(fanouts=[2] * 11),
     "config.training.fanouts: [2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2] is too long"),
    (lambda c: c["training"].update(depth_fanouts={"11": [2] * 10}),
     "config.training.depth_fanouts: '11' does not match"),
    (lambda c: c["experiments"][0].update(models=["sage-11"]),
     "config.experiments.0.models.0: 'sage-11' does not match"),
    (lambda c: c["experiments"][0].update(models=["sage-0"]),
     "config.experiments.0.models.0: 'sage-0' does not match"),
    (lambda c: c.update(models={"sage-h16": {"model": "sage"}}),
     "config.models: 'sage-h16' does not match"),
    (lambda c: c.update(models={"m": {"model": "sage", "hiden": 16}}),
     "config.models.m: Additional properties are not allowed ('hiden' was unexpected)"),
])
def test_depth_and_name_limits_of_the_schema(change, error):
    """Depth 1 to 10 (fan-outs, depth fan-outs, the `-N` suffix); named models' names hold
    no '-' and their entries are strict."""
    config = _with(change)
    if error is None:
        validate(config)
        assert config_problems(config) == []
        return
    with pytest.raises(ConfigError) as info:
        validate(config)
    assert str(info.value).startswith(error), str(info.value)
