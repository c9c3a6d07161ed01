# GreenDyGNN's control plane: calibrate (Algorithm 1) -> train_policy (Double DQN in the
# calibrated simulator) -> the `greendygnn` runs with `controller: dqn`; validate_simulator
# (Figure 8) checks the simulator against held-out real runs.
#
# Included by the Snakefile (every systems/<name>/rules.smk), after workflow/rules/
# common.smk; its functions and the products it adds are in common.smk beside it.


include: "common.smk"

rule calibrate:
    input:
        unpack(control_inputs),
    output:
        directory(f"{RESULTS}/control/{{dataset}}/{{partitioning}}/{{model}}_b{{batch}}_{{network}}/calibration"),
    params:
        spec=lambda w: shlex.quote(control_template(w).to_json()),
        settings=shlex.quote(json.dumps(CONTROL.get("calibration", {}), sort_keys=True)),
        dilation=dilation_arg,
        cmd=COMMGNN,
    log:
        f"{RESULTS}/logs/control/{{dataset}}/{{partitioning}}/{{model}}_b{{batch}}_{{network}}/calibrate.log",
    benchmark:
        f"{RESULTS}/benchmarks/control/{{dataset}}/{{partitioning}}/{{model}}_b{{batch}}_{{network}}/calibrate.tsv"
    threads: lambda w: whole_machine(control_resources(w, "calibration")["cpus_per_task"])
    resources:
        cpus_per_task=lambda w: control_resources(w, "calibration")["cpus_per_task"],
        mem_mb=lambda w: control_resources(w, "calibration")["mem_mb"],
        runtime=lambda w: control_resources(w, "calibration")["runtime"],
        gpu=lambda w: control_resources(w, "calibration").get("gpu", 0),
    conda:
        ENV
    shell:
        "{params.cmd} calibrate --spec {params.spec} --settings {params.settings} "
        "--dataset {input.dataset} --partition {input.partition} "
        "--presample {input.presample} {params.dilation} --out {output} > {log} 2>&1"


rule validate_simulator:
    input:
        unpack(control_inputs),
        calibration=f"{RESULTS}/control/{{dataset}}/{{partitioning}}/{{model}}_b{{batch}}_{{network}}/calibration",
    output:
        directory(f"{RESULTS}/control/{{dataset}}/{{partitioning}}/{{model}}_b{{batch}}_{{network}}/validation"),
    params:
        spec=lambda w: shlex.quote(control_template(w).to_json()),
        settings=shlex.quote(json.dumps(CONTROL.get("validation", {}), sort_keys=True)),
        dilation=dilation_arg,
        cmd=COMMGNN,
    log:
        f"{RESULTS}/logs/control/{{dataset}}/{{partitioning}}/{{model}}_b{{batch}}_{{network}}/validate.log",
    benchmark:
        f"{RESULTS}/benchmarks/control/{{dataset}}/{{partitioning}}/{{model}}_b{{batch}}_{{network}}/validate.tsv"
    threads: lambda w: whole_machine(control_resources(w, "validation")["cpus_per_task"])
    resources:
        cpus_per_task=lambda w: control_resources(w, "validation")["cpus_per_task"],
        mem_mb=lambda w: control_resources(w, "validation")["mem_mb"],
        runtime=lambda w: control_resources(w, "validation")["runtime"],
        gpu=lambda w: control_resources(w, "validation").get("gpu", 0),
    conda:
        ENV
    shell:
        "{params.cmd} validate-simulator --spec {params.spec} --settings {params.settings} "
        "--dataset {input.dataset} --partition {input.partition} "
        "--presample {input.presample} --calibration {input.calibration} {params.dilation} "
        "--out {output} > {log} 2>&1"


rule train_policy:
    input:
        calibration=f"{RESULTS}/control/{{dataset}}/{{partitioning}}/{{model}}_b{{batch}}_{{network}}/calibration",
    output:
        directory(f"{RESULTS}/control/{{dataset}}/{{partitioning}}/{{model}}_b{{batch}}_{{network}}/policy"),
    params:
        settings=shlex.quote(json.dumps(CONTROL.get("policy", {}), sort_keys=True)),
        cmd=COMMGNN,
    log:
        f"{RESULTS}/logs/control/{{dataset}}/{{partitioning}}/{{model}}_b{{batch}}_{{network}}/train_policy.log",
    benchmark:
        f"{RESULTS}/benchmarks/control/{{dataset}}/{{partitioning}}/{{model}}_b{{batch}}_{{network}}/train_policy.tsv"
    threads: 1
    resources:
        **light_resources(runtime=30),
    conda:
        ENV
    shell:
        "{params.cmd} train-policy --calibration {input.calibration} "
        "--settings {params.settings} --out {output} > {log} 2>&1"
