"""The results layout: one template per product, the run id among them."""

from __future__ import annotations

from commgnn.core import paths
from commgnn.core.spec import RunSpec


def test_a_runs_directory_is_its_id_under_runs():
    spec = RunSpec(system="rapidgnn", dataset="d", partitioning="metis4", model="sage",
                   batch_size=64, network="10gbe", network_spec={"preset": "10gbe"}, seed=3,
                   workers=4)
    assert spec.run_id == "rapidgnn/d/metis4/sage_b64_10gbe_s3"
    assert paths.run_dir(spec.run_id) == paths.fill(
        paths.RUN, system="rapidgnn", dataset="d", partitioning="metis4", model="sage",
        batch=64, network="10gbe", seed=3) == "runs/rapidgnn/d/metis4/sage_b64_10gbe_s3"
    assert paths.checkpoints_dir(spec.run_id) == "checkpoints/" + spec.run_id


def test_a_steps_log_and_benchmark_mirror_its_product():
    assert paths.log_of("presample", paths.PRESAMPLE) == \
        "logs/presample/{dataset}/{partitioning}/b{batch}_s{seed}.log"
    assert paths.benchmark_of("train", paths.RUN) == f"benchmarks/train/{paths.RUN_ID}.tsv"
    assert paths.log_of("dilation", paths.DILATION) == "logs/dilation/{dataset}/{workload}.log"
    assert paths.log_of("tables", paths.RUNS_TABLE) == "logs/tables/runs.log"
