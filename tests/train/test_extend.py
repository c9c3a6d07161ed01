"""A finished run is never destroyed by a failed extension: it stays in place, byte for
byte, until the extended run completes, which then replaces it in one step."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from commgnn.core.errors import WorkerFailed
from commgnn.sampling.blockio import BlockReader
from commgnn.sampling.presample import blocks_file
from commgnn.train.loop import publish_run

pytestmark = pytest.mark.timeout(180)


def snapshot(run: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("*"))
            if p.is_file()}


def flip_record(path: Path, position: int) -> bytes:
    """Corrupt record ``position`` of a block file; return the original bytes."""
    original = path.read_bytes()
    with BlockReader(path) as reader:
        start, end = reader.record_span(position)
    data = bytearray(original)
    data[(start + end) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    return original


def test_failed_extension_keeps_the_finished_run(tiny_inputs, tiny_presampled, tmp_path,
                                                 make_spec, run_on_tiny, read_steps):
    blocks = tmp_path / "blocks"
    shutil.copytree(tiny_presampled, blocks)
    finished = run_on_tiny(tmp_path, tiny_inputs, make_spec(system="rapidgnn", epochs=1),
                           presample=blocks)
    before = snapshot(finished)
    bad = blocks / blocks_file(1, 1)  # only the extension reads epoch 1
    original = flip_record(bad, 1)
    with pytest.raises(WorkerFailed, match=r"worker 1 raised BlockFileError: .*w1_e1\.blocks: "
                                           r"record 1: checksum mismatch"):
        run_on_tiny(tmp_path, tiny_inputs, make_spec(system="rapidgnn", epochs=2),
                    presample=blocks)
    assert snapshot(finished) == before, "the finished run changed"

    bad.write_bytes(original)
    extended = run_on_tiny(tmp_path, tiny_inputs, make_spec(system="rapidgnn", epochs=2),
                           presample=blocks)
    summary = json.loads((extended / "summary.json").read_text())
    assert summary["epochs"] == 2
    assert [json.loads(line)["epoch"] for line in
            (extended / "epochs.jsonl").read_text().splitlines()] == [0, 1]
    first = [r for r in read_steps(extended, 0) if r["epoch"] == 0]
    assert [r["loss"] for r in first] == \
        [json.loads(line)["loss"] for line in before["steps_w0.jsonl"].decode().splitlines()]
    assert not extended.with_name(extended.name + ".partial").exists()


def test_publishing_swaps_the_run_in_one_step(tmp_path):
    out, staging = tmp_path / "run", tmp_path / "run.partial"
    out.mkdir()
    (out / "summary.json").write_text("old")
    staging.mkdir()
    (staging / "summary.json").write_text("new")
    publish_run(staging, out)
    assert (out / "summary.json").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


PIPELINE = {
    "results_dir": "out",
    "datasets": {"tiny": {"source": "synthetic", "preset": "tiny", "seed": 3}},
    "partitionings": {"metis2": {"method": "metis", "parts": 2}},
    "training": {"epochs": 1, "fanouts": [5, 5], "hidden": 16, "eval_max_nodes": 100},
    "experiments": [{"systems": ["default"], "datasets": ["tiny"], "partitionings": ["metis2"],
                     "batch_sizes": [256], "networks": ["10gbe"]}],
}


RUN = "out/runs/default/tiny/metis2/sage_b256_10gbe_s0"


def pipeline(repo: Path, workdir: Path, epochs: int, *flags: str) -> subprocess.CompletedProcess:
    config = {**PIPELINE, "training": {**PIPELINE["training"], "epochs": epochs}}
    (workdir / "c.yaml").write_text(yaml.safe_dump(config))
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "2", "--snakefile",
         str(repo / "Snakefile"), "--directory", str(workdir), "--configfile",
         str(workdir / "c.yaml"), "--workflow-profile", "none", *flags, "--", RUN],
        capture_output=True, text=True, check=False, timeout=300)


def test_the_pipeline_extends_a_finished_run_in_place(repo_root, tmp_path):
    """More epochs in the config rerun the train job (a changed parameter), which resumes
    the finished run: Snakemake must neither delete it before the job nor leave it
    destroyed when the extension fails."""
    first = pipeline(repo_root, tmp_path, 1)
    assert first.returncode == 0, first.stderr[-3000:]
    run = tmp_path / RUN
    before = snapshot(run)
    checkpoint = next((tmp_path / "out/checkpoints").rglob("*.pt"))
    saved = checkpoint.read_bytes()
    checkpoint.write_bytes(saved[: len(saved) // 2])  # the extension fails to resume
    failed = pipeline(repo_root, tmp_path, 2)
    assert failed.returncode != 0
    assert snapshot(run) == before, "the failed extension changed the finished run"

    # Snakemake restored the run but recorded the failed job's settings as done: the
    # workflow says so and how to retry.
    checkpoint.write_bytes(saved)
    again = pipeline(repo_root, tmp_path, 2, "--dry-run")
    assert f"commgnn: {RUN} records other settings than the config's; if Snakemake does " \
           f"not rerun it (a failed extension), use --forcerun {RUN}" in again.stderr
    extended = pipeline(repo_root, tmp_path, 2, "--forcerun", RUN)
    assert extended.returncode == 0, extended.stderr[-3000:]
    assert [json.loads(line)["epoch"] for line in
            (run / "epochs.jsonl").read_text().splitlines()] == [0, 1]
    assert (run / "steps_w0.jsonl").read_bytes().startswith(before["steps_w0.jsonl"])


def test_a_corrupt_record_of_the_finished_run_is_named(tmp_path, make_spec):
    from commgnn.core.errors import InputError
    from commgnn.train.loop import RunPaths, prepare_staging

    out = tmp_path / "run"
    out.mkdir()
    (out / "epochs.jsonl").write_text('{"epoch": 0}\n{"epoch": 1, "ti\n')  # cut short
    paths = RunPaths(dataset="d", partition="p", out=str(out), checkpoints=str(tmp_path))
    with pytest.raises(InputError) as caught:
        prepare_staging(make_spec(epochs=3), paths)
    assert str(caught.value).startswith(f"{out / 'epochs.jsonl'}:2: corrupt record (")
    assert not paths.staging.exists()
