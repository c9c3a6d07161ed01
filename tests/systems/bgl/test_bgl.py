"""BGL-style baseline: the FIFO cache by hand, exact counts on real processes against an
independent replay, determinism, and ``cache_rows: 0`` == ``default``."""

from __future__ import annotations

import json
from collections import deque

import numpy as np
import pytest
import torch

from commgnn.data.store import load_dataset
from commgnn.partition import load_partition
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.schedule import epoch_seed_nodes, steps_per_epoch, worker_train_nodes
from commgnn.sampling.seeds import batch_seed
from commgnn.systems.bgl.system import BGLSystem, FifoFeatureCache

pytestmark = pytest.mark.timeout(300)
EPOCHS = 2
CACHE_ROWS = 60  # a fraction of a worker's remote nodes: the FIFO rule evicts
COUNT_KEYS = ("epoch", "step", "remote_rpcs", "remote_rows", "remote_bytes", "local_rows",
              "cache_hits", "cache_misses", "fifo_evictions", "sampling_rpcs",
              "sampling_rows", "sampling_bytes", "allreduce_bytes", "allreduce_messages")


def _rows(nodes: list[int]) -> torch.Tensor:
    """Row of node ``n``: ``[n, -n]`` (so a gathered row names its node)."""
    ids = torch.tensor(nodes, dtype=torch.float32)
    return torch.stack([ids, -ids], dim=1)


def _step(cache: FifoFeatureCache, nodes: list[int]) -> tuple[list[int], list[int], int]:
    """One batch through the cache: (hits, misses, evictions); checks the hit rows."""
    request = torch.tensor(nodes, dtype=torch.int64)
    slots, hit = cache.lookup(request)
    hits, misses = request[hit].tolist(), request[~hit].tolist()
    assert torch.equal(cache.gather(slots[hit]), _rows(hits))
    return hits, misses, cache.insert(torch.tensor(misses, dtype=torch.int64), _rows(misses))


def test_fifo_cache_by_hand():
    cache = FifoFeatureCache(num_nodes=10, capacity=3, feature_dim=2)
    assert _step(cache, [1, 2]) == ([], [1, 2], 0)
    assert cache.fifo_order().tolist() == [1, 2]
    assert _step(cache, [1, 3]) == ([1], [3], 0)
    assert cache.fifo_order().tolist() == [1, 2, 3]
    # 1 was just hit but is still the oldest: FIFO evicts it (LRU would evict 2)
    assert _step(cache, [1, 4]) == ([1], [4], 1)
    assert cache.fifo_order().tolist() == [2, 3, 4]
    assert _step(cache, [1, 2]) == ([2], [1], 1)  # under LRU 1 would hit, 2 miss
    assert cache.fifo_order().tolist() == [3, 4, 1]
    assert _step(cache, [3, 0, 4]) == ([3, 4], [0], 1)
    assert cache.fifo_order().tolist() == [4, 1, 0]
    # more misses than capacity at once: only the last three are stored
    assert _step(cache, [5, 6, 7, 8, 9]) == ([], [5, 6, 7, 8, 9], 3)
    assert cache.fifo_order().tolist() == [7, 8, 9]
    assert (cache.size, cache.evictions, cache.nbytes) == (3, 6, 3 * 2 * 4)
    assert _step(cache, [9, 5]) == ([9], [5], 1)
    assert cache.fifo_order().tolist() == [8, 9, 5]

    # the FIFO order is the whole state: a cache refilled in that order behaves the same
    again = FifoFeatureCache(num_nodes=10, capacity=3, feature_dim=2)
    order = cache.fifo_order()
    assert again.insert(order, _rows(order.tolist())) == 0
    for batch, want in (([8, 1], ([8], [1], 1)), ([9, 2, 3], ([9], [2, 3], 2)),
                        ([5, 2], ([2], [5], 1))):
        assert _step(again, batch) == _step(cache, batch) == want
    assert again.fifo_order().tolist() == cache.fifo_order().tolist() == [2, 3, 5]

    with pytest.raises(ValueError, match="already cached"):
        cache.insert(cache.fifo_order()[:1], _rows([0]))
    with pytest.raises(ValueError, match="not distinct"):
        cache.insert(torch.tensor([0, 0]), _rows([0, 0]))

    empty = FifoFeatureCache(num_nodes=10, capacity=0, feature_dim=2)
    assert _step(empty, [1, 2]) == ([], [1, 2], 0)
    assert _step(empty, [1, 2]) == ([], [1, 2], 0)
    assert (empty.size, empty.evictions, empty.fifo_order().numel()) == (0, 0, 0)


def test_options_are_declared():
    assert BGLSystem.resolve_options({}) == {"schedule": "owned", "sampling": "distributed",
                                             "prefetch_depth": 4, "cache_rows": 0}
    from commgnn.core.config import ConfigError

    with pytest.raises(ConfigError, match="prefetch_depth"):
        BGLSystem.resolve_options({"prefetch_depth": 0})
    with pytest.raises(ConfigError, match="cache_rows"):
        BGLSystem.resolve_options({"cache_rows": -1})


# -- real runs ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def default_run(tiny_inputs, tmp_path_factory, run_on_tiny, make_spec):
    return run_on_tiny(tmp_path_factory.mktemp("default"), tiny_inputs,
                       make_spec(epochs=EPOCHS), name="default")


@pytest.fixture(scope="module")
def bgl_run(tiny_inputs, tmp_path_factory, run_on_tiny, make_spec):
    spec = make_spec(system="bgl", epochs=EPOCHS,
                     system_options={"cache_rows": CACHE_ROWS, "prefetch_depth": 2})
    return run_on_tiny(tmp_path_factory.mktemp("bgl"), tiny_inputs, spec, name="bgl")


def _replay(tiny_inputs, spec) -> dict[int, list[dict]]:
    """Per worker and step, what the FIFO rule gives on ``default``'s batches, computed
    independently: the schedule and the replicated sampler with the run's batch seeds, and
    a plain deque as the cache."""
    ds = load_dataset(tiny_inputs[0])
    owner = np.asarray(load_partition(tiny_inputs[1]).book.owner)
    sampler = NeighborSampler(ds.indptr, ds.indices, spec.get("fanouts"))
    steps = steps_per_epoch(ds.train_idx, owner, 2, spec.batch_size)
    out = {}
    for worker in range(2):
        fifo: deque[int] = deque()
        held: set[int] = set()
        rows = out[worker] = []
        train = worker_train_nodes(ds.train_idx, owner, worker)
        for epoch in range(EPOCHS):
            seeds = epoch_seed_nodes(train, steps, spec.batch_size, spec.seed, worker, epoch)
            for step, nodes in enumerate(seeds):
                batch = sampler.sample(nodes, batch_seed(spec.seed, worker, epoch, step))
                inputs = batch.input_nodes.numpy()
                remote = [int(n) for n in inputs if owner[n] != worker]
                misses = [n for n in remote if n not in held]
                fresh, evicted = set(misses), 0  # evicted: rows held before this step
                for node in misses:
                    fifo.append(node)
                    held.add(node)
                    if len(fifo) > CACHE_ROWS:
                        out_node = fifo.popleft()
                        held.discard(out_node)
                        evicted += out_node not in fresh
                rows.append({"epoch": epoch, "step": step, "remote": len(remote),
                             "local": len(inputs) - len(remote), "misses": len(misses),
                             "hits": len(remote) - len(misses), "evictions": evicted,
                             "rpcs": len(set(owner[misses].tolist()))})
    return out


def test_counts_follow_the_fifo_replay(bgl_run, tiny_inputs, make_spec, read_steps):
    spec = make_spec(system="bgl", epochs=EPOCHS)
    replay = _replay(tiny_inputs, spec)
    epochs = [json.loads(line) for line in (bgl_run / "epochs.jsonl").read_text().splitlines()]
    total_hits = total_evictions = 0
    for worker in range(2):
        records = read_steps(bgl_run, worker)
        expected = replay[worker]
        assert [(r["epoch"], r["step"]) for r in records] == \
            [(e["epoch"], e["step"]) for e in expected]
        for rec, want in zip(records, expected, strict=True):
            assert rec["cache_hits"] + rec["cache_misses"] == want["remote"]
            assert rec["cache_hits"] == want["hits"]
            assert rec["cache_misses"] == rec["remote_rows"] == want["misses"]
            assert rec["remote_rpcs"] == want["rpcs"]
            assert rec["local_rows"] == want["local"]
            assert rec["fifo_evictions"] == want["evictions"]
            assert rec["fetch_wait_s"] >= 0 and rec["sample_s"] > 0
        for epoch in range(EPOCHS):
            mine = [e for e in expected if e["epoch"] == epoch]
            record = epochs[epoch]["workers"][worker]
            assert record["cache_hits"] == sum(e["hits"] for e in mine)
            assert record["cache_misses"] == sum(e["misses"] for e in mine)
            assert record["fifo_evictions"] == sum(e["evictions"] for e in mine)
            assert record["cache_rows_held"] == CACHE_ROWS
            assert record["extra_remote_rows"] == 0
        total_hits += sum(e["hits"] for e in expected)
        total_evictions += sum(e["evictions"] for e in expected)
    assert total_hits > 0 and total_evictions > 0  # the test exercises both
    summary = json.loads((bgl_run / "summary.json").read_text())
    assert summary["system_options"]["cache_rows"] == CACHE_ROWS
    assert 0 < summary["cache_bytes_max"] <= CACHE_ROWS * 32 * 4


def test_training_follows_default(bgl_run, default_run, read_steps):
    """Same batches and exact features: the same losses, fewer rows on the wire."""
    for worker in range(2):
        bgl, default = read_steps(bgl_run, worker), read_steps(default_run, worker)
        for b, d in zip(bgl, default, strict=True):
            assert (b["epoch"], b["step"]) == (d["epoch"], d["step"])
            assert b["loss"] == pytest.approx(d["loss"], rel=1e-5, abs=1e-6)
            assert b["cache_hits"] + b["remote_rows"] == d["remote_rows"]
            for key in ("local_rows", "sampling_rpcs", "sampling_rows", "sampling_bytes"):
                assert b[key] == d[key], key
    a = json.loads((bgl_run / "summary.json").read_text())
    b = json.loads((default_run / "summary.json").read_text())
    assert a["test_acc"] == pytest.approx(b["test_acc"], abs=1e-9)
    assert a["remote_rows_per_epoch"] < b["remote_rows_per_epoch"]


def test_rerun_slowed_and_resumed_moves_the_same_traffic(bgl_run, tiny_inputs, tmp_path,
                                                        run_on_tiny, make_spec, read_steps):
    """Same seed, 30 ms of congestion on every feature pull, and the run stopped after
    epoch 0 and resumed from its checkpoint: the trainer waits on the producer, yet every
    step's hits, misses, evictions and traffic are the first run's (the resumed worker
    pulls its checkpointed FIFO contents back, reported outside the steps)."""
    slow = {"congestion": {"kind": "time", "segments": [[0, {"0": 30, "1": 30}]],
                           "applies_to": ["fetch"]}}
    options = {"cache_rows": CACHE_ROWS, "prefetch_depth": 2}
    for epochs in (1, EPOCHS):  # the second call resumes the first at epoch 1
        again = run_on_tiny(tmp_path, tiny_inputs, make_spec(
            system="bgl", epochs=epochs, network=slow, system_options=options), name="again")
    for worker in range(2):
        a, b = read_steps(bgl_run, worker), read_steps(again, worker)
        assert [[r[k] for k in COUNT_KEYS] for r in a] == [[r[k] for k in COUNT_KEYS] for r in b]
        waits = [r["fetch_wait_s"] for r in b if r["remote_rpcs"] and r["step"] > 0]
        assert waits and max(waits) >= 0.01
    epochs = [json.loads(line) for line in (again / "epochs.jsonl").read_text().splitlines()]
    assert [[w["extra_remote_rows"] for w in e["workers"]] for e in epochs] == \
        [[0, 0], [CACHE_ROWS, CACHE_ROWS]]
    assert [[w["fill_resume_rows"] for w in e["workers"]] for e in epochs] == \
        [[0, 0], [CACHE_ROWS, CACHE_ROWS]]


def test_no_cache_fetches_what_default_fetches(tiny_inputs, tmp_path, run_on_tiny, make_spec,
                                               default_run, read_steps):
    spec = make_spec(system="bgl", epochs=EPOCHS, system_options={"cache_rows": 0})
    out = run_on_tiny(tmp_path, tiny_inputs, spec, name="bgl0")
    for worker in range(2):
        for b, d in zip(read_steps(out, worker), read_steps(default_run, worker), strict=True):
            for key in ("epoch", "step", "remote_rows", "remote_rpcs", "remote_bytes",
                        "local_rows", "sampling_rpcs", "sampling_bytes"):
                assert b[key] == d[key], key
            assert (b["cache_hits"], b["cache_misses"]) == (0, d["remote_rows"])
            assert b["loss"] == pytest.approx(d["loss"], rel=1e-5, abs=1e-6)
    summary = json.loads((out / "summary.json").read_text())
    assert summary.get("cache_bytes_max", 0) == 0
    assert summary["fifo_evictions_per_epoch"] == 0
