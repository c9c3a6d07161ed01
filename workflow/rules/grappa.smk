# Grappa's tables and figures (one module each in src/commgnn/report/figures/), built when
# the experiment matrix has grappa runs. Times are target times (raw ÷ time dilation).
from pathlib import Path


def has_grappa():
    return any(spec.base_system == "grappa" for spec in RUNS.values())


def conventional_partitions():
    """METIS and random partitionings (Grappa Table 1's conventional layouts)."""
    return [
        path
        for path in all_partitions()
        if config["partitionings"][Path(path).name]["method"] != "chunk"
    ]


def grappa_targets():
    if not has_grappa():
        return []
    names = ["grappa_table3", "grappa_table4", "grappa_table7", "grappa_table8", "grappa_fig4"]
    if conventional_partitions():
        names.append("grappa_table1")
    return [f"{RESULTS}/figures/{name}.png" for name in names]


rule grappa_table1:
    input:
        conventional_partitions(),
    output:
        report(
            f"{RESULTS}/figures/grappa_table1.png",
            caption="../report/grappa_table1.rst",
            category="Grappa",
        ),
    params:
        cmd=COMMGNN,
    log:
        f"{RESULTS}/logs/figures/grappa_table1.log",
    conda:
        ENV
    shell:
        "{params.cmd} figure grappa_table1 --out {output} {input} > {log} 2>&1"


rule grappa_from_runs:
    input:
        f"{RESULTS}/tables/runs.csv",
    output:
        report(
            f"{RESULTS}/figures/{{name}}.png",
            caption="../report/{name}.rst",
            category="Grappa",
        ),
    wildcard_constraints:
        name="grappa_table3|grappa_table4|grappa_table7|grappa_fig4",
    params:
        cmd=COMMGNN,
    log:
        f"{RESULTS}/logs/figures/{{name}}.log",
    conda:
        ENV
    shell:
        "{params.cmd} figure {wildcards.name} --out {output} {input} > {log} 2>&1"


rule grappa_table8:
    input:
        f"{RESULTS}/tables/runs.csv",
        f"{RESULTS}/tables/partition_stats.csv",
    output:
        report(
            f"{RESULTS}/figures/grappa_table8.png",
            caption="../report/grappa_table8.rst",
            category="Grappa",
        ),
    params:
        cmd=COMMGNN,
    log:
        f"{RESULTS}/logs/figures/grappa_table8.log",
    conda:
        ENV
    shell:
        "{params.cmd} figure grappa_table8 --out {output} {input} > {log} 2>&1"
