# Training: one job per experiment cell (system x dataset x partitioning x model x batch
# size x network x seed), then one table of every run's summary. A run's inputs beyond
# the dataset and partition are what its system declares it needs (`System.needs`).


rule train:
    input:
        unpack(train_inputs),
    output:
        directory(
            f"{RESULTS}/runs/{{system}}/{{dataset}}/{{partitioning}}/"
            "{model}_b{batch}_{network}_s{seed}"
        ),
    params:
        spec=lambda w: run_spec_arg(w),
        checkpoints=lambda w: f"{RESULTS}/checkpoints/{run_id(w)}",
        inputs=input_args,
        cmd=COMMGNN,
    log:
        f"{RESULTS}/logs/train/{{system}}/{{dataset}}/{{partitioning}}/"
        "{model}_b{batch}_{network}_s{seed}.log",
    benchmark:
        (
            f"{RESULTS}/benchmarks/train/{{system}}/{{dataset}}/{{partitioning}}/"
            "{model}_b{batch}_{network}_s{seed}.tsv"
        )
    threads: workflow.cores
    conda:
        ENV
    shell:
        "{params.cmd} train --spec {params.spec} --dataset {input.dataset} "
        "--partition {input.partition} --out {output} --checkpoints {params.checkpoints} "
        "{params.inputs} > {log} 2>&1"


rule runs_table:
    input:
        all_runs(),
    output:
        report(
            f"{RESULTS}/tables/runs.csv",
            caption="../report/runs.rst",
            category="Training",
        ),
    params:
        cmd=COMMGNN,
    log:
        f"{RESULTS}/logs/tables/runs.log",
    conda:
        ENV
    shell:
        "{params.cmd} runs-table --out {output} {input} > {log} 2>&1"
