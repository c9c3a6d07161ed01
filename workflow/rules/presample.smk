# RapidGNN presampling: every worker's batches for every epoch, streamed to checksummed
# metadata blocks, plus per-epoch remote access frequencies (Figure 3's data).


rule presample:
    input:
        dataset=f"{RESULTS}/datasets/{{dataset}}",
        partition=f"{RESULTS}/partitions/{{dataset}}/{{partitioning}}",
    output:
        directory(f"{RESULTS}/presample/{{dataset}}/{{partitioning}}/b{{batch}}_s{{seed}}"),
    params:
        fanouts=",".join(map(str, TRAINING["fanouts"])),
        epochs=presample_epochs,
        cmd=COMMGNN,
    log:
        f"{RESULTS}/logs/presample/{{dataset}}/{{partitioning}}/b{{batch}}_s{{seed}}.log",
    benchmark:
        f"{RESULTS}/benchmarks/presample/{{dataset}}/{{partitioning}}/b{{batch}}_s{{seed}}.tsv"
    threads: 2
    resources:
        mem_mb=lambda w: cluster.presample_resources(
            dataset_shape(w.dataset), presample_epochs(w), CLUSTER
        )["mem_mb"],
        runtime=lambda w: cluster.presample_resources(
            dataset_shape(w.dataset), presample_epochs(w), CLUSTER
        )["runtime"],
    conda:
        ENV
    shell:
        "{params.cmd} presample --dataset {input.dataset} --partition {input.partition} "
        "--out {output} --fanouts {params.fanouts} --batch-size {wildcards.batch} "
        "--seed {wildcards.seed} --epochs {params.epochs} --threads {threads} > {log} 2>&1"
