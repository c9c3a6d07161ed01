"""Fault injection: every fault ends the whole run in under 30 s with one line naming the
worker that failed first and how, and leaves no process behind.

Spawned locally (the launcher judges): kill -9 of the store-hosting worker, SIGSTOP of a
worker, a full disk under the run and checkpoint directories, a corrupt presampled block.
As srun tasks (no launcher: the workers watch each other through the c10d store): a dead
RPC peer, and a stopped worker that serves the store. Heartbeats are shortened through
``COMMGNN_HEARTBEAT_S`` / ``COMMGNN_HEARTBEAT_TIMEOUT_S``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from polling import wait_for

from commgnn.core.errors import ConfigError, WorkerFailed
from commgnn.runtime.heartbeat import START_TIMEOUTS, ControlDir, Failure, Judge, cause_of, raised
from commgnn.runtime.launcher import free_ports
from commgnn.runtime.prefetch import Prefetcher, PrefetchError
from commgnn.sampling.blockio import BlockFileError, BlockReader
from commgnn.sampling.presample import blocks_file

pytestmark = pytest.mark.timeout(120)

#: Every fault must end the run within this many seconds.
BOUND_S = 30
HEARTBEAT = {"COMMGNN_HEARTBEAT_S": "0.5", "COMMGNN_HEARTBEAT_TIMEOUT_S": "3"}
HOST = socket.gethostname()


# -- helpers ------------------------------------------------------------------------------
def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def has_steps(staging: Path, worker: int) -> bool:
    steps = staging / f"steps_w{worker}.jsonl"
    return steps.exists() and steps.stat().st_size > 0


def train_command(spec, inputs, out: Path, ckpt: Path) -> list[str]:
    dataset, partition = inputs
    return [sys.executable, "-m", "commgnn", "train", "--spec", spec.to_json(), "--dataset",
            str(dataset), "--partition", str(partition), "--out", str(out),
            "--checkpoints", str(ckpt)]


def start_spawned(spec, inputs, out: Path, ckpt: Path) -> tuple[subprocess.Popen, list[int]]:
    """``commgnn train`` with spawned workers, once both train: (process, worker pids)."""
    proc = subprocess.Popen(train_command(spec, inputs, out, ckpt), text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, **HEARTBEAT})
    staging = out.with_name(out.name + ".partial")
    wait_for(lambda: (has_steps(staging, 0) and has_steps(staging, 1)) or proc.poll() is not None,
             90, "training steps")
    assert proc.poll() is None, proc.stderr.read()[-3000:]
    pids = json.loads((staging / "workers.json").read_text())["worker_pids"]
    return proc, pids


def finish(proc: subprocess.Popen, since: float) -> tuple[str, float]:
    """The error line of a failed command and the seconds from ``since`` to its exit."""
    try:
        _, stderr = proc.communicate(timeout=BOUND_S + 5)
    finally:
        if proc.poll() is None:
            proc.kill()
    took = time.monotonic() - since
    assert proc.returncode == 2, stderr[-3000:]
    errors = [ln for ln in stderr.splitlines() if "error:" in ln]
    assert errors, stderr[-3000:]
    return errors[-1], took


def assert_gone(pids: list[int]) -> None:
    wait_for(lambda: not any(alive(p) for p in pids), 5, "workers to be gone")


def long_spec(make_spec, **training):
    return make_spec(epochs=500, eval_every=0, **{"checkpoint": False, **training})


# -- spawned locally ----------------------------------------------------------------------
def test_killed_store_host_is_named(tiny_inputs, tmp_path, make_spec):
    proc, pids = start_spawned(long_spec(make_spec), tiny_inputs, tmp_path / "run",
                               tmp_path / "ckpt")
    shared = [f.path for f in psutil.Process(pids[1]).open_files()
              if f.path.startswith("/dev/shm/commgnn")]  # the run's NIC clocks
    assert shared
    os.kill(pids[0], signal.SIGKILL)
    line, took = finish(proc, time.monotonic())
    print(f"kill -9 worker 0: {took:.1f} s")
    assert line == (f"commgnn train: error: worker 0 (pid {pids[0]}) was killed by signal "
                    "SIGKILL; stopped the other workers")
    assert took < BOUND_S
    assert_gone(pids)
    assert not (tmp_path / "run").exists(), "a failed run must not look complete"
    assert not any(Path(path).exists() for path in shared), "left behind in /dev/shm"


def test_stopped_worker_is_named_by_its_heartbeat(tiny_inputs, tmp_path, make_spec):
    proc, pids = start_spawned(long_spec(make_spec), tiny_inputs, tmp_path / "run",
                               tmp_path / "ckpt")
    os.kill(pids[1], signal.SIGSTOP)
    line, took = finish(proc, time.monotonic())
    print(f"SIGSTOP worker 1: {took:.1f} s")
    # the signal is named where the launcher is the worker's parent (COMMGNN_WORKER_START=
    # spawn); a forked worker's parent is the fork server, so only its stopped state shows
    assert re.fullmatch(rf"commgnn train: error: worker 1 \(pid {pids[1]}\) was stopped"
                        r"( \(SIGSTOP\))?: no heartbeat for (\d+\.\d) s; stopped the other "
                        r"workers", line), line
    assert 3 <= float(re.search(r"for ([\d.]+) s", line).group(1)) < 6
    assert took < BOUND_S
    assert_gone(pids)


def fill(mount: Path) -> None:
    """Take every free byte of ``mount``."""
    with open(mount / "filler", "wb", buffering=0) as handle:  # nothing left to flush
        try:
            while True:
                handle.write(b"\0" * 65536)
        except OSError:
            pass


def test_full_disk_names_the_worker_and_the_file(tiny_inputs, small_disk, make_spec):
    spec = long_spec(make_spec, checkpoint=True)
    proc, pids = start_spawned(spec, tiny_inputs, small_disk / "run", small_disk / "ckpt")
    fill(small_disk)
    line, took = finish(proc, time.monotonic())
    print(f"full disk: {took:.1f} s")
    match = re.fullmatch(r"commgnn train: error: worker ([01]) raised OSError: \[Errno 28\] "
                         rf"No space left on device: '{re.escape(str(small_disk))}/[^']+'; "
                         "stopped the other workers", line)
    assert match, line
    assert took < BOUND_S
    assert_gone(pids)
    assert not (small_disk / "ckpt" / ".last.pt.tmp").exists()


def corrupt_record(path: Path, position: int) -> None:
    """Flip one byte inside record ``position``'s payload (its checksum no longer holds)."""
    with BlockReader(path) as reader:
        start, end = reader.record_span(position)
    data = bytearray(path.read_bytes())
    data[(start + end) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def test_corrupt_block_file_is_named_through_the_prefetcher(tiny_inputs, tiny_presampled,
                                                            tmp_path, make_spec, run_on_tiny):
    blocks = tmp_path / "blocks"
    shutil.copytree(tiny_presampled, blocks)
    bad = blocks / blocks_file(1, 0)
    corrupt_record(bad, 1)
    start = time.monotonic()
    with pytest.raises(WorkerFailed) as info:
        run_on_tiny(tmp_path, tiny_inputs, make_spec(system="rapidgnn", epochs=1),
                    presample=blocks)
    took = time.monotonic() - start
    print(f"corrupt block file: {took:.1f} s (whole run)")
    assert str(info.value) == (f"worker 1 raised BlockFileError: {bad}: record 1: checksum "
                               "mismatch (file is corrupt); stopped the other workers")
    assert "BlockFileError" in str(info.value.__cause__)  # the worker's traceback
    assert took < BOUND_S
    pids = json.loads((tmp_path / "run.partial" / "workers.json").read_text())["worker_pids"]
    assert_gone(pids)


# -- as srun tasks: the workers watch each other ------------------------------------------
def srun_env(rank: int, port: int, addr: str = "127.0.0.1") -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TORCHELASTIC_", "SLURM_")) and k not in
           ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    return {**env, **HEARTBEAT, "SLURM_PROCID": str(rank), "SLURM_NTASKS": "2",
            "SLURM_LOCALID": str(rank), "MASTER_ADDR": addr, "MASTER_PORT": str(port)}


def start_tasks(spec, inputs, out: Path, ckpt: Path, addr: str = "127.0.0.1"
                ) -> tuple[list[subprocess.Popen], int]:
    """Two ``commgnn train`` tasks as srun starts them, once both train."""
    port = free_ports(addr, 1)[0]
    tasks = [subprocess.Popen(train_command(spec, inputs, out, ckpt), text=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              env=srun_env(rank, port, addr)) for rank in range(2)]
    staging = out.with_name(out.name + ".partial")
    try:
        wait_for(lambda: (has_steps(staging, 0) and has_steps(staging, 1))
                 or any(t.poll() is not None for t in tasks), 90, "training steps")
        assert all(t.poll() is None for t in tasks), tasks[0].stderr.read()[-3000:]
    except BaseException:
        for task in tasks:
            task.kill()
        raise
    return tasks, port


def test_dead_rpc_peer_is_named_by_the_survivor(tiny_inputs, tmp_path, make_spec):
    tasks, port = start_tasks(long_spec(make_spec), tiny_inputs, tmp_path / "run",
                              tmp_path / "ckpt")
    clocks = Path(f"/dev/shm/commgnn-nic-127.0.0.1-{port}-{port + 1}")
    assert clocks.exists()
    dead = tasks[1].pid
    tasks[1].kill()
    tasks[1].wait()  # srun reaps it
    line, took = finish(tasks[0], time.monotonic())
    print(f"dead RPC peer (srun): {took:.1f} s")
    assert re.fullmatch(rf"commgnn(?: train)?: error: worker 1 \(pid {dead} on {HOST}\) "
                        r"died: no heartbeat for \d+\.\d s", line), line
    assert took < BOUND_S
    assert_gone([tasks[0].pid, dead])
    assert not clocks.exists(), "the survivor (local rank 0) leaves its host's NIC clocks"


def test_stopped_store_host_is_named_by_its_peer(tiny_inputs, tmp_path, make_spec):
    tasks, port = start_tasks(long_spec(make_spec), tiny_inputs, tmp_path / "run",
                              tmp_path / "ckpt")
    try:
        os.kill(tasks[0].pid, signal.SIGSTOP)
        line, took = finish(tasks[1], time.monotonic())
    finally:
        tasks[0].kill()  # srun --kill-on-bad-exit
        tasks[0].wait()
    print(f"SIGSTOP of the store host (srun): {took:.1f} s")
    assert re.fullmatch(rf"commgnn: error: worker 0 \(pid {tasks[0].pid} on {HOST}\) was "
                        r"stopped: no heartbeat for \d+\.\d s; it serves the rendezvous store "
                        rf"at 127\.0\.0\.1:{port}", line), line
    assert took < BOUND_S
    assert_gone([t.pid for t in tasks])


def test_stopped_worker_under_torchrun_is_named_and_the_run_ends(tiny_inputs, tmp_path,
                                                                 make_spec):
    """torchrun's agent serves the store; a peer names the stopped worker and kills it
    (the agent's SIGTERM would wait 30 s for a stopped process)."""
    cmd = train_command(long_spec(make_spec), tiny_inputs, tmp_path / "run", tmp_path / "ck")
    agent = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--standalone",
                              "--nproc_per_node", "2", *cmd[1:]], text=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env={**os.environ, **HEARTBEAT})
    try:
        wait_for(lambda: has_steps(tmp_path / "run.partial", 1) or agent.poll() is not None,
                 90, "training steps")
        assert agent.poll() is None, agent.stderr.read()[-3000:]
        workers = {int(p.environ()["RANK"]): p.pid
                   for p in psutil.Process(agent.pid).children(recursive=True)
                   if "RANK" in p.environ()}
        os.kill(workers[0], signal.SIGSTOP)
        start = time.monotonic()
        _, stderr = agent.communicate(timeout=BOUND_S + 5)
    finally:
        if agent.poll() is None:
            agent.kill()
    took = time.monotonic() - start
    print(f"SIGSTOP of worker 0 (torchrun): {took:.1f} s")
    assert re.search(rf"commgnn: error: worker 0 \(pid {workers[0]} on {HOST}\) was stopped: "
                     r"no heartbeat for \d+\.\d s\n", stderr), stderr[-3000:]
    assert agent.returncode != 0 and took < BOUND_S
    assert_gone(list(workers.values()))


# -- the pieces -----------------------------------------------------------------------------
@pytest.fixture
def stopped_and_busy():
    """Two child processes: one stopped (SIGSTOP), one spinning on the CPU."""
    stopped = subprocess.Popen(["sleep", "60"])
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    os.kill(stopped.pid, signal.SIGSTOP)
    yield stopped.pid, busy.pid
    for proc in (stopped, busy):
        proc.kill()
        proc.wait()


def age(control: ControlDir, rank: int, seconds: float) -> None:
    control.beat(rank)
    then = time.time() - seconds
    os.utime(control.path / f"beat_w{rank}", (then, then))


def judged(judge: Judge, codes: list[int | None]) -> Failure | None:
    judge.failure(codes)  # the first look samples each silent process's CPU time
    time.sleep(0.3)
    return judge.failure(codes)


def test_the_earliest_failure_wins_not_the_first_noticed(tmp_path, stopped_and_busy):
    stopped, busy = stopped_and_busy
    control = ControlDir(tmp_path)
    age(control, 0, 0)
    age(control, 1, 0)
    age(control, 2, 5)  # stopped 5 s ago: below the timeout, noticed only as a suspect
    control.record(Failure(0, time.time() - 1, "worker 0 raised RuntimeError: eof"))
    judge = Judge(control, [11, busy, stopped], timeout=10, suspect_after=2)
    found = judged(judge, [1, None, None])
    assert found.rank == 2
    assert re.fullmatch(rf"worker 2 \(pid {stopped}\) was stopped \(SIGSTOP\): no heartbeat "
                        r"for 5\.\d s", found.message), found.message
    control.record(Failure(1, time.time() - 9, "worker 1 raised BlockFileError: x"))
    assert judge.failure([1, 1, None]).rank == 1


def test_a_busy_worker_is_not_hung(tmp_path, stopped_and_busy):
    """Native code holding the GIL starves the heartbeat thread; the CPU time it uses
    tells it from a stopped or hung worker (failed after BUSY_TIMEOUTS timeouts)."""
    stopped, busy = stopped_and_busy
    control = ControlDir(tmp_path)
    age(control, 0, 5)
    age(control, 1, 4)
    found = judged(Judge(control, [busy, stopped], timeout=2, suspect_after=1), [None] * 2)
    assert found.rank == 1 and "was stopped (SIGSTOP)" in found.message
    age(control, 0, 13)
    found = judged(Judge(control, [busy], timeout=2, suspect_after=1), [None])
    assert re.fullmatch(rf"worker 0 \(pid {busy}\) is unresponsive \(busy\): no heartbeat "
                        r"for 13\.\d s", found.message), found.message


def test_a_worker_hung_before_its_first_heartbeat_is_named(tmp_path):
    """A worker that never beat (hung while it started, no CPU) is not waited for for
    ever: it counts as silent since its launch after START_TIMEOUTS timeouts."""
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        control = ControlDir(tmp_path)
        age(control, 0, 0)
        judge = Judge(control, [11, sleeper.pid], timeout=2, suspect_after=1)
        assert judged(judge, [None, None]) is None  # still starting
        judge.started -= START_TIMEOUTS * 2 - 0.5  # launched just under 3 timeouts ago
        assert judged(judge, [None, None]) is None
        judge.started -= 1
        found = judged(judge, [None, None])
        assert re.fullmatch(rf"worker 1 \(pid {sleeper.pid}\) is unresponsive: no heartbeat "
                            r"since it started \d+\.\d s ago", found.message), found.message
        assert found.silent_pid == sleeper.pid
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_dead_child_counts_at_its_last_heartbeat(tmp_path):
    control = ControlDir(tmp_path)
    control.beat(1)
    os.utime(tmp_path / "beat_w1", (time.time() - 1, time.time() - 1))
    control.record(Failure(0, time.time(), "worker 0 raised RuntimeError: eof"))
    found = Judge(control, [11, 22], timeout=10, suspect_after=2).failure([1, -9])
    assert found.message == "worker 1 (pid 22) was killed by signal SIGKILL"


def test_a_prefetchers_failure_is_reported_by_its_cause():
    def produce(i: int) -> int:
        raise BlockFileError("/b/w0_e0.blocks: truncated")

    with Prefetcher(produce, 3, depth=1, name="demo") as pre, \
            pytest.raises(PrefetchError) as info:
        pre.get()
    assert str(info.value) == ("demo: producing item 0 failed: BlockFileError: "
                               "/b/w0_e0.blocks: truncated")
    assert isinstance(cause_of(info.value), BlockFileError)
    assert raised(0, info.value) == "worker 0 raised BlockFileError: /b/w0_e0.blocks: truncated"
    wrapped = RuntimeError("building the cache failed")
    wrapped.__cause__ = OSError(28, "No space left on device", "/d/x")
    assert raised(3, wrapped) == ("worker 3 raised OSError: [Errno 28] No space left on "
                                  "device: '/d/x'")


def test_bad_heartbeat_settings_fail_before_any_worker(monkeypatch):
    from commgnn.runtime.launcher import launch

    monkeypatch.setenv("COMMGNN_HEARTBEAT_TIMEOUT_S", "0.1")
    with pytest.raises(ConfigError, match=r"COMMGNN_HEARTBEAT_TIMEOUT_S=0\.1: shorter than"):
        launch(print, (), 2)


def test_a_killed_launchers_control_directory_is_swept(tmp_path):
    """A launcher killed with SIGKILL cannot remove its control directory; the next
    launcher removes every one whose launcher is gone, and no other."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale, live, foreign = (tmp_path / "commgnn-ctl-a", tmp_path / "commgnn-ctl-b",
                            tmp_path / "commgnn-ctl-c")
    for path, pid in ((stale, gone.pid), (live, os.getpid())):
        path.mkdir()
        (path / "launcher.pid").write_text(str(pid))
        (path / "beat_w0").touch()
    foreign.mkdir()  # no launcher recorded (being created): left alone
    ControlDir.sweep(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["commgnn-ctl-b", "commgnn-ctl-c"]
    created = ControlDir.create()
    try:
        assert (created.path / "launcher.pid").read_text() == str(os.getpid())
    finally:
        created.remove()
