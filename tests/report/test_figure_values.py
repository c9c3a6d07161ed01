"""The values of the figures the shared tiny pipeline built (``tiny_pipeline`` fixture:
``out/figures/<name>.csv``), recomputed here from the records behind them — the runs'
per-epoch, per-worker and per-step records, the partition books, the dataset and the
presampled blocks — never through the figure modules' own functions, so a wrong value in
a figure's CSV fails its test.

The tiny pipeline's runs have one seed each (a spread over seeds is NaN, except where a
figure pools runs of several configuration variants) and one epoch, on the ``tiny``
dataset, 2 workers, batch 256, fan-outs [5, 5].
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from commgnn.data.store import load_dataset
from commgnn.partition import load_partition
from commgnn.sampling.batches import epoch_batches
from commgnn.sampling.neighbor import NeighborSampler
from commgnn.sampling.presample import load_presampled
from commgnn.sampling.schedule import global_epoch_seed_nodes
from commgnn.sampling.seeds import batch_seed

#: The cell every sage run of the tiny pipeline shares (``plotting.CELL``).
CELL = {"dataset": "tiny", "model": "sage", "layers": 2, "workers": 2, "batch_size": 256}


@pytest.fixture(scope="module")
def out(tiny_pipeline) -> Path:
    return tiny_pipeline / "out"


def _figure(out: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(out / "figures" / f"{name}.csv")


def _run(out: Path, system: str, partitioning: str = "metis2", model: str = "sage",
         network: str = "10gbe") -> Path:
    return out / "runs" / system / "tiny" / partitioning / f"{model}_b256_{network}_s0"


def _summary(directory: Path) -> dict:
    return json.loads((directory / "summary.json").read_text())


def _epochs(directory: Path) -> list[dict]:
    """The run's epoch records (each with its per-worker records under ``workers``)."""
    return [json.loads(line) for line in (directory / "epochs.jsonl").read_text().splitlines()]


def _steps(directory: Path) -> list[dict]:
    """Every worker's step records."""
    return [json.loads(line) for path in sorted(directory.glob("steps_w*.jsonl"))
            for line in path.read_text().splitlines()]


def _worker_sum(directory: Path, key: str) -> float:
    """``key`` summed over every epoch's per-worker records."""
    return sum(w[key] for e in _epochs(directory) for w in e["workers"])


def _test_acc(directory: Path) -> float:
    """The test accuracy of the run's last evaluated epoch."""
    return [e["test_acc"] for e in _epochs(directory) if "test_acc" in e][-1]


def _spread(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (NaN for one value), as over seeds."""
    std = float(np.std(values, ddof=1)) if len(values) > 1 else math.nan
    return float(np.mean(values)), std


def _approx_or_nan(expected: float):
    return pytest.approx(expected, nan_ok=True)


def _neighbours(indptr: np.ndarray, indices: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The CSR entries of every row in ``rows``, concatenated."""
    starts, lengths = indptr[rows], indptr[rows + 1] - indptr[rows]
    offsets = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
    return indices[offsets + np.arange(int(lengths.sum()))]


def _reach(indptr: np.ndarray, indices: np.ndarray, start: np.ndarray, hops: int) -> np.ndarray:
    """Sorted ids of every node within ``hops`` CSR hops of ``start`` (``start`` too)."""
    reached = np.unique(start)
    for _ in range(hops):
        reached = np.union1d(reached, _neighbours(indptr, indices, reached))
    return reached


# -- Grappa ---------------------------------------------------------------------------------
def test_grappa_table1_from_the_partition_book_and_the_sampled_batches(out):
    """Table 1: per part of every METIS/random partitioning (metis2; chunk3 is skipped),
    one epoch of Grappa's protocol — the part's training nodes in batches of 1000, 3
    layers with fan-outs 15/10/5, seeded as training is. ``remote_rows``: the batches'
    input rows owned by another part, summed over batches; ``remote_bytes`` their float32
    features, ``seconds_at_10gbps`` those bytes on one 10 Gb/s link;
    ``distinct_remote_rows``: the remote nodes within 3 hops of the part's training nodes
    (each once), ``distinct_remote_bytes`` their features."""
    table = _figure(out, "grappa_table1")
    ds = load_dataset(out / "datasets" / "tiny")
    partition = load_partition(out / "partitions" / "tiny" / "metis2")
    owner = np.asarray(partition.book.owner)
    train = np.asarray(ds.train_idx)
    indptr, indices = np.asarray(ds.indptr), np.asarray(ds.indices)
    sampler = NeighborSampler(ds.indptr, ds.indices, [15, 10, 5])
    row_bytes = ds.feature_dim * 4  # float32
    assert list(table["part"]) == list(range(partition.num_parts))
    for _, row in table.iterrows():
        part = int(row["part"])
        assert (row["dataset"], row["partitioning"], row["method"], row["parts"]) == \
            ("tiny", "metis2", "metis", 2)
        assert (row["hops"], row["fanouts"], row["batch_size"]) == (3, "15/10/5", 1000)
        mine = train[owner[train] == part]
        batches = epoch_batches(mine, 1000, 0, part, 0)
        assert np.array_equal(np.sort(np.concatenate(batches)), np.sort(mine))
        closure = _reach(indptr, indices, mine, 3)
        remote = 0
        for step, seeds in enumerate(batches):
            nodes = sampler.sample(seeds, batch_seed(0, part, 0, step)).input_nodes.numpy()
            assert np.isin(nodes, closure).all()  # a 3-layer batch stays within 3 hops
            remote += int(np.count_nonzero(owner[nodes] != part))
        distinct = int(np.count_nonzero(owner[closure] != part))
        assert row["batches"] == len(batches) == math.ceil(mine.shape[0] / 1000)
        assert row["remote_rows"] == remote
        assert row["remote_bytes"] == remote * row_bytes
        assert row["seconds_at_10gbps"] == pytest.approx(remote * row_bytes / (10e9 / 8))
        assert row["distinct_remote_rows"] == distinct
        assert row["distinct_remote_bytes"] == distinct * row_bytes


def _grappa_variant(summary: dict) -> str:
    """Table 7's name of a run: Grappa (-UW: no coverage correction); other systems as
    ``<system> (<partitioning>)``. The tiny pipeline's grappa runs use no other ablation."""
    if summary["base_system"] != "grappa":
        return f"{summary['base_system']} ({summary['partitioning']})"
    options = summary["system_options"]
    assert (options["switching"], options["mode"], options["remote_edge_fraction"],
            options["active_workers"], options["chunk_halo_hops"]) == (
        "sweep", "sampling", 0.0, 0, "depth")
    return {"resampling": "Grappa", "none": "Grappa-UW"}[options["estimator"]]


def test_grappa_table4_accuracy_by_depth_from_every_run(out):
    """Table 4: per model depth and variant, ``test_acc`` the mean over runs of their last
    evaluated test accuracy (epoch records), ``test_acc_std`` its spread, ``runs`` how
    many runs (every run of the pipeline: the runs table holds them all)."""
    table = _figure(out, "grappa_table4").set_index(["layers", "variant"])
    accuracies: dict[tuple[int, str], list[float]] = {}
    for path in sorted((out / "runs").glob("*/tiny/*/*/summary.json")):
        summary = _summary(path.parent)
        key = (len(summary["training"]["fanouts"]), _grappa_variant(summary))
        accuracies.setdefault(key, []).append(_test_acc(path.parent))
    assert set(table.index) == set(accuracies)
    for key, values in accuracies.items():
        mean, std = _spread(values)
        assert table.loc[key, "test_acc"] == pytest.approx(mean), key
        assert table.loc[key, "test_acc_std"] == _approx_or_nan(std), key
        assert table.loc[key, "runs"] == len(values), key


def test_grappa_table7_ablations_from_the_grappa_runs(out):
    """Table 7: per cell and Grappa variant, ``test_acc`` (last evaluated epoch) with its
    spread and seed count, and ``fetch_mb_per_step``: feature bytes fetched per worker
    step (MB; Grappa trains in isolation, so none)."""
    table = _figure(out, "grappa_table7").set_index("variant")
    assert set(table.index) == {"Grappa", "Grappa-UW"}
    for system in ("grappa", "grappa-uw"):
        directory = _run(out, system, "chunk3")
        row = table.loc[_grappa_variant(_summary(directory))]
        assert {k: row[k] for k in CELL} == CELL and row["network"] == "10gbe"
        steps = _steps(directory)
        assert row["test_acc"] == pytest.approx(_test_acc(directory))
        assert math.isnan(row["test_acc_std"]) and row["seeds"] == 1
        assert row["fetch_mb_per_step"] == pytest.approx(
            sum(s["remote_bytes"] for s in steps) / len(steps) / 1e6)


def test_grappa_table8_switch_overheads_from_the_worker_records(out):
    """Table 8: per (dataset, partitioning, model, network) and Grappa configuration (Grappa
    and Grappa-UW apart), the mean over its seeds of: ``switch_s_per_epoch`` (target) and
    ``switch_raw_s_per_epoch`` the slowest worker's partition switch per epoch,
    ``switch_bytes_per_epoch`` and ``shuffle_bytes_per_epoch`` summed over workers,
    ``epoch_time_s`` (raw ÷ dilation), ``loads`` the super-epochs reached (partitions
    loaded), ``epochs``; ``switch_s_per_switch`` = switch time per epoch × epochs ÷ loads;
    ``partition_time_s`` the chunking's time (the partition's timing record)."""
    table = _figure(out, "grappa_table8").set_index("system")
    assert sorted(table.index) == ["grappa", "grappa-uw"]
    timing = json.loads((out / "partitions" / "tiny" / "chunk3" / "timing.json").read_text())
    for system in ("grappa", "grappa-uw"):
        row = table.loc[system]
        assert (row["dataset"], row["partitioning"], row["model"], row["network"],
                row["method"]) == ("tiny", "chunk3", "sage", "10gbe", "chunk")
        epochs = _epochs(_run(out, system, "chunk3"))
        expected = {
            "switch_s_per_epoch": np.mean([max(w["switch_s"] for w in e["workers"])
                                           for e in epochs]),
            "switch_raw_s_per_epoch": np.mean([max(w["switch_raw_s"] for w in e["workers"])
                                               for e in epochs]),
            "switch_bytes_per_epoch": np.mean([sum(w["switch_bytes"] for w in e["workers"])
                                               for e in epochs]),
            "shuffle_bytes_per_epoch": np.mean([sum(w["network_shuffle_bytes"]
                                                    for w in e["workers"]) for e in epochs]),
            "epoch_time_s": np.mean([e["time_s"] / e["time_dilation"] for e in epochs]),
            "loads": 1 + max(w["super_epoch"] for e in epochs for w in e["workers"]),
            "epochs": len(epochs)}
        for column, value in expected.items():
            assert row[column] == pytest.approx(value), (system, column)
        assert row["switch_s_per_switch"] == pytest.approx(
            expected["switch_s_per_epoch"] * expected["epochs"] / expected["loads"])
        assert row["partition_time_s"] == pytest.approx(timing["total_s"])


# -- HopGNN ---------------------------------------------------------------------------------
def _hop_cell(row: pd.Series) -> dict:
    return {k: row[k] for k in [*CELL, "network", "partitioning"]}


def test_hopgnn_fig14_miss_rates_from_the_step_records(out):
    """Figure 14: per variant, ``miss_rate`` = remote input rows ÷ all input rows. DGL
    (``dgl-global``) and LO (``default``): from their step records' fetched remote and
    local rows; All (``hopgnn``): its micrographs' rows before pre-gathering — input rows
    (per-worker epoch records) less the local rows its steps read. Naive gathers nothing
    and has none."""
    table = _figure(out, "hopgnn_fig14").set_index("variant")
    assert set(table.index) == {"DGL", "LO", "All"}
    for variant, system in (("DGL", "dgl-global"), ("LO", "default")):
        steps = _steps(_run(out, system))
        remote = sum(s["remote_rows"] for s in steps)
        local = sum(s["local_rows"] for s in steps)
        assert table.loc[variant, "miss_rate"] == pytest.approx(remote / (remote + local))
    hop = _run(out, "hopgnn")
    inputs = _worker_sum(hop, "input_rows")
    missed = inputs - sum(s["local_rows"] for s in _steps(hop))
    assert missed == _worker_sum(hop, "miss_rows")
    assert table.loc["All", "miss_rate"] == pytest.approx(missed / inputs)
    for _, row in table.iterrows():
        assert _hop_cell(row) == {**CELL, "network": "10gbe", "partitioning": "metis2"}
        assert math.isnan(row["miss_rate_std"]) and row["seeds"] == 1


def test_hopgnn_fig16_pregathering_from_the_step_records(out):
    """Figure 16 (two ledger claims): per epoch, ``rows_per_step`` the remote input rows
    of the micrographs fetched step by step (their miss rows), ``rows_pregathered`` the
    rows the pre-gathering run fetched (its steps' remote rows: each machine's union),
    ``requests_pregathered`` its steps' requests (one per owner), ``requests_per_step``
    those plus the requests pre-gathering saved; ``row_reduction`` and
    ``request_reduction`` the step-by-step counts over the pre-gathered ones."""
    table = _figure(out, "hopgnn_fig16")
    assert list(table["variant"]) == ["All"]  # Naive pre-gathers nothing
    row = table.iloc[0]
    assert _hop_cell(row) == {**CELL, "network": "10gbe", "partitioning": "metis2"}
    hop = _run(out, "hopgnn")
    epochs, steps = len(_epochs(hop)), _steps(hop)
    rows_pregathered = sum(s["remote_rows"] for s in steps) / epochs
    requests_pregathered = sum(s["remote_rpcs"] for s in steps) / epochs
    rows_per_step = _worker_sum(hop, "miss_rows") / epochs
    requests_per_step = requests_pregathered + _worker_sum(hop, "pregather_saved_rpcs") / epochs
    # the union removes repeats only: the step-by-step rows are the union's plus the saved
    assert rows_per_step == rows_pregathered + _worker_sum(hop, "pregather_saved_rows") / epochs
    # step by step, each micrograph asks each other owner at most once
    assert requests_per_step <= _worker_sum(hop, "micrographs") / epochs * (CELL["workers"] - 1)
    assert row["rows_per_step"] == pytest.approx(rows_per_step)
    assert row["rows_pregathered"] == pytest.approx(rows_pregathered)
    assert row["requests_per_step"] == pytest.approx(requests_per_step)
    assert row["requests_pregathered"] == pytest.approx(requests_pregathered)
    assert row["row_reduction"] == pytest.approx(rows_per_step / rows_pregathered)
    assert row["request_reduction"] == pytest.approx(requests_per_step / requests_pregathered)
    assert row["seeds"] == 1


def _locality(batch, owner: np.ndarray) -> tuple[float, float]:
    """(R_micro, R_sub) of one batch, walking each root's computation tree through the
    blocks (a destination is also its own source: position ``j`` in both)."""
    nodes = batch.input_nodes.numpy()
    blocks = [(b.indptr.numpy(), b.indices.numpy()) for b in batch.blocks]
    home = owner[nodes[:batch.seeds.numel()]]
    on_home = np.bincount(owner[nodes], minlength=int(owner.max()) + 1)
    micro, sub = [], []
    for root in range(home.shape[0]):
        tree = np.array([root])
        for indptr, indices in reversed(blocks):
            tree = np.union1d(tree, _neighbours(indptr, indices, tree))
        same = int(np.count_nonzero(owner[nodes[tree]] == home[root])) - 1  # not the root
        micro.append(same / tree.shape[0])
        sub.append((on_home[home[root]] - 1) / nodes.shape[0])
    return float(np.mean(micro)), float(np.mean(sub))


def test_hopgnn_table1_locality_from_the_partition_book(out):
    """Table 1: per METIS/random partitioning and (layers, fan-out), over the global
    schedule's first 4 batches of 128 roots: ``r_micro`` the mean over roots of the
    co-located share of the root's micrograph (its computation tree; vertices on the root's
    machine, the root excluded, ÷ the tree's vertices), ``r_sub`` the same share of the
    whole sampled subgraph, ``micro_over_sub`` their ratio."""
    table = _figure(out, "hopgnn_table1")
    ds = load_dataset(out / "datasets" / "tiny")
    owner = np.asarray(load_partition(out / "partitions" / "tiny" / "metis2").book.owner)
    batches = global_epoch_seed_nodes(ds.train_idx, 1, 128, 0, 0, 0)[:4]
    settings = [(2, 10), (3, 10), (10, 2)]
    assert list(zip(table["layers"], table["fanout"], strict=True)) == settings
    for (layers, fanout), (_, row) in zip(settings, table.iterrows(), strict=True):
        assert (row["dataset"], row["partitioning"], row["method"], row["machines"]) == \
            ("tiny", "metis2", "metis", 2)
        sampler = NeighborSampler(ds.indptr, ds.indices, [fanout] * layers)
        values = [_locality(sampler.sample(seeds, batch_seed(0, 0, 0, i)), owner)
                  for i, seeds in enumerate(batches)]
        r_micro = np.mean([v[0] for v in values])
        r_sub = np.mean([v[1] for v in values])
        assert row["r_micro"] == pytest.approx(r_micro), (layers, fanout)
        assert row["r_sub"] == pytest.approx(r_sub), (layers, fanout)
        assert row["micro_over_sub"] == pytest.approx(r_micro / r_sub)


def test_hopgnn_table3_accuracy_parity_from_the_epoch_records(out):
    """Table 3: per variant (DGL, LO, All), ``test_acc`` (last evaluated epoch) with its
    spread and seeds, ``dgl_test_acc`` the DGL run's beside it and ``drop_vs_dgl`` =
    DGL's − the variant's."""
    table = _figure(out, "hopgnn_table3").set_index("variant")
    systems = {"DGL": "dgl-global", "LO": "default", "All": "hopgnn"}
    assert set(table.index) == set(systems)
    dgl = _test_acc(_run(out, "dgl-global"))
    for variant, system in systems.items():
        row = table.loc[variant]
        accuracy = _test_acc(_run(out, system))
        assert _hop_cell(row) == {**CELL, "network": "10gbe", "partitioning": "metis2"}
        assert row["test_acc"] == pytest.approx(accuracy)
        assert math.isnan(row["test_acc_std"]) and row["seeds"] == 1
        assert row["dgl_test_acc"] == pytest.approx(dgl)
        assert row["drop_vs_dgl"] == pytest.approx(dgl - accuracy)


# -- GreenDyGNN -----------------------------------------------------------------------------
#: The congested runs of the tiny pipeline: system -> (method, label), in the paper's order.
CONGESTED = {"bgl": ("BGL", "BGL (FIFO 100 rows)"),
             "greendygnn": ("GreenDyGNN-static", "GreenDyGNN-static(2)"),
             "greendygnn-heuristic": ("GreenDyGNN-heuristic", "GreenDyGNN-heuristic"),
             "greendygnn-dqn": ("GreenDyGNN", "GreenDyGNN")}


def _green_cell(row: pd.Series) -> dict:
    return {k: row[k] for k in [*CELL, "partitioning", "network"]}


def test_greendygnn_fig4_energy_per_epoch_from_the_worker_records(out):
    """Figure 4: per congested run (the clean greendygnn run is not drawn), the
    target-model energy per epoch summed over workers: ``gpu_j``, ``cpu_j`` and
    ``total_j`` (their sum), mean over seeds, ``total_std_j`` its spread; methods in the
    paper's order."""
    table = _figure(out, "greendygnn_fig4")
    assert list(zip(table["method"], table["label"], strict=True)) == list(CONGESTED.values())
    for (_, row), system in zip(table.iterrows(), CONGESTED, strict=True):
        directory = _run(out, system, network="10gbe-single")
        epochs = len(_epochs(directory))
        gpu = _worker_sum(directory, "energy_target_gpu_j") / epochs
        cpu = _worker_sum(directory, "energy_target_cpu_j") / epochs
        assert _green_cell(row) == {**CELL, "partitioning": "metis2",
                                    "network": "10gbe-single"}
        assert row["gpu_j"] == pytest.approx(gpu), system
        assert row["cpu_j"] == pytest.approx(cpu), system
        assert row["total_j"] == pytest.approx(gpu + cpu), system
        assert row["total_j"] == pytest.approx(_worker_sum(directory, "energy_target_j")
                                               / epochs), system
        assert math.isnan(row["total_std_j"]) and row["seeds"] == 1


#: The clean runs of the paper's methods in the tiny pipeline: system -> (method, label), in
#: the paper's order (``dgl-global`` and ``oracle`` are not the paper's methods).
CLEAN = {"default": ("DGL", "DGL"),
         "rapidgnn-h200": ("RapidGNN", "RapidGNN [rapidgnn-h200]"),
         "rapidgnn": ("RapidGNN", "RapidGNN [rapidgnn]"),
         "greendygnn": ("GreenDyGNN-static", "GreenDyGNN-static(2)")}


def test_greendygnn_fig6_clean_energy_per_epoch_of_the_paper_methods(out):
    """Figure 6: per clean run of the paper's methods, the target-model energy per epoch
    summed over workers (GPU, CPU, total); other systems on the clean network left out."""
    table = _figure(out, "greendygnn_fig6")
    assert list(zip(table["method"], table["label"], strict=True)) == list(CLEAN.values())
    for (_, row), system in zip(table.iterrows(), CLEAN, strict=True):
        directory = _run(out, system)
        epochs = len(_epochs(directory))
        gpu = _worker_sum(directory, "energy_target_gpu_j") / epochs
        cpu = _worker_sum(directory, "energy_target_cpu_j") / epochs
        assert _green_cell(row) == {**CELL, "partitioning": "metis2", "network": "10gbe"}
        assert row["gpu_j"] == pytest.approx(gpu), system
        assert row["cpu_j"] == pytest.approx(cpu), system
        assert row["total_j"] == pytest.approx(gpu + cpu), system
        assert math.isnan(row["total_std_j"]) and row["seeds"] == 1


def test_greendygnn_fig9_cumulative_energy_from_the_worker_records(out):
    """Figure 9: per congested run and epoch, ``energy_target_cum_j`` the target-model
    energy of every epoch up to it, summed over workers (mean over seeds)."""
    table = _figure(out, "greendygnn_fig9")
    assert set(zip(table["method"], table["label"], strict=True)) == set(CONGESTED.values())
    for system, (method, label) in CONGESTED.items():
        rows = table[(table["method"] == method) & (table["label"] == label)] \
            .sort_values("epoch")
        epochs = _epochs(_run(out, system, network="10gbe-single"))
        cumulative = np.cumsum([sum(w["energy_target_j"] for w in e["workers"])
                                for e in epochs])
        assert list(rows["epoch"]) == [e["epoch"] for e in epochs]
        assert list(rows["energy_target_cum_j"]) == pytest.approx(list(cumulative)), system
        assert rows["energy_target_cum_std_j"].isna().all() and (rows["seeds"] == 1).all()
        for _, row in rows.iterrows():
            assert _green_cell(row) == {**CELL, "partitioning": "metis2",
                                        "network": "10gbe-single"}


# -- RapidGNN -------------------------------------------------------------------------------
def test_rapidgnn_fig3_access_histogram_from_the_presampled_blocks(out):
    """Figure 3: over every worker's presampled epoch-0 batches, ``nodes`` = how many
    (worker, remote node) pairs were inputs of exactly ``accesses`` of that worker's
    batches (remote: owned by another part, from the partition book)."""
    table = _figure(out, "rapidgnn_fig3")
    presample = out / "presample" / "tiny" / "metis2" / "b256_s0"
    owner = np.asarray(load_partition(out / "partitions" / "tiny" / "metis2").book.owner)
    histogram: dict[int, int] = {}
    for worker in (0, 1):
        counts = np.zeros(owner.shape[0], dtype=np.int64)
        for presampled in load_presampled(presample, worker, 0):
            nodes = presampled.batch.input_nodes.numpy()
            assert np.unique(nodes).shape == nodes.shape
            counts[nodes[owner[nodes] != worker]] += 1
        for accesses, nodes in zip(*np.unique(counts[counts > 0], return_counts=True),
                                   strict=True):
            histogram[int(accesses)] = histogram.get(int(accesses), 0) + int(nodes)
    assert set(table["presample"]) == {"tiny/metis2/b256_s0"}
    assert list(table["accesses"]) == sorted(histogram)
    assert list(table["nodes"]) == [histogram[k] for k in sorted(histogram)]
