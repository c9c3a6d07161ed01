# DistDGL (system `distdgl`): each partition converted to DGL's format by DGL's own
# partition_graph, given commgnn's node assignment; run with the DGL environment's
# interpreter (`bash setup.sh --dgl`, or COMMGNN_DGL_PYTHON), never the main one.
from snakemake.exceptions import WorkflowError

from commgnn.distdgl import SCRIPTS as DGL_SCRIPTS
from commgnn.systems.distdgl import DGL_PYTHON_ENV, DGL_SETUP, dgl_python


def _dgl_python(wildcards):
    """The DGL interpreter: $COMMGNN_DGL_PYTHON (e.g. the conda env envs/dgl.yaml
    describes, which a conda file alone cannot build), else .venv-dgl."""
    found = dgl_python()
    if found is None:
        raise WorkflowError(f"system 'distdgl' needs the DGL environment: run `{DGL_SETUP}` "
                            f"(or set {DGL_PYTHON_ENV})")
    return shlex.quote(str(found))


rule dgl_partition:
    input:
        dataset=f"{RESULTS}/datasets/{{dataset}}",
        partition=f"{RESULTS}/partitions/{{dataset}}/{{partitioning}}",
    output:
        directory(f"{RESULTS}/dgl_partitions/{{dataset}}/{{partitioning}}"),
    params:
        python=_dgl_python,
        script=shlex.quote(str(DGL_SCRIPTS / "convert.py")),
    log:
        f"{RESULTS}/logs/dgl_partition/{{dataset}}/{{partitioning}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/dgl_partition/{{dataset}}/{{partitioning}}.tsv"
    resources:
        mem_mb=lambda w: cluster.partition_resources(dataset_shape(w.dataset), CLUSTER)["mem_mb"],
        runtime=lambda w: cluster.partition_resources(dataset_shape(w.dataset), CLUSTER)["runtime"],
    shell:
        "{params.python} {params.script} --dataset {input.dataset} "
        "--partition {input.partition} --out {output} > {log} 2>&1"


# A distdgl cell without the DGL environment stops the workflow before any job.
if workflow.is_main_process and any(s.base_system == "distdgl" for s in RUNS.values()) \
        and dgl_python() is None:
    _config_failure(HostError(f"system 'distdgl' needs the DGL environment: run "
                              f"`{DGL_SETUP}` (or set {DGL_PYTHON_ENV})"))
