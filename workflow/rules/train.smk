# Training: one job per experiment cell (system x dataset x partitioning x model x batch
# size x network x seed), then one table of every run's summary. A run's inputs beyond
# the dataset and partition are what its system declares it needs (`System.needs`).
#
# A failed training job is retried once (`retries`): the run resumes from its last
# checkpoint (training.resume), and its summary records the attempt, the epoch it resumed
# from and the first error of the failed attempt, whose log is kept beside the run's
# (`<log>.attempt<N>`; Snakemake empties a job's log before each attempt).

TRAIN_LOG = f"{RESULTS}/{paths.log_of('train', paths.RUN)}"


rule train:
    input:
        unpack(train_inputs),
    # update: Snakemake must not delete a finished run before a job that extends it (more
    # epochs resume from the checkpoint); `commgnn train` replaces it only once the
    # extended run is complete, and Snakemake restores it if the job fails.
    output:
        update(directory(f"{RESULTS}/{paths.RUN}")),
    params:
        spec=lambda w: run_spec_arg(w),
        checkpoints=lambda w: f"{RESULTS}/{paths.checkpoints_dir(run_id(w))}",
        inputs=input_args,
        dilation=dilation_arg,
        launch=train_launch,
        cmd=COMMGNN,
    log:
        TRAIN_LOG,
    benchmark:
        f"{RESULTS}/{paths.benchmark_of('train', paths.RUN)}"
    # One task per worker on a cluster; the whole machine on a workstation.
    threads: lambda w: whole_machine(train_resources(w)["cpus_per_task"])
    resources:
        tasks=lambda w: train_resources(w)["tasks"],
        cpus_per_task=lambda w: train_resources(w)["cpus_per_task"],
        mem_mb=lambda w: train_resources(w)["mem_mb"],
        runtime=lambda w: train_resources(w)["runtime"],
        nodes=lambda w: train_resources(w).get("nodes", 1),
        gpu=lambda w: train_resources(w).get("gpu", 0),
        tasks_per_gpu=lambda w: train_resources(w).get("tasks_per_gpu", 0),
        mpi=lambda w: train_resources(w).get("mpi"),
        attempt=lambda w, attempt: attempt,
    retries: 1
    conda:
        ENV
    shell:
        "[ {resources.attempt} -gt 1 ] || rm -f {log}.attempt*; "
        "{params.launch} {params.cmd} train --spec {params.spec} --dataset {input.dataset} "
        "--partition {input.partition} --out {output} --checkpoints {params.checkpoints} "
        "{params.inputs} {params.dilation} --attempt {resources.attempt} "
        "$([ {resources.attempt} -gt 1 ] && echo --failed-log {log}.attempt$(({resources.attempt} - 1))) "
        "> {log} 2>&1 || {{ code=$?; cp {log} {log}.attempt{resources.attempt}; exit $code; }}"


# The compute-only step of one workload (dataset, model, fan-outs, batch, workers) on its
# workers at once: every run of the workload divides by it (time dilation auto).
rule dilation:
    input:
        dataset=f"{RESULTS}/{paths.DATASET}",
    output:
        f"{RESULTS}/{paths.DILATION}",
    params:
        spec=workload_spec_arg,
        launch=lambda w, resources: cluster.srun_prefix(dict(resources.items())),
        cmd=COMMGNN,
    log:
        f"{RESULTS}/{paths.log_of('dilation', paths.DILATION)}",
    threads: lambda w: whole_machine(dilation_resources(w)["cpus_per_task"])
    resources:
        tasks=lambda w: dilation_resources(w)["tasks"],
        cpus_per_task=lambda w: dilation_resources(w)["cpus_per_task"],
        mem_mb=lambda w: dilation_resources(w)["mem_mb"],
        runtime=lambda w: dilation_resources(w)["runtime"],
        nodes=lambda w: dilation_resources(w).get("nodes", 1),
        gpu=lambda w: dilation_resources(w).get("gpu", 0),
        tasks_per_gpu=lambda w: dilation_resources(w).get("tasks_per_gpu", 0),
        mpi=lambda w: dilation_resources(w).get("mpi"),
    conda:
        ENV
    shell:
        "{params.launch} {params.cmd} dilation --spec {params.spec} --dataset {input.dataset} "
        "--out {output} > {log} 2>&1"


rule runs_table:
    input:
        all_runs(),
    output:
        report(
            f"{RESULTS}/{paths.RUNS_TABLE}",
            caption="../report/runs.rst",
            category="Training",
        ),
    params:
        cmd=COMMGNN,
    log:
        f"{RESULTS}/{paths.log_of('tables', paths.RUNS_TABLE)}",
    resources:
        **light_resources(),
    conda:
        ENV
    shell:
        "{params.cmd} runs-table --out {output} {input} > {log} 2>&1"
