"""The same worker code path under torchrun as under the local spawner."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from commgnn.runtime.launcher import external_env, slurm_port

pytestmark = pytest.mark.timeout(300)


def test_torchrun_matches_local_spawn(tiny_inputs, tmp_path, make_spec, run_on_tiny,
                                      read_steps):
    spec = make_spec(epochs=1)
    local = run_on_tiny(tmp_path, tiny_inputs, spec, name="local")
    out = tmp_path / "torchrun"
    dataset, partition = tiny_inputs
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
         "2", "-m", "commgnn", "train", "--spec", spec.to_json(), "--dataset", str(dataset),
         "--partition", str(partition), "--out", str(out), "--checkpoints",
         str(tmp_path / "torchrun-ckpt")],
        capture_output=True, text=True, check=False, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["launcher"] == "torchrun"
    keys = ("epoch", "step", "remote_rows", "remote_rpcs", "local_rows", "loss")
    for worker in range(2):
        assert [[r[k] for k in keys] for r in read_steps(out, worker)] == \
            [[r[k] for k in keys] for r in read_steps(local, worker)]


def _srun_task(monkeypatch, **slurm: str) -> None:
    """This process as an srun task: no torchrun variables, the given SLURM ones."""
    for key in ("TORCHELASTIC_RUN_ID", "RANK", "WORLD_SIZE", "MASTER_PORT"):
        monkeypatch.delenv(key, raising=False)
    for key, value in slurm.items():
        monkeypatch.setenv(key, value)


def test_srun_environment_is_recognised(monkeypatch):
    _srun_task(monkeypatch, SLURM_PROCID="3", SLURM_NTASKS="4", SLURM_LOCALID="1",
               MASTER_ADDR="node17", MASTER_PORT="29600")
    env = external_env()
    assert (env.rank, env.world_size, env.local_rank, env.launcher) == (3, 4, 1, "srun")
    assert (env.master_addr, env.master_port, env.rpc_port) == ("node17", 29600, 29601)


def test_slurm_port_is_shared_by_a_step_and_differs_between_steps(monkeypatch):
    ports = {slurm_port(job, step) for job in range(100, 140) for step in range(3)}
    assert len(ports) == 120 and all(20000 <= p < 59999 for p in ports)
    _srun_task(monkeypatch, SLURM_PROCID="1", SLURM_NTASKS="2", SLURM_JOB_ID="123",
               SLURM_STEP_ID="4", MASTER_ADDR="n1")
    assert external_env().master_port == slurm_port(123, 4)
    assert external_env(master_port=31000).master_port == 31000  # training.master_port
    monkeypatch.setenv("MASTER_PORT", "29600")
    assert external_env(master_port=31000).master_port == 29600


def test_no_launcher_environment_means_local(monkeypatch):
    for key in ("TORCHELASTIC_RUN_ID", "RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS"):
        monkeypatch.delenv(key, raising=False)
    assert external_env() is None
