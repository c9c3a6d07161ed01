"""One DistDGL machine on this host (DGL environment): its graph server and its trainer.

Started by :mod:`commgnn.systems.distdgl.system` inside a mount namespace of its own (``unshare
--mount``): it mounts a private ``/dev/shm`` first, because DGL names the shared memory
its server hands to the trainer after the graph, the same on every machine. Then it starts
the server (DGL's ``initialize`` in the server role) and the trainer, and waits: when
the trainer exits the server is shut down by DGL (client 0 tells every server); when
either fails the other is killed and this exits non-zero, naming which.

    python machine.py JOB_JSON   (JOB: machine, machines, ip_config, part_config, out,
                                  master_port, shm_mb, trainer job)
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).parent
PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a child: be killed when this machine's process dies (never left behind)."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


#: What a trainer's log ends with when it failed because a peer went away: such a
#: failure is a consequence, and the launcher names the machine that caused it instead.
PEER_LOST = ("Connection reset by peer", "Connection closed by peer", "Broken pipe",
             "Socket closed")


def failed(out: Path, machine: int, message: str, consequence: bool = False) -> int:
    """Record when and why this machine failed; the launcher names the earliest failure
    that is not a ``consequence`` of another machine's (a lost peer connection)."""
    print(f"machine {machine}: {message}", file=sys.stderr)
    (out / f"failed_{machine}.json").write_text(json.dumps(
        {"time": time.time(), "message": message, "consequence": consequence}))
    return 1


def lost_a_peer(log: Path) -> bool:
    """Whether the end of a trainer's log says it failed on a lost peer connection."""
    try:
        with open(log, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 4096))
            tail = f.read().decode(errors="replace")
    except OSError:
        return False
    return any(marker in tail for marker in PEER_LOST)


def main() -> int:
    job = json.loads(sys.argv[1])
    machine, out = int(job["machine"]), Path(job["out"])
    die_with_parent()  # unshare exec'd this process: the death signal of commgnn's run
    if job.get("private_shm", True):
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={job['shm_mb']}m",
                               "commgnn-dgl", "/dev/shm"], capture_output=True, text=True)
        if done.returncode != 0:
            return failed(out, machine, f"cannot mount a private /dev/shm: "
                                        f"{done.stderr.strip()}")
    common = {**os.environ, "PYTHONUNBUFFERED": "1", "DGL_DIST_MODE": "distributed",
              "DGL_IP_CONFIG": job["ip_config"],
              "DGL_NUM_SERVER": "1", "DGL_NUM_CLIENT": str(job["machines"]),
              "DGL_CONF_PATH": job["part_config"], "DGL_GRAPH_FORMAT": "csc",
              "OMP_NUM_THREADS": str(job["threads"])}
    server_env = {**common, "DGL_ROLE": "server", "DGL_SERVER_ID": str(machine)}
    trainer_env = {**common, "DGL_ROLE": "client", "DGL_NUM_SAMPLER": "0",
                   "COMMGNN_MACHINE": str(machine), "MASTER_ADDR": "127.0.0.1",
                   "GLOO_SOCKET_IFNAME": "lo",
                   "MASTER_PORT": str(job["master_port"]), "RANK": str(machine),
                   "WORLD_SIZE": str(job["machines"])}
    with open(out / f"server_{machine}.log", "w") as server_log, \
            open(out / f"trainer_{machine}.log", "w") as trainer_log:
        server = subprocess.Popen(
            [sys.executable, "-c", "import sys, dgl; dgl.distributed.initialize(sys.argv[1])",
             job["ip_config"]], env=server_env, stdout=server_log, stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent)
        trainer = subprocess.Popen([sys.executable, str(HERE / "trainer.py"),
                                    json.dumps(job["trainer"])], env=trainer_env,
                                   stdout=trainer_log, stderr=subprocess.STDOUT,
                                   preexec_fn=die_with_parent)
        while True:
            code = trainer.poll()
            if code is not None:
                break
            if server.poll() not in (None, 0):  # 0: shut down by client 0 at the end
                trainer.kill()
                trainer.wait()
                return failed(out, machine, f"its graph server exited with "
                                            f"{server.returncode} (see "
                                            f"{out / f'server_{machine}.log'})")
            time.sleep(0.02)  # the failure's time decides which machine is named
        if code != 0:
            server.kill()
            server.wait()
            log = out / f"trainer_{machine}.log"
            return failed(out, machine, f"its trainer exited with {code} (see {log})",
                          consequence=code > 0 and lost_a_peer(log))
        try:
            server.wait(timeout=60)  # client 0 shuts every server down
        except subprocess.TimeoutExpired:
            server.kill()
            return failed(out, machine, "its graph server did not stop")
    return 0


if __name__ == "__main__":
    sys.exit(main())
