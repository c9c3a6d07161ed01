"""``default`` with the global schedule (DGL's distributed examples; HopGNN's and Grappa's
baseline): exact counts from an independent recomputation of the schedule."""

from __future__ import annotations

import json

import numpy as np
import pytest

from commgnn.data.store import load_dataset
from commgnn.partition import load_partition
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.schedule import global_epoch_seed_nodes
from commgnn.sampling.seeds import batch_seed

pytestmark = pytest.mark.timeout(300)


def test_global_schedule_run_counts(tiny_inputs, tmp_path, run_on_tiny, make_spec,
                                    read_steps):
    spec = make_spec(system_options={"schedule": "global"})
    out = run_on_tiny(tmp_path, tiny_inputs, spec)
    ds = load_dataset(tiny_inputs[0])
    owner = np.asarray(load_partition(tiny_inputs[1]).book.owner)
    sampler = NeighborSampler(ds.indptr, ds.indices, spec.get("fanouts"))
    remote_seeds = total_seeds = 0
    for worker in range(2):
        records = read_steps(out, worker)
        for epoch in range(2):
            seeds = global_epoch_seed_nodes(ds.train_idx, 2, spec.batch_size, spec.seed,
                                            worker, epoch)
            steps = [r for r in records if r["epoch"] == epoch]
            assert len(steps) == len(seeds)
            for rec, nodes in zip(steps, seeds, strict=True):
                batch = sampler.sample(nodes, batch_seed(spec.seed, worker, epoch, rec["step"]))
                remote = owner[batch.input_nodes.numpy()] != worker
                assert rec["remote_rows"] == int(remote.sum())
                assert rec["local_rows"] == int((~remote).sum())
                assert rec["batch_size"] == len(nodes)
                remote_seeds += int((owner[nodes] != worker).sum())
                total_seeds += len(nodes)
    assert 0.3 < remote_seeds / total_seeds < 0.7  # ~1 - 1/P of the seeds are elsewhere
    summary = json.loads((out / "summary.json").read_text())
    assert summary["system_options"] == {"system": "default", "schedule": "global",
                                         "sampling": "distributed"}
