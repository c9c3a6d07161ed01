"""The system contract, proved by systems defined in this file alone.

``drop-remote`` and ``swap-parts`` reach the pipeline the way a system outside the
package would: a ``commgnn.systems`` entry point (a dist-info directory on the path)
names their classes in this module. Nothing else in the repository knows them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from commgnn.core.batch import PreparedBatch
from commgnn.core.config import ConfigError
from commgnn.core.counts import FetchCounts
from commgnn.core.placement import Placement
from commgnn.data.store import load_dataset
from commgnn.partition import load_partition
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.schedule import epoch_seed_nodes, steps_per_epoch, worker_train_nodes
from commgnn.sampling.seeds import batch_seed
from commgnn.systems.default.system import DefaultSystem
from commgnn.systems.registry import discover

pytestmark = pytest.mark.timeout(600)


class DropRemoteSystem(DefaultSystem):
    """Trains on local features only: every remote input row is replaced by ``fill``, so
    nothing crosses the network. Counts the steps it observed (state kept across resume)."""

    name = "drop-remote"
    options = {"fill": {"type": "number", "default": 0.0,
                        "description": "value of every dropped feature"}}
    reductions = {"dropped_rows": "sum", "observed_steps": "max"}

    def setup(self, ctx, model, optimizer) -> None:
        super().setup(ctx, model, optimizer)
        self.observed = 0
        self.dropped = 0

    def batches(self, epoch: int) -> Iterator[PreparedBatch]:
        ctx, store = self.ctx, self.ctx.store
        for step, seeds in enumerate(self.epoch_seeds(epoch)):
            batch = ctx.sample(epoch, step, seeds)
            nodes = batch.input_nodes
            local = store.owner[nodes] == ctx.rank
            features = torch.full((nodes.numel(), store.feature_dim),
                                  float(self.options["fill"]))
            features[local] = store.local_features.index_select(0, store.local_id[nodes[local]])
            self.dropped += int((~local).sum())
            yield PreparedBatch(step=step, batch=batch.to(ctx.device),
                                features=features.to(ctx.device),
                                labels=ctx.labels_of(batch.seeds),
                                counts=FetchCounts(local_rows=int(local.sum())))

    def observe(self, record) -> None:
        self.observed += 1

    def end_epoch(self, epoch: int) -> dict:
        out = {"dropped_rows": self.dropped, "observed_steps": self.observed}
        self.dropped = 0
        return out

    def state_dict(self) -> dict:
        return {"observed": self.observed}

    def load_state_dict(self, state: dict) -> None:
        self.observed = int(state["observed"])


class SwapSystem(DefaultSystem):
    """``default`` whose workers train each other's partition in odd epochs."""

    name = "swap-parts"

    def placement(self, epoch: int) -> Placement:
        own = Placement.own(self.ctx.world_size)
        return own if epoch % 2 == 0 else Placement(tuple(reversed(own.parts)))


class SlowStartSystem(DefaultSystem):
    """``default`` whose per-epoch setup takes 0.3 s (a stand-in for a cache fill)."""

    name = "slow-start"

    def start_epoch(self, epoch: int) -> None:
        time.sleep(0.3)


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> str:
    """A dist-info with this module's systems as ``commgnn.systems`` entry points, put on
    the path of this process (spawned workers inherit it) and returned for PYTHONPATH."""
    root = tmp_path_factory.mktemp("plugins")
    info = root / "commgnn_toy_systems-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: commgnn-toy-systems\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text(
        "[commgnn.systems]\ndrop-remote = test_contract:DropRemoteSystem\n"
        "swap-parts = test_contract:SwapSystem\n"
        "slow-start = test_contract:SlowStartSystem\n")
    paths = [str(Path(__file__).parent), str(root)]
    sys.path[:0] = paths
    yield os.pathsep.join(paths)
    for path in paths:
        sys.path.remove(path)


def test_builtin_systems_are_discovered():
    systems = discover()
    assert {"default", "oracle", "rapidgnn"} <= set(systems)
    assert systems["rapidgnn"].needs == ("presample",)
    assert systems["oracle"].option_properties()["schedule"]["default"] == "owned"


def test_a_taken_name_or_unknown_declaration_is_refused():
    with pytest.raises(ValueError, match="'default' is taken"):
        type("Impostor", (DefaultSystem,), {"name": "default", "__module__": "elsewhere"})
    with pytest.raises(ValueError, match="unknown pipeline inputs"):
        type("Needy", (DefaultSystem,), {"name": "needy", "needs": ("crystal-ball",)})
    with pytest.raises(ValueError, match="unknown reductions"):
        type("Odd", (DefaultSystem,), {"name": "odd", "reductions": {"x": "median"}})


def _run_tiny_config(tiny: dict, **experiment) -> dict:
    return {**tiny, "experiments": [{"datasets": ["tiny"], "partitionings": ["metis2"],
                                     "batch_sizes": [128], **experiment}]}


TINY = {
    "results_dir": "out",
    "datasets": {"tiny": {"source": "synthetic", "preset": "tiny", "seed": 3}},
    "partitionings": {"metis2": {"method": "metis", "parts": 2},
                      "chunk3": {"method": "chunk", "parts": 2, "chunks": 3}},
    "training": {"epochs": 2, "fanouts": [5, 5], "hidden": 16, "eval_max_nodes": 100},
}


def _snakemake(repo: Path, workdir: Path, config: dict, pythonpath: str):
    cfg = workdir / "config.yaml"
    cfg.write_text(yaml.safe_dump(config))
    env = {**os.environ, "PYTHONPATH": pythonpath}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--snakefile",
         str(repo / "Snakefile"), "--directory", str(workdir), "--configfile", str(cfg)],
        capture_output=True, text=True, check=False, timeout=600, env=env)


def test_toy_system_runs_through_the_real_pipeline(repo_root, tmp_path, plugin_path):
    config = _run_tiny_config({**TINY, "systems": {"drop-remote": {"fill": 0.5}}},
                              systems=["default", "drop-remote"])
    proc = _snakemake(repo_root, tmp_path, config, plugin_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    runs = pd.read_csv(tmp_path / "out" / "tables" / "runs.csv").set_index("system")
    toy, default = runs.loc["drop-remote"], runs.loc["default"]
    assert toy["base_system"] == "drop-remote" and toy["option_fill"] == 0.5
    assert toy["remote_rows_per_epoch"] == 0 and toy["remote_rpcs_per_epoch"] == 0
    # same batches as default: it drops exactly the rows default fetches
    assert toy["dropped_rows_per_epoch"] == default["remote_rows_per_epoch"] > 0
    assert toy["observed_steps"] == 2 * toy["steps_per_epoch"]
    assert default["option_schedule"] == "owned"


def test_toy_system_options_are_checked_before_any_job(repo_root, tmp_path, plugin_path):
    config = _run_tiny_config({**TINY, "systems": {"drop-remote": {"fill": "lots"}}},
                              systems=["drop-remote"])
    proc = _snakemake(repo_root, tmp_path, config, plugin_path)
    assert proc.returncode != 0
    assert "systems.drop-remote.fill: 'lots' is not of type 'number'" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_system_state_survives_resume(tiny_inputs, tmp_path, run_on_tiny, make_spec,
                                      plugin_path):
    """``observed_steps`` counts every step since the start: exact only if the system's
    state comes back from the checkpoint."""
    full = run_on_tiny(tmp_path, tiny_inputs, make_spec("drop-remote", epochs=3), "full")
    run_on_tiny(tmp_path, tiny_inputs, make_spec("drop-remote", epochs=2), "resumed")
    resumed = run_on_tiny(tmp_path, tiny_inputs, make_spec("drop-remote", epochs=3),
                          "resumed")
    a, b = (json.loads((run / "summary.json").read_text()) for run in (full, resumed))
    assert a["observed_steps"] == b["observed_steps"] == 3 * a["steps_per_epoch"]
    assert a["final_train_loss"] == b["final_train_loss"]


def test_placement_decides_which_partition_a_worker_trains(tiny_inputs, tmp_path,
                                                          run_on_tiny, make_spec,
                                                          read_steps, plugin_path):
    """In odd epochs worker w trains partition 1-w: its remote rows equal an independent
    count from the other partition's schedule."""
    out = run_on_tiny(tmp_path, tiny_inputs, make_spec("swap-parts", epochs=2))
    ds = load_dataset(tiny_inputs[0])
    owner = np.asarray(load_partition(tiny_inputs[1]).book.owner)
    spec = make_spec()
    sampler = NeighborSampler(ds.indptr, ds.indices, spec.get("fanouts"))
    steps = steps_per_epoch(ds.train_idx, owner, 2, spec.batch_size)
    epochs = [json.loads(line) for line in (out / "epochs.jsonl").read_text().splitlines()]
    for worker in range(2):
        assert [e["workers"][worker]["parts"] for e in epochs] == [[worker], [1 - worker]]
        records = read_steps(out, worker)
        for epoch, part in ((0, worker), (1, 1 - worker)):
            train = worker_train_nodes(ds.train_idx, owner, part)
            seeds = epoch_seed_nodes(train, steps, spec.batch_size, spec.seed, worker, epoch)
            for step, nodes in enumerate(seeds):
                batch = sampler.sample(nodes, batch_seed(spec.seed, worker, epoch, step))
                remote = int((owner[batch.input_nodes.numpy()] != worker).sum())
                rec = next(r for r in records if (r["epoch"], r["step"]) == (epoch, step))
                assert rec["remote_rows"] == remote
        odd = [r for r in records if r["epoch"] == 1]
        assert sum(r["remote_rows"] for r in odd) > sum(r["local_rows"] for r in odd)


def test_config_checks_read_the_declarations():
    from commgnn.experiments import expand_experiments

    base = {**TINY, "experiments": [{"systems": ["rapidgnn"], "datasets": ["tiny"],
                                     "partitionings": ["metis2"]}]}
    runs = expand_experiments(base)
    assert runs[0].system_options == {"system": "rapidgnn", "n_hot": 0, "prefetch_depth": 4}
    cases = [
        ({"systems": {"rapidgnn": {"n_hot": "many"}}},
         "systems.rapidgnn.n_hot: 'many' is not of type 'integer'"),
        ({"systems": {"rapidgnn": {"bogus": 1}}}, "systems.rapidgnn: Additional properties"),
        ({"systems": {"v": {"system": "nope"}}}, "systems.v.system: unknown system 'nope'"),
        ({"experiments": [{"systems": ["warp"], "datasets": ["tiny"],
                           "partitionings": ["metis2"]}]},
         "experiments[0].systems: 'warp' is neither a registered system"),
        ({"experiments": [{"systems": ["rapidgnn"], "datasets": ["tiny"],
                           "partitionings": ["chunk3"]}]},
         "experiments[0]: system 'rapidgnn' does not train on partitioning 'chunk3' "
         "(method chunk); it accepts metis, random"),
    ]
    for change, message in cases:
        with pytest.raises(ConfigError) as info:
            expand_experiments({**base, **change})
        assert message in str(info.value)


def test_cli_validate_checks_system_options(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({**TINY, "systems": {"rapidgnn": {"prefetch_depth": -1}}}))
    proc = subprocess.run([sys.executable, "-m", "commgnn", "validate", str(path)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2
    assert "systems.rapidgnn.prefetch_depth: -1 is less than the minimum of 0" in proc.stderr
    listing = subprocess.run([sys.executable, "-m", "commgnn", "systems"],
                             capture_output=True, text=True, check=True).stdout
    assert "option prefetch_depth: integer (default 4)" in listing


def test_a_systems_epoch_work_is_inside_the_epoch_clock(tiny_inputs, tmp_path, run_on_tiny,
                                                       make_spec, plugin_path):
    out = run_on_tiny(tmp_path, tiny_inputs, make_spec("slow-start", epochs=2))
    epochs = [json.loads(line) for line in (out / "epochs.jsonl").read_text().splitlines()]
    assert all(e["time_s"] >= 0.3 for e in epochs)
    assert all(w["time_s"] >= 0.3 for e in epochs for w in e["workers"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["setup_s"] >= 0
    assert summary["total_time_s"] >= summary["setup_s"] + 0.6
