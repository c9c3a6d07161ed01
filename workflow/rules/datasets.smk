# Datasets: download (network sources only, run on the submit host) and conversion or
# generation into the common on-disk format (src/commgnn/data/store.py).


localrules:
    download_dataset,


rule download_dataset:
    output:
        directory(f"{RESULTS}/{paths.RAW}"),
    params:
        spec=lambda w: spec_arg("datasets", w.dataset),
        cmd=COMMGNN,
    conda:
        ENV
    log:
        f"{RESULTS}/{paths.log_of('download', paths.RAW)}",
    shell:
        "{params.cmd} download --name {wildcards.dataset} --spec {params.spec} "
        "--out {output} > {log} 2>&1"


rule dataset:
    input:
        raw=lambda w: downloads(w.dataset),
    output:
        directory(f"{RESULTS}/{paths.DATASET}"),
    params:
        spec=lambda w: spec_arg("datasets", w.dataset),
        raw=lambda w, input: f"--raw {input.raw}" if input.raw else "",
        cmd=COMMGNN,
    conda:
        ENV
    log:
        f"{RESULTS}/{paths.log_of('dataset', paths.DATASET)}",
    benchmark:
        f"{RESULTS}/{paths.benchmark_of('dataset', paths.DATASET)}"
    resources:
        mem_mb=lambda w, attempt: cluster.dataset_resources(dataset_shape(w.dataset), CLUSTER)[
            "mem_mb"
        ]
        * attempt,
        runtime=lambda w: cluster.dataset_resources(dataset_shape(w.dataset), CLUSTER)["runtime"],
    shell:
        "{params.cmd} dataset --name {wildcards.dataset} --spec {params.spec} {params.raw} "
        "--out {output} > {log} 2>&1"
