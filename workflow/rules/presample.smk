# RapidGNN presampling: every worker's batches for every epoch, streamed to checksummed
# metadata blocks, plus per-epoch remote access frequencies (Figure 3's data).


rule presample:
    input:
        dataset=f"{RESULTS}/{paths.DATASET}",
        partition=f"{RESULTS}/{paths.PARTITION}",
    output:
        directory(f"{RESULTS}/{paths.PRESAMPLE}"),
    params:
        fanouts=",".join(map(str, TRAINING["fanouts"])),
        epochs=presample_epochs,
        cmd=COMMGNN,
    log:
        f"{RESULTS}/{paths.log_of('presample', paths.PRESAMPLE)}",
    benchmark:
        f"{RESULTS}/{paths.benchmark_of('presample', paths.PRESAMPLE)}"
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
