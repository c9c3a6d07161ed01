# DistDGL (system `distdgl`): each partition converted to DGL's format by DGL's own
# partition_graph, given commgnn's node assignment; run with the DGL environment's
# interpreter (`bash setup.sh --dgl`, or COMMGNN_DGL_PYTHON), never the main one.
#
# Included by the Snakefile (every systems/<name>/rules.smk), after workflow/rules/
# common.smk; its functions and the products it adds are in common.smk beside it.

# The DGL environment (systems that need a `dgl_partition`, e.g. distdgl): its interpreter
# for the conversion rule, and a run that needs it stops before any job without it.


include: "common.smk"

rule dgl_partition:
    input:
        dataset=f"{RESULTS}/datasets/{{dataset}}",
        partition=f"{RESULTS}/partitions/{{dataset}}/{{partitioning}}",
    output:
        directory(f"{RESULTS}/dgl_partitions/{{dataset}}/{{partitioning}}"),
    params:
        python=dgl_interpreter,
        script=shlex.quote(str(DGL_SCRIPTS / "convert.py")),
    # Documents the software; the command runs the DGL interpreter itself (dgl and
    # torchdata need a second, --no-deps step that a conda file cannot say).
    conda:
        str(REPO / "envs" / "dgl.yaml")
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
