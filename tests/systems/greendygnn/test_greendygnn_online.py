"""GreenDyGNN's Stage 1 as the paper built it (§V-A): a background thread samples every
batch online with distributed sampling (``sampler: online``, the default), its
neighbour-list RPCs charged as ``sampling`` traffic, against the measured alternative that
reads RapidGNN's presampled blocks (``sampler: presample``): the same batches, hence the
same caches, fetches and losses."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from commgnn.core.errors import WorkerFailed
from commgnn.runtime.prefetch import PrefetchError
from commgnn.systems.greendygnn.system import GreenDyGNNSystem, SampleBuffer

pytestmark = pytest.mark.timeout(300)
EPOCHS = 3  # what tiny_presampled holds
K = 40
W = 4
DEPTH = 1  # Stage 1 one step ahead of the resolver (and as far as the builder asks)
SAMPLING = ("sampling_rpcs", "sampling_rows", "sampling_bytes")
SAME = ("epoch", "step", "window", "window_index", "cache_hits", "cache_misses",
        "remote_rpcs", "remote_rows", "remote_bytes", "local_rows", "loss")
SAME_EPOCH = ("windows_built", "fill_rows", "copied_rows", "extra_remote_rpcs",
              "extra_remote_rows", "extra_remote_bytes", "biased_windows", "mean_window")


def _spec(make_spec, epochs=EPOCHS, network="10gbe", training=None, **options):
    return make_spec(system="greendygnn", epochs=epochs, network=network,
                     system_options={"cache_rows": K, "window": W, "loader_depth": DEPTH,
                                     **options},
                     **(training or {}))


def _epochs(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "epochs.jsonl").read_text().splitlines()]


def test_the_paper_stage1_is_the_default_and_needs_no_presample():
    resolved = GreenDyGNNSystem.resolve_options({})
    assert resolved["sampler"] == "online"
    assert GreenDyGNNSystem.needs == ()
    assert GreenDyGNNSystem.wants(resolved) == ()
    assert GreenDyGNNSystem.wants({}) == ()
    presampled = GreenDyGNNSystem.resolve_options({"sampler": "presample"})
    assert GreenDyGNNSystem.wants(presampled) == ("presample",)
    assert GreenDyGNNSystem.wants({**resolved, "controller": "dqn"}) == ("policy",)
    assert GreenDyGNNSystem.wants({**presampled, "controller": "dqn"}) == \
        ("presample", "policy")
    assert GreenDyGNNSystem.wants({**resolved, "controller": "dqn", "policy": "p.pt"}) == ()


def test_online_sampling_is_charged_and_gives_the_presampled_run(
        tiny_presampled, tiny_inputs, tmp_path, run_on_tiny, make_spec, read_steps):
    online = run_on_tiny(tmp_path, tiny_inputs, _spec(make_spec), name="online")  # no input
    offline = run_on_tiny(tmp_path, tiny_inputs, _spec(make_spec, sampler="presample"),
                          name="presample", presample=tiny_presampled)
    meta = json.loads((tiny_presampled / "meta.json").read_text())
    on_epochs, off_epochs = _epochs(online), _epochs(offline)
    for worker in range(2):
        on, off = read_steps(online, worker), read_steps(offline, worker)
        # the same batches: every window, hit, miss, fetch and loss
        assert [[r[k] for k in SAME] for r in on] == [[r[k] for k in SAME] for r in off]
        stats = meta["workers"][str(worker)]
        for epoch in range(EPOCHS):
            # online: each step records its batch's neighbour-list RPCs, exactly what the
            # presample recorded distributed sampling would cost for this (worker, epoch)
            steps = [r for r in on if r["epoch"] == epoch]
            for key in SAMPLING:
                assert sum(r[key] for r in steps) == stats[key][epoch] > 0, key
            assert all(r["sample_s"] > 0 for r in steps)  # the sampler thread's seconds
            # presample: paid offline, nothing on the steps, reported apart
            assert all(r[key] == 0 for r in off if r["epoch"] == epoch for key in SAMPLING)
            ours, theirs = (e[epoch]["workers"][worker] for e in (on_epochs, off_epochs))
            assert [ours[k] for k in SAME_EPOCH] == [theirs[k] for k in SAME_EPOCH]
            assert theirs["presample_sampling_rpcs"] == stats["sampling_rpcs"][epoch]
            assert "presample_sampling_rpcs" not in ours
            assert theirs["network_sampling_bytes"] == 0
            assert 0 < ours["sampler_held_max"] <= 2 * W + DEPTH  # about 2 windows
        # The RPCs crossed the emulated links in the epoch they were sent in (or, sent
        # between two epochs, are the next one's), possibly before the epoch that trains
        # on the batch: by the end of epoch e the sampler has
        # sampled every step epoch e trained, and it holds (finishing them in the
        # background, the loop not waiting) once it has sampled every step below
        # max(the next epoch's first + DEPTH, the end of the window the builder was last
        # asked for): the window after the one holding the epoch's last step (static
        # windows of W steps from step 0). Every byte is on a link once.
        steps, total = len(on) // EPOCHS, len(on)
        held = [min(total, max((e + 1) * steps + DEPTH,
                               W * (((e + 1) * steps - 1) // W + 2))) for e in range(EPOCHS)]
        assert held[0] < total  # something is left for a later epoch
        sent = 0
        for e in range(EPOCHS):
            sent += on_epochs[e]["workers"][worker]["network_sampling_bytes"]
            trained = sum(r["sampling_bytes"] for r in on[:(e + 1) * steps])
            assert trained <= sent <= sum(r["sampling_bytes"] for r in on[:held[e]])
        assert sent == sum(r["sampling_bytes"] for r in on)
    on_summary, off_summary = (json.loads((run / "summary.json").read_text())
                               for run in (online, offline))
    assert on_summary["sampling_rpcs_per_epoch"] == pytest.approx(
        sum(sum(meta["workers"][str(w)]["sampling_rpcs"]) for w in range(2)) / EPOCHS)
    assert off_summary["sampling_rpcs_per_epoch"] == 0
    assert "presample_sampling_rpcs_per_epoch" not in on_summary
    assert on_summary["system_options"]["sampler"] == "online"
    assert off_summary["system_options"]["sampler"] == "presample"


def test_presample_mode_needs_and_checks_its_presample(tiny_presampled, tiny_inputs,
                                                       tmp_path, run_on_tiny, make_spec):
    with pytest.raises(WorkerFailed, match=r"sampler: presample needs pipeline inputs "
                                           r"\['presample'\]"):
        run_on_tiny(tmp_path, tiny_inputs, _spec(make_spec, epochs=1, sampler="presample"),
                    name="missing")
    other = {"fanouts": [4, 4]}  # not what tiny_presampled was made for
    with pytest.raises(WorkerFailed, match="presampled with fanouts"):
        run_on_tiny(tmp_path, tiny_inputs, _spec(make_spec, epochs=1, training=other,
                                                 sampler="presample"),
                    name="stale", presample=tiny_presampled)
    # online never reads a presample given to it (the calibration's runs pass one)
    run = run_on_tiny(tmp_path, tiny_inputs,
                      _spec(make_spec, epochs=1, network="none", training=other),
                      name="ignored", presample=tiny_presampled)
    assert (run / "summary.json").is_file()


def test_sample_buffer_samples_each_step_once_for_both_consumers():
    produced: list[int] = []

    def produce(g: int) -> int:
        produced.append(g)
        return g * 10

    # a resume: the builder rebuilds from step 2, the loader takes from step 4
    buffer = SampleBuffer(produce, first=2, consume_from=4, total=20, depth=3)
    windows: list[list[int]] = []

    def builder() -> None:
        for start in range(2, 20, 5):  # windows of 5 steps, the last one cut at 20
            windows.append(buffer.read(start, start + 5))

    thread = threading.Thread(target=builder)
    thread.start()
    taken = [buffer.take(g) for g in range(4, 20)]
    thread.join(10)
    assert taken == [10 * g for g in range(4, 20)]
    assert windows == [[10 * g for g in range(s, min(s + 5, 20))] for s in range(2, 20, 5)]
    assert produced == list(range(2, 20))  # each once, in order
    assert buffer.held == 0  # both consumers are past every step
    with pytest.raises(RuntimeError, match="takes step 20 next"):
        buffer.take(5)
    buffer.close()
    assert not buffer._thread.is_alive()

    def broken(g: int) -> int:
        if g == 3:
            raise OSError("owner unreachable")
        return g

    buffer = SampleBuffer(broken, first=0, consume_from=0, total=10, depth=2)
    assert [buffer.take(g) for g in range(3)] == [0, 1, 2]
    with pytest.raises(PrefetchError, match="step 3 failed: OSError: owner unreachable") as info:
        buffer.take(3)
    assert isinstance(info.value.__cause__, OSError)
    buffer.close()

    # pause (between epochs) returns at once: the thread produces what was asked for in
    # the background, then holds; a waiting consumer is released by close
    produced.clear()
    release = threading.Event()

    def slow(g: int) -> int:
        if g == 2:
            assert release.wait(10)
        return produce(g)

    buffer = SampleBuffer(slow, first=0, consume_from=0, total=10, depth=1)
    assert buffer.take(0) == 0
    buffer.want(3)  # a window of steps 0-2
    buffer.pause()  # step 2 is still being produced: pause does not wait for it
    assert produced[-1] < 2
    release.set()
    assert buffer.read(0, 3) == [0, 10, 20]  # produced while paused: it was asked for
    errors: list[BaseException] = []

    def waiter() -> None:
        try:
            buffer.read(3, 10)
        except PrefetchError as exc:
            errors.append(exc)

    thread = threading.Thread(target=waiter)
    thread.start()
    thread.join(0.2)
    assert thread.is_alive()  # nothing beyond what was asked for is produced while paused
    assert produced == [0, 1, 2]
    buffer.close()
    thread.join(10)
    assert not thread.is_alive() and "closed" in str(errors[0])
    assert not buffer._thread.is_alive()
