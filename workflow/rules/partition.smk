# Partitioning (METIS, random, Grappa chunks) and the partition-size table (Grappa Table 9).


rule partition:
    input:
        f"{RESULTS}/datasets/{{dataset}}",
    output:
        directory(f"{RESULTS}/partitions/{{dataset}}/{{partitioning}}"),
    params:
        spec=lambda w: spec_arg("partitionings", w.partitioning),
        cmd=COMMGNN,
    conda:
        ENV
    log:
        f"{RESULTS}/logs/partition/{{dataset}}/{{partitioning}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/partition/{{dataset}}/{{partitioning}}.tsv"
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
            f"{RESULTS}/tables/partition_stats.csv",
            caption="../report/partition_stats.rst",
            category="Partitioning",
        ),
    params:
        cmd=COMMGNN,
    conda:
        ENV
    log:
        f"{RESULTS}/logs/tables/partition_stats.log",
    resources:
        **light_resources(),
    shell:
        "{params.cmd} partition-table --out {output} {input} > {log} 2>&1"
