"""scripts/gpu-check's parts that need no GPU: which wheels to prepare, the configs it
runs, the counts check read from pytest's JUnit XML, and the report."""

from __future__ import annotations

import importlib.machinery
import importlib.util
from pathlib import Path

import pytest
import yaml

from commgnn.core.config import load_config

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def gpu_check():
    loader = importlib.machinery.SourceFileLoader("gpu_check", str(REPO / "scripts/gpu-check"))
    spec = importlib.util.spec_from_loader("gpu_check", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_the_wheels_leave_out_torch_and_what_the_gpu_machine_has(gpu_check, tmp_path):
    freeze = ["torch==2.13.0", "triton==3.6.0", "nvidia-nccl-cu13==2.28", "pymetis==2025.2.2",
              "Snakemake==9.27.1", "numpy==2.3.0", "ruamel.yaml==0.18.6", "# comment",
              "commgnn==0.1.0"]
    have = tmp_path / "have.txt"
    have.write_text("numpy==2.5.2\nruamel_yaml==0.18.0\n")
    assert gpu_check.read_have(have) == {"numpy", "ruamel-yaml"}
    assert gpu_check.wanted_packages(freeze, gpu_check.read_have(have)) == [
        "pymetis==2025.2.2", "Snakemake==9.27.1"]


def test_the_configs_it_runs_validate(gpu_check, tmp_path):
    base = yaml.safe_load((REPO / "config.yaml").read_text())
    sliced = gpu_check.device_config(base, "cuda", True, tmp_path / "r")
    assert sliced["training"]["device"] == "cuda"
    assert {s for e in sliced["experiments"] for s in e["systems"]} == \
        {s for e in base["experiments"] for s in e["systems"]}  # every system kept
    assert all(e["networks"] == ["10gbe-dilated"] for e in sliced["experiments"])
    assert base["training"].get("device") is None  # the default config is untouched
    for name, config in (("slice", sliced),
                         ("products", gpu_check.products_config("cuda", 300000, tmp_path))):
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(config))
        assert load_config(path)["training"]["device"] == "cuda"


JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="tests.train.test_devices" name="test_four[p3]" time="3.1"/>
<testcase classname="tests.train.test_devices" name="test_four[hopgnn]" time="2.0">
<failure message="AssertionError: DataFrame are different&#10;more">trace</failure></testcase>
<testcase classname="tests.train.test_devices" name="test_two[p3]" time="0">
<skipped message="needs two CUDA GPUs"/></testcase>
</testsuite></testsuites>"""


def test_the_report_says_what_passed_and_what_ran(gpu_check, tmp_path):
    junit = tmp_path / "junit.xml"
    junit.write_text(JUNIT)
    checks = gpu_check.count_checks(junit)
    assert checks == [
        {"test": "test_devices::test_four[p3]", "outcome": "passed", "why": ""},
        {"test": "test_devices::test_four[hopgnn]", "outcome": "failed",
         "why": "AssertionError: DataFrame are different"},
        {"test": "test_devices::test_two[p3]", "outcome": "skipped",
         "why": "needs two CUDA GPUs"}]
    runs = [{"system": "default", "mean_epoch_time_s": "2.0", "mean_epoch_time_raw_s": "2.0",
             "clock": "accelerator, emulated network", "time_dilation": "1.0"},
            {"system": "rapidgnn", "mean_epoch_time_s": "0.5", "mean_epoch_time_raw_s": "0.5"}]
    assert gpu_check.speedup(runs) == 4.0
    report = {"date": "2026-11-26 09:00 UTC", "budget_s": 480, "seconds": 401.0,
              "commit": "abc", "products_nodes": 300000,
              "machine": {"gpus": ["NVIDIA H100 80GB HBM3"], "driver": "580", "cpus": 16,
                          "torch": "2.11.0", "cuda": "13.0", "python": "3.12.3",
                          "device": "cuda"},
              "stages": {"tests": {"status": "failed (exit 1)", "seconds": 90.0,
                                   "limit_s": 140.0}},
              "count_checks": checks, "products_runs": runs, "products_speedup": 4.0}
    text = gpu_check.report_text(report)
    assert "NVIDIA H100 80GB HBM3; driver 580; 16 CPUs; torch 2.11.0 (CUDA 13.0)" in text
    assert "## Counts equal to the CPU (1 passed, 1 failed, 1 skipped)" in text
    assert "| tests | failed (exit 1) | 90.0 | 140.0 |" in text
    assert "products-like at 300000 nodes" in text and "(target time): 4×" in text
    assert "| default |  |  | accelerator, emulated network | 1 | 2 | 2 |" in text


def test_stages_share_the_budget_and_record_timeouts(gpu_check, tmp_path, monkeypatch):
    monkeypatch.setattr(gpu_check, "SHARES", {"install": 0.1, "tests": 0.3, "comm": 0.6})
    monkeypatch.setattr(gpu_check, "MIN_STAGE_S", 0.1)
    stages = gpu_check.Stages(3.0, tmp_path)
    assert stages.run("install", ["true"])
    assert 0.8 < stages.allowance("tests") <= 1.0  # 0.3 / (0.3 + 0.6) of what is left
    assert not stages.run("comm", ["sleep", "30"])  # 2/3 of ~3 s: timed out
    assert stages.results["comm"]["status"].startswith("timed out after")
    assert stages.results["install"]["status"] == "passed"
    assert (tmp_path / "comm.log").read_text().startswith("$ sleep 30")
    spent = gpu_check.Stages(0.05, tmp_path)
    assert not spent.run("tests", ["true"])  # too little left: not started
    assert spent.results["tests"] == {"status": "skipped", "seconds": 0.0,
                                      "why": "no time left in the budget", "log": "tests.log"}


def test_the_default_budget_fits_each_stage_as_measured_on_an_h200(gpu_check, tmp_path,
                                                                   monkeypatch):
    """The stages' times on one H200 (2026-11-30): with the default budget of 480 s each
    stage's allowance, what the stages before it left over included, holds it."""
    measured = {"install": 9.4, "tests": 112.4, "comm": 10.7, "pipeline": 254.0,
                "products": 54.5}
    clock = [0.0]
    monkeypatch.setattr(gpu_check.time, "monotonic", lambda: clock[0])
    stages = gpu_check.Stages(480.0, tmp_path)
    for name, seconds in measured.items():
        assert stages.allowance(name) > seconds, name
        clock[0] += seconds
        stages.results[name] = {"status": "passed"}
    assert stages.left() > 30.0  # the slack over the measured total (441 s)


def test_prepare_leaves_out_what_a_wheel_holds_for_other_platforms(gpu_check, tmp_path):
    """pulp's wheel keeps only x86-64 Linux's solver, its RECORD says so, and pip installs it."""
    import subprocess
    import sys
    import zipfile

    wheel = tmp_path / "pulp-3.3.2-py3-none-any.whl"
    files = {"pulp/__init__.py": "VERSION = '3.3.2'\n",
             "pulp/solverdir/cbc/linux/i64/cbc": "x86-64",
             "pulp/solverdir/cbc/linux/arm64/cbc": "arm",
             "pulp/solverdir/cbc/osx/i64/cbc": "osx", "pulp/solverdir/cbc/win/i64/cbc.exe": "win",
             "pulp-3.3.2.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: true"
                                            "\nTag: py3-none-any\n",
             "pulp-3.3.2.dist-info/METADATA": "Metadata-Version: 2.1\nName: pulp\nVersion: 3.3.2\n"}
    record = "".join(f"{name},,\n" for name in files) + "pulp-3.3.2.dist-info/RECORD,,\n"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
        archive.writestr("pulp-3.3.2.dist-info/RECORD", record)
    other = tmp_path / "six-1.0-py3-none-any.whl"
    other.write_bytes(b"untouched")
    assert gpu_check.strip_foreign(wheel) == 3
    assert gpu_check.strip_foreign(other) == 0 and other.read_bytes() == b"untouched"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        kept_record = archive.read("pulp-3.3.2.dist-info/RECORD").decode()
    assert {n for n in names if "solverdir" in n} == {"pulp/solverdir/cbc/linux/i64/cbc"}
    assert "arm64" not in kept_record and "linux/i64/cbc,," in kept_record
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps",
                    "--target", str(tmp_path / "site"), str(wheel)], check=True)
    assert (tmp_path / "site/pulp/solverdir/cbc/linux/i64/cbc").read_text() == "x86-64"
    assert not (tmp_path / "site/pulp/solverdir/cbc/osx").exists()
