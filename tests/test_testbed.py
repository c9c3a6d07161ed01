"""What made a result (commgnn.core.testbed): the generator a dataset records at build time,
the commit, and the testbed line summaries and the ledger read."""

from __future__ import annotations

import json
import subprocess
import sys

from commgnn.core import testbed
from commgnn.data.store import write_dataset
from commgnn.data.synthetic import generate_synthetic


def test_a_dataset_records_its_generator_and_a_run_reads_it_back(tmp_path):
    spec = {"source": "synthetic", "preset": "tiny", "nodes": 300, "seed": 1}
    ds = generate_synthetic(spec, name="t")
    write_dataset(ds, tmp_path / "ds", source=spec, generator=testbed.generator_of(spec))
    assert json.loads((tmp_path / "ds" / "meta.json").read_text())["generator"] == \
        testbed.SYNTHETIC_GENERATOR
    made = testbed.run_provenance(tmp_path / "ds")
    assert made["generator"] == testbed.SYNTHETIC_GENERATOR
    assert made["testbed"] == "; ".join((testbed.SYNTHETIC_GENERATOR, testbed.CONGESTION_MODEL,
                                         testbed.DILATION_POLICY, testbed.ENERGY_MODEL,
                                         testbed.EVALUATION_SAMPLE))
    write_dataset(ds, tmp_path / "old", source=spec)  # as datasets were before
    assert testbed.run_provenance(tmp_path / "old")["generator"] == "unrecorded"
    assert testbed.dataset_generator(tmp_path / "missing") == "unrecorded"


def test_public_data_is_named_by_its_source():
    assert testbed.generator_of({"source": "rmat", "scale": 10}) == testbed.RMAT_GENERATOR
    assert testbed.generator_of({"source": "planetoid", "name": "cora"}) == \
        "planetoid (public data)"


def test_the_commit_is_the_checkouts():
    here = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=10"],
                          cwd=testbed.__file__.rsplit("/", 1)[0], capture_output=True,
                          text=True)
    expected = here.stdout.strip() if here.returncode == 0 else "unknown"
    assert testbed.commit() == expected


def test_the_cli_records_the_generator(tmp_path):
    spec = json.dumps({"source": "synthetic", "preset": "tiny", "nodes": 200, "seed": 0})
    subprocess.run([sys.executable, "-m", "commgnn", "dataset", "--name", "t", "--spec", spec,
                    "--out", str(tmp_path / "ds")], check=True, capture_output=True)
    meta = json.loads((tmp_path / "ds" / "meta.json").read_text())
    assert meta["generator"] == testbed.SYNTHETIC_GENERATOR
