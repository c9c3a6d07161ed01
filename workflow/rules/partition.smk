# Partitioning (METIS, random, Grappa chunks) and the partition-size table (Grappa Table 9).


rule partition:
    input:
        f"{RESULTS}/{paths.DATASET}",
    output:
        directory(f"{RESULTS}/{paths.PARTITION}"),
    params:
        spec=lambda w: spec_arg("partitionings", w.partitioning),
        cmd=COMMGNN,
    conda:
        ENV
    log:
        f"{RESULTS}/{paths.log_of('partition', paths.PARTITION)}",
    benchmark:
        f"{RESULTS}/{paths.benchmark_of('partition', paths.PARTITION)}"
    resources:
        mem_mb=lambda w: cluster.partition_resources(dataset_shape(w.dataset), CLUSTER)["mem_mb"],
        runtime=lambda w: cluster.partition_resources(dataset_shape(w.dataset), CLUSTER)["runtime"],
    shell:
        "{params.cmd} partition --name {wildcards.partitioning} --spec {params.spec} "
        "--dataset {input} --out {output} > {log} 2>&1"


rule partition_table:
    input:
        all_partitions(),
    output:
        report(
            f"{RESULTS}/{paths.PARTITION_TABLE}",
            caption="../report/partition_stats.rst",
            category="Partitioning",
        ),
    params:
        cmd=COMMGNN,
    conda:
        ENV
    log:
        f"{RESULTS}/{paths.log_of('tables', paths.PARTITION_TABLE)}",
    resources:
        **light_resources(),
    shell:
        "{params.cmd} partition-table --out {output} {input} > {log} 2>&1"
