# DistDGL (system `distdgl`): each partition converted to DGL's format by DGL's own
# partition_graph, given commgnn's node assignment; run with the DGL environment's
# interpreter (`bash setup.sh --dgl`, or COMMGNN_DGL_PYTHON), never the main one.
from snakemake.exceptions import WorkflowError
from snakemake_interface_executor_plugins.settings import DeploymentMethod

from commgnn.distdgl import SCRIPTS as DGL_SCRIPTS
from commgnn.systems.distdgl import DGL_PYTHON_ENV, DGL_SETUP, dgl_python


def _dgl_python(wildcards):
    """The DGL interpreter: under --use-conda the rule's own env (envs/dgl.yaml), else
    $COMMGNN_DGL_PYTHON or .venv-dgl."""
    if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method:
        return "python"
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
    conda:
        "../../envs/dgl.yaml"
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
