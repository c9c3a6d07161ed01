"""One DistDGL trainer (DGL environment): DGL's distributed training of GraphSAGE (DGL's
``SAGEConv``) or GCN (commgnn's convolution on DGL's blocks).

Run by ``machine.py`` with DGL's client environment (``DGL_ROLE=client`` …) and
torch.distributed's (``MASTER_ADDR``, ``RANK`` …). The job (one JSON argument) names the
partition config, the model and training settings and the output directory. Per step it
writes commgnn's step record (``steps_w<rank>.jsonl``): the input rows that another
machine owns (``remote_rows``, pulled from that machine's server through DistTensor), their
feature bytes, and the sampling, fetch and compute times; per epoch its epoch record
(``epochs_w<rank>.jsonl``). Training nodes are the training nodes its machine's partition
owns (``node_split(force_even=False)``), as commgnn's ``default``; every worker runs the
step count of the largest one, a smaller one cycling through its batches. Under
``stop_at_plateau`` every trainer stops after the first evaluation that meets commgnn's
plateau rule (the all-reduced accuracies are alike on every trainer).
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import resource
import socket
import sys
import time
import traceback
from datetime import timedelta
from pathlib import Path

import dgl
import numpy as np
import torch
import torch.nn.functional as F
from dgl.distributed import rpc_client
from torch import nn

MACHINE = int(os.environ["COMMGNN_MACHINE"])


def _plateau_rule():
    """commgnn's plateau rule (``commgnn/train/plateau.py``, standard library only), loaded
    by path: this environment has DGL's torch and no commgnn."""
    path = Path(__file__).resolve().parents[2] / "train" / "plateau.py"
    spec = importlib.util.spec_from_file_location("commgnn_plateau", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PLATEAU = _plateau_rule()
# Every machine of this host shares its addresses, so DGL's choice of the local machine
# (the first server whose IP is one of this host's) would make every trainer machine 0.
rpc_client.get_local_machine_id = lambda _namebook: MACHINE


class SAGE(nn.Module):
    """GraphSAGE-mean as commgnn's ``sage``: dropout before every layer but the first,
    ReLU between layers, Glorot-initialised weights and zero biases."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int, layers: int, dropout: float):
        super().__init__()
        dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
        self.layers = nn.ModuleList(dgl.nn.SAGEConv(a, b, "mean")
                                    for a, b in itertools.pairwise(dims))
        self.dropout = nn.Dropout(dropout)
        for layer in self.layers:  # commgnn's init: Glorot (gain 1), zero bias
            nn.init.xavier_uniform_(layer.fc_self.weight)
            nn.init.xavier_uniform_(layer.fc_neigh.weight)
            nn.init.zeros_(layer.fc_self.bias)  # 'mean': the bias is fc_self's

    def forward(self, blocks, x):
        h = x
        for i, (layer, block) in enumerate(zip(self.layers, blocks, strict=True)):
            if i > 0:
                h = self.dropout(h)
            h = layer(block, h)
            if i < len(self.layers) - 1:
                h = F.relu(h)
        return h


class GCNLayer(nn.Module):
    """Kipf & Welling's convolution on a DGL block as commgnn's ``GCNConv`` computes it:
    a self-loop per destination (DGL puts a block's destinations first among its sources),
    ``norm='both'`` over the block's degrees, Glorot weight, zero bias."""

    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(in_dim, out_dim))
        self.bias = nn.Parameter(torch.zeros(out_dim))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, block, h):
        src, dst = block.edges()
        loops = torch.arange(block.num_dst_nodes(), dtype=src.dtype)
        src, dst = torch.cat([src, loops]), torch.cat([dst, loops])
        deg_in = (block.in_degrees() + 1).to(h.dtype)
        deg_out = torch.bincount(src, minlength=block.num_src_nodes()).to(h.dtype)
        weight = (deg_in.rsqrt()[dst] * deg_out.clamp(min=1).rsqrt()[src]).unsqueeze(-1)
        msg = h @ self.weight
        out = torch.zeros((block.num_dst_nodes(), msg.shape[1]), dtype=msg.dtype)
        return out.index_add_(0, dst, msg[src] * weight) + self.bias


class GCN(SAGE):
    """commgnn's ``gcn``: :class:`GCNLayer` layers, dropout and ReLU as :class:`SAGE`."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int, layers: int, dropout: float):
        nn.Module.__init__(self)
        dims = [in_dim] + [hidden] * (layers - 1) + [out_dim]
        self.layers = nn.ModuleList(GCNLayer(a, b) for a, b in itertools.pairwise(dims))
        self.dropout = nn.Dropout(dropout)


MODELS = {"sage": SAGE, "gcn": GCN}


def rendezvous(rank: int, world: int):
    """The trainers' c10d store on ``MASTER_ADDR:MASTER_PORT``, served by rank 0 on a socket
    bound to that address only (torch's own would listen on every interface)."""

    addr, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    timeout = timedelta(seconds=300)
    if rank != 0:
        return torch.distributed.TCPStore(addr, port, world, False, timeout=timeout)
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((addr, port))
    sock.listen(max(128, 2 * world))
    return torch.distributed.TCPStore(addr, port, world, True, timeout=timeout,
                                      wait_for_workers=False, master_listen_fd=sock.detach())


def remote_counts(book, input_nodes) -> tuple[int, int]:
    """(rows another machine owns, machines they come from)."""
    owners = book.nid2partid(input_nodes)
    remote = owners[owners != book.partid]
    return int(remote.numel()), int(torch.unique(remote).numel())


def evaluate(graph, model, book, mask_name: str, fanouts, batch_size: int,
             sample: np.ndarray) -> tuple[int, int]:
    """(correct, total) over this machine's nodes of the mask that are in ``sample`` (DGL
    ids of commgnn's evaluation sample of the split, the same nodes every system
    evaluates), sampled with ``fanouts`` (-1: every neighbour)."""
    nodes = dgl.distributed.node_split(graph.ndata[mask_name], book, force_even=False)
    nodes = nodes[torch.from_numpy(np.isin(nodes.numpy(), sample))]
    if len(nodes) == 0:
        return 0, 0
    loader = dgl.dataloading.DistNodeDataLoader(
        graph, nodes, dgl.dataloading.NeighborSampler(fanouts), batch_size=batch_size,
        shuffle=False, drop_last=False)
    correct = total = 0
    model.eval()
    with torch.no_grad():
        for input_nodes, seeds, blocks in loader:
            logits = model(blocks, graph.ndata["feat"][input_nodes])
            correct += int((logits.argmax(1) == graph.ndata["label"][seeds]).sum())
            total += len(seeds)
    model.train()
    return correct, total


def main() -> int:
    job = json.loads(sys.argv[1])
    started = time.perf_counter()
    dgl.distributed.initialize(job["ip_config"])
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.distributed.init_process_group("gloo", store=rendezvous(rank, world), rank=rank,
                                         world_size=world)
    graph = dgl.distributed.DistGraph("graph", part_config=job["part_config"])
    book = graph.get_partition_book()
    if book.partid != MACHINE:
        raise RuntimeError(f"trainer of machine {MACHINE} got partition {book.partid}")
    train_nodes = dgl.distributed.node_split(graph.ndata["train_mask"], book,
                                             force_even=False)
    torch.manual_seed(job["seed"])
    dim = graph.ndata["feat"].shape[1]
    fanouts = list(job["fanouts"])
    samples = {split: np.load(path) for split, path in job["eval_samples"].items()}
    model = MODELS[job["model"]](dim, job["hidden"], job["num_classes"], len(fanouts),
                                 job["dropout"])
    ddp = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=job["lr"],
                                 weight_decay=job["weight_decay"])
    torch.manual_seed(job["seed"] * 1000 + rank + 1)  # dropout: a stream per worker
    gradient_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    # what each worker sends in a ring all-reduce of the gradients (commgnn's count)
    ring_bytes = -(-2 * (world - 1) * gradient_bytes // world) if world > 1 else 0
    batch = int(job["batch_size"])
    loader = dgl.dataloading.DistNodeDataLoader(
        graph, train_nodes, dgl.dataloading.NeighborSampler(fanouts), batch_size=batch,
        shuffle=True, drop_last=False)
    steps = torch.tensor([-(-len(train_nodes) // batch)])
    torch.distributed.all_reduce(steps, op=torch.distributed.ReduceOp.MAX)
    steps = int(steps)
    out = Path(job["out"])
    setup_s = time.perf_counter() - started
    with open(out / f"steps_w{rank}.jsonl", "w") as step_file, \
            open(out / f"epochs_w{rank}.jsonl", "w") as epoch_file:
        evaluated_val: list[float] = []
        for epoch in range(job["epochs"]):
            batches = iter(loader)
            totals = {"remote_rows": 0, "remote_bytes": 0, "remote_rpcs": 0, "local_rows": 0,
                      "sample_s": 0.0, "fetch_wait_s": 0.0, "compute_s": 0.0,
                      "loss_sum": 0.0, "correct": 0, "seen": 0}
            epoch_start = time.perf_counter()
            for step in range(steps):
                t0 = time.perf_counter()
                try:
                    input_nodes, seeds, blocks = next(batches)
                except StopIteration:  # a smaller worker cycles its batches
                    batches = iter(loader)
                    input_nodes, seeds, blocks = next(batches)
                t1 = time.perf_counter()
                x = graph.ndata["feat"][input_nodes]
                y = graph.ndata["label"][seeds]
                t2 = time.perf_counter()
                logits = ddp(blocks, x)
                loss = F.cross_entropy(logits, y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                t3 = time.perf_counter()
                remote, owners = remote_counts(book, input_nodes)
                correct = int((logits.argmax(1) == y).sum())
                record = {"epoch": epoch, "step": step, "worker": rank, "batch_size": batch,
                          "remote_rows": remote, "remote_bytes": remote * dim * 4,
                          "remote_rpcs": owners, "local_rows": len(input_nodes) - remote,
                          "sample_s": t1 - t0, "fetch_wait_s": t2 - t1,
                          "compute_s": t3 - t2, "step_s": t3 - t0, "loss": float(loss),
                          "acc": correct / max(1, len(seeds))}
                step_file.write(json.dumps(record) + "\n")
                step_file.flush()  # progress the launcher watches
                for key in ("remote_rows", "remote_bytes", "remote_rpcs", "local_rows",
                            "sample_s", "fetch_wait_s", "compute_s"):
                    totals[key] += record[key]
                totals["loss_sum"] += float(loss)
                totals["correct"] += correct
                totals["seen"] += len(seeds)
            epoch_time = time.perf_counter() - epoch_start
            rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            row = {"epoch": epoch, "worker": rank, "steps": steps, "time_s": epoch_time,
                   "allreduce_bytes": steps * ring_bytes, "setup_s": setup_s,
                   "peak_mem_bytes": rss, "peak_rss_bytes": rss, **totals}
            last = epoch == job["epochs"] - 1
            every = int(job["eval_every"])
            if last or (every and (epoch + 1) % every == 0):
                counts = []
                for split in ("val", "test"):
                    counts += evaluate(graph, model, book, f"{split}_mask",
                                       job["eval_fanouts"], batch, samples[split])
                summed = torch.tensor(counts, dtype=torch.float64)
                torch.distributed.all_reduce(summed)
                row["val_acc"] = float(summed[0] / max(1.0, float(summed[1])))
                row["test_acc"] = float(summed[2] / max(1.0, float(summed[3])))
                evaluated_val.append(row["val_acc"])  # all-reduced: alike on every worker
            epoch_file.write(json.dumps(row) + "\n")
            step_file.flush()
            epoch_file.flush()
            gain = job.get("stop_at_plateau")
            if gain is not None and "val_acc" in row and PLATEAU.at_plateau(evaluated_val, gain):
                break  # commgnn's rule (training.stop_at_plateau), as its own trainer stops
    torch.distributed.barrier()
    return 0


if __name__ == "__main__":
    try:
        code = main()
    except BaseException:  # DGL's atexit handler would wait in a barrier for the peers
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)
    sys.exit(code)
