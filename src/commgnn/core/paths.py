"""Where the pipeline puts each product under its results directory: one template per
kind, written once.

Each template is a path relative to the results directory with Snakemake-style
wildcards (``{dataset}``, ``{partitioning}``, …): ``f"{RESULTS}/{PARTITION}"`` is a rule's
output pattern, and :func:`fill` makes one product's path. A run's id (:data:`RUN_ID`,
``RunSpec.run_id``) is its directory under ``runs/`` (and its checkpoints' under
``checkpoints/``). A step's log and benchmark mirror its product:
``logs/<step>/<product>.log``, ``benchmarks/<step>/<product>.tsv`` (:func:`log_of`,
:func:`benchmark_of`).
"""

from __future__ import annotations

#: A run's id: its directory under ``runs/`` (and ``checkpoints/``).
RUN_ID = "{system}/{dataset}/{partitioning}/{model}_b{batch}_{network}_s{seed}"

RAW = "raw/{dataset}"
DATASET = "datasets/{dataset}"
PARTITION = "partitions/{dataset}/{partitioning}"
PRESAMPLE = "presample/{dataset}/{partitioning}/b{batch}_s{seed}"
RUN = f"runs/{RUN_ID}"
CHECKPOINTS = f"checkpoints/{RUN_ID}"
DILATION = "dilation/{dataset}/{workload}.json"
PARTITION_TABLE = "tables/partition_stats.csv"
RUNS_TABLE = "tables/runs.csv"
FIGURE = "figures/{name}.png"


def fill(template: str, **values: object) -> str:
    """``template`` with every wildcard given its value."""
    return template.format(**values)


def run_dir(run_id: str) -> str:
    """A run's directory (:data:`RUN` of its id)."""
    return f"runs/{run_id}"


def checkpoints_dir(run_id: str) -> str:
    """A run's checkpoints (:data:`CHECKPOINTS` of its id)."""
    return f"checkpoints/{run_id}"


def log_of(step: str, template: str) -> str:
    """The log of ``step`` making the product ``template`` (its extension dropped)."""
    return f"logs/{step}/{_stem(template)}.log"


def benchmark_of(step: str, template: str) -> str:
    """The benchmark record (Snakemake's) of ``step`` making the product ``template``."""
    return f"benchmarks/{step}/{_stem(template)}.tsv"


def _stem(template: str) -> str:
    """The product's path without its kind's folder and its extension."""
    rest = template.split("/", 1)[1]
    return rest.rsplit(".", 1)[0] if "." in rest.rsplit("/", 1)[-1] else rest
