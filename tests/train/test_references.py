"""Reference step times: the measured table, the derivation rule, the step workload key."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from commgnn.experiments import expand_experiments
from commgnn.train.references import (
    DERIVATION_RULE,
    layer_dims,
    load_table,
    reference_for,
    step_flops,
)
from commgnn.train.workload import StepWorkload, dataset_shape, step_workload

REPO = Path(__file__).resolve().parents[2]


def _work(hidden=16, fanouts=(10, 25), batch=1000, nodes=1000, arch="sage"):
    return StepWorkload(dataset={"source": "synthetic", "preset": "tiny", "nodes": nodes},
                        architecture=arch, layers=len(fanouts), hidden=hidden, heads=1,
                        fanouts=tuple(fanouts), batch=batch)


def _row(work, median_s, flops):
    return {"workload": work.as_dict(), "median_s": median_s, "flops": flops,
            "device_name": "H100"}


def test_flops_proxy_by_hand():
    # layer 0: 100 src, 10 dst, 50 edges, 8 -> 4; layer 1: 10 src, 2 dst, 9 edges, 4 -> 3
    assert step_flops([[100, 10, 50], [10, 2, 9]], [8, 4, 3]) == 50 * 8 + 100 * 8 * 4 + \
        9 * 4 + 10 * 4 * 3
    with pytest.raises(ValueError, match="one more width"):
        step_flops([[1, 1, 1]], [1])
    assert layer_dims(_work(hidden=16, fanouts=(5, 5, 5)), 100, 7) == [100, 16, 16, 7]
    gat = StepWorkload(dataset={}, architecture="gat", layers=2, hidden=8, heads=4,
                       fanouts=(5, 5), batch=1)
    assert layer_dims(gat, 100, 7) == [100, 32, 7]


def test_measured_then_derived_by_the_rule_then_none():
    a, b = _work(nodes=1000), _work(nodes=2000)
    table = [_row(a, 0.002, 100.0), _row(b, 0.004, 300.0)]
    exact = reference_for(a, None, table)
    assert (exact.step_s, exact.source, exact.rule) == (0.002, "measured", None)
    same_family = _work(nodes=5000, batch=512)
    between = reference_for(same_family, 200.0, table)  # halfway in the proxy
    assert between.source == "derived" and between.rule == DERIVATION_RULE
    assert between.step_s == pytest.approx(0.003)
    assert set(between.basis) == {a.key, b.key}
    below = reference_for(same_family, 10.0, table)  # launch-bound floor: the smallest's
    assert below.step_s == pytest.approx(0.002) and below.basis == (a.key,)
    above = reference_for(same_family, 600.0, table)  # proportional past the largest
    assert above.step_s == pytest.approx(0.008) and above.basis == (b.key,)
    assert reference_for(same_family, None, table) is None  # no proxy: nothing to derive
    other_family = _work(hidden=128)
    assert reference_for(other_family, 200.0, table) is None


def test_the_step_workload_ignores_split_and_seed_and_spells_out_presets():
    one = dataset_shape({"source": "synthetic", "preset": "arxiv-like", "split": {"train": 0.2},
                         "seed": 3})
    two = dataset_shape({"source": "synthetic", "preset": "arxiv-like", "nodes": 169_343})
    assert one == two and one["nodes"] == 169_343
    assert "split" not in one and "seed" not in one
    three = dataset_shape({"source": "synthetic", "preset": "arxiv-like", "nodes": 1000})
    assert three != one


def test_the_table_is_well_formed_and_measures_every_default_workload():
    rows = load_table()
    assert len(rows) >= 60
    keys = [r["key"] for r in rows]
    assert len(keys) == len(set(keys))
    assert all(r["median_s"] > 0 and r["flops"] > 0 for r in rows)
    assert {r["device_name"] for r in rows} == {"NVIDIA H100 80GB HBM3"}
    for name in ("config.yaml", "configs/compare.yaml"):
        config = yaml.safe_load((REPO / name).read_text())
        for spec in expand_experiments(config):
            work = step_workload(spec, dataset_shape(config["datasets"][spec.dataset]))
            ref = reference_for(work, None)
            assert ref is not None and ref.source == "measured", (name, work.describe())


def test_layer_rows_and_their_mean_by_hand(tiny_inputs):
    from commgnn.data.store import load_dataset
    from commgnn.sampling.neighbor import NeighborSampler
    from commgnn.train.references import layer_rows, mean_layer_rows

    ds = load_dataset(tiny_inputs[0])
    batch = NeighborSampler(ds.indptr, ds.indices, [5, 5]).sample(
        np.asarray(ds.train_idx[:16]), 3)
    assert layer_rows(batch) == [[b.num_src, b.num_dst, b.num_edges] for b in batch.blocks]
    # two batches of two layers: the mean per layer and per column
    assert mean_layer_rows([[[4, 2, 6], [2, 1, 2]], [[6, 2, 8], [2, 1, 4]]]) == [
        [5.0, 2.0, 7.0], [2.0, 1.0, 3.0]]
    assert mean_layer_rows([]) == []


def test_the_compute_probe_holds_no_earlier_batch(tiny_inputs):
    """A probe keeps each batch's layer sizes, not the batch: with 7–10 layers of fan-out 10
    a batch's blocks are the whole graph's edges, and holding the probe's 30 of them killed
    four uk-like workers for memory (benchmarks/README.md, the deep models on uk-like)."""
    import weakref
    from types import SimpleNamespace

    import torch

    from commgnn.data.store import load_dataset
    from commgnn.models import build_model
    from commgnn.sampling.neighbor import NeighborSampler
    from commgnn.train.dilation import PROBE_STEPS, PROBE_WARMUP, compute_step_s
    from commgnn.train.references import layer_rows, mean_layer_rows

    ds = load_dataset(tiny_inputs[0])
    real = NeighborSampler(ds.indptr, ds.indices, [5, 5])
    seen, held = [], []

    class Watching:
        def sample(self, seeds, seed):
            held.append(sum(ref() is not None for ref in seen))
            batch = real.sample(seeds, seed)
            seen.append(weakref.ref(batch))
            shapes.append(layer_rows(batch))
            return batch

    shapes: list = []
    labels = torch.as_tensor(np.asarray(ds.labels), dtype=torch.int64)
    train = np.asarray(ds.train_idx)
    ctx = SimpleNamespace(
        epoch_seeds=lambda epoch: [train[i:i + 32] for i in range(0, 128, 32)],
        sampler=Watching(), dataset=ds, spec=SimpleNamespace(seed=7, batch_size=32), rank=0,
        device=torch.device("cpu"), labels_of=lambda nodes: labels[nodes])
    model = build_model("sage", ds.feature_dim, 8, ds.num_classes, 2, 0.0)
    median, rows = compute_step_s(ctx, model)
    assert len(held) == PROBE_WARMUP + PROBE_STEPS and median > 0
    assert max(held) == 0, held  # every earlier batch was freed before the next was sampled
    assert rows == mean_layer_rows(shapes)
