"""Ways for workers that share one GPU to talk (the device plan's ``shared`` mode): gloo
all-reduce of CUDA tensors as they are, against staging them through host memory (copy to
the CPU, gloo all-reduce, copy back); and point-to-point exchange (a ring of sends) staged
through host memory, the only way gloo's send/recv take device data.

    python benchmarks/shared_gpu_comm.py --workers 4 --mb 25 > shared_gpu_comm.json

Prints one JSON object: per path, the median and p90 seconds of ``--repeats`` timed
operations (after two warm-ups) on the slowest worker. Runs on the CPU too (``--device
cpu``: then both all-reduce paths are the same and show the harness's own cost).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from commgnn.runtime.p2p import exchange


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _time(op, device: torch.device, repeats: int) -> list[float]:
    for _ in range(2):
        op()
    times = []
    for _ in range(repeats):
        dist.barrier()
        _sync(device)
        start = time.perf_counter()
        op()
        _sync(device)
        times.append(time.perf_counter() - start)
    return times


def _worker(rank: int, world: int, port: int, device_name: str, numel: int, repeats: int,
            results) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    device = torch.device(device_name)
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=timedelta(seconds=120))
    data = torch.ones(numel, device=device)

    def direct() -> None:
        dist.all_reduce(data)

    def staged() -> None:
        host = data.cpu()
        dist.all_reduce(host)
        data.copy_(host)

    incoming = torch.empty_like(data)

    def ring() -> None:
        exchange({(rank + 1) % world: data}, {(rank - 1) % world: incoming}, via_host=True)

    out = {"allreduce_direct": _time(direct, device, repeats),
           "allreduce_host_staged": _time(staged, device, repeats),
           "p2p_ring_host_staged": _time(ring, device, repeats)}
    gathered = [None] * world
    dist.all_gather_object(gathered, out)
    if rank == 0:
        results.put(gathered)
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--mb", type=float, default=25.0, help="tensor size, MB (float32)")
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--device", default="cuda:0")
    args = parser.parse_args()
    numel = int(args.mb * 1e6 / 4)
    ctx = mp.get_context("spawn")
    results = ctx.SimpleQueue()
    port = _free_port()
    procs = [ctx.Process(target=_worker, args=(r, args.workers, port, args.device, numel,
                                               args.repeats, results))
             for r in range(args.workers)]
    for p in procs:
        p.start()
    gathered = results.get()
    for p in procs:
        p.join(timeout=60)
    report = {"workers": args.workers, "mb": args.mb, "device": args.device,
              "device_name": (torch.cuda.get_device_name(torch.device(args.device))
                              if args.device.startswith("cuda") else "cpu"),
              "torch": torch.__version__, "repeats": args.repeats}
    for path in gathered[0]:
        slowest = [max(worker[path][i] for worker in gathered) for i in range(args.repeats)]
        report[path] = {"median_s": statistics.median(slowest),
                        "p90_s": sorted(slowest)[int(0.9 * (len(slowest) - 1))]}
    print(json.dumps(report, sort_keys=True))


if __name__ == "__main__":
    main()
