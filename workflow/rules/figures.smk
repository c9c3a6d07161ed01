# Figures the systems of the experiment matrix declare (`System.figures`): name -> inputs;
# one is built only where the config builds every kind of product it reads (e.g.
# GreenDyGNN's calibration and policy figures need a run with `controller: dqn`).
SYSTEM_FIGURES = declared_figures([spec.base_system for spec in RUNS.values()],
                                  figure_input_paths())


# Figures a system declares (`System.figures` in its module, e.g. RapidGNN's Table 2 and
# Figures 3-9, Grappa's tables): one module each in its paper's package
# (src/commgnn/systems/<paper>/figures/), one job each, built when the experiment matrix
# runs the system. Each writes the figure as PNG and PDF and its data as CSV; times in them
# are target times (raw ÷ time dilation). The report caption (report/system_figure.rst: a
# caption file cannot be a wildcard) is the figure's own, <name>.rst beside its module
# (commgnn.catalog.figure_caption), then `params.setting`: the datasets' scale,
# workers, networks with their dilation, seeds and epochs of the runs behind the figure.


rule system_figure:
    input:
        system_figure_inputs,
    output:
        png=report(
            f"{RESULTS}/figures/{{name}}.png",
            caption="../report/system_figure.rst",
            category="Systems",
        ),
        pdf=f"{RESULTS}/figures/{{name}}.pdf",
        csv=f"{RESULTS}/figures/{{name}}.csv",
    wildcard_constraints:
        name="|".join(SYSTEM_FIGURES) or "^$",
    params:
        cmd=COMMGNN,
        caption=lambda w: figure_caption(w.name),
        setting=lambda w: figure_setting(w.name),
        systems=SYSTEM_DECLARATIONS,
    log:
        f"{RESULTS}/logs/figures/{{name}}.log",
    resources:
        **light_resources(),
    conda:
        ENV
    shell:
        "{params.cmd} figure {wildcards.name} --systems {params.systems:q} --out {output.png} "
        "{input} > {log} 2>&1"


# Every system that ran the same workload side by side (commgnn/report/figures/compare.py):
# the
# figure draws the workloads with the most systems, the CSV holds every workload.
rule compare:
    input:
        f"{RESULTS}/tables/runs.csv",
    output:
        png=report(
            f"{RESULTS}/figures/compare.png",
            caption="../report/compare.rst",
            category="Comparison",
        ),
        pdf=f"{RESULTS}/figures/compare.pdf",
        csv=report(
            f"{RESULTS}/figures/compare.csv",
            caption="../report/compare.rst",
            category="Comparison",
        ),
    params:
        cmd=COMMGNN,
        setting=lambda w: describe_all_runs(),
        systems=SYSTEM_DECLARATIONS,
    log:
        f"{RESULTS}/logs/figures/compare.log",
    resources:
        **light_resources(),
    conda:
        ENV
    shell:
        "{params.cmd} figure compare --systems {params.systems:q} --out {output.png} {input} "
        "> {log} 2>&1"


# The claims ledger (report/claims.py): each paper's headline claims against the figure
# tables this run built (a claim whose figure was not built is "not measured").
rule claims:
    input:
        claims_inputs,
    output:
        png=report(
            f"{RESULTS}/figures/claims.png",
            caption="../report/claims.rst",
            category="Comparison",
        ),
        pdf=f"{RESULTS}/figures/claims.pdf",
        csv=report(
            f"{RESULTS}/figures/claims.csv",
            caption="../report/claims.rst",
            category="Comparison",
        ),
    params:
        cmd=COMMGNN,
    log:
        f"{RESULTS}/logs/figures/claims.log",
    resources:
        **light_resources(),
    conda:
        ENV
    shell:
        "{params.cmd} figure claims --out {output.png} {input} > {log} 2>&1"


# The figure index (commgnn/figure_index.py): the papers' figures this run built,
# each with its rule and output.
rule figure_index:
    input:
        lambda w: [f"{RESULTS}/figures/{name}.csv" for name in [*SYSTEM_FIGURES, *SHARED_FIGURES]],
    output:
        png=report(
            f"{RESULTS}/figures/figure_index.png",
            caption="../report/figure_index.rst",
            category="Comparison",
        ),
        pdf=f"{RESULTS}/figures/figure_index.pdf",
        csv=f"{RESULTS}/figures/figure_index.csv",
    params:
        cmd=COMMGNN,
    log:
        f"{RESULTS}/logs/figures/figure_index.log",
    resources:
        **light_resources(),
    conda:
        ENV
    shell:
        "{params.cmd} figure figure_index --out {output.png} {input} > {log} 2>&1"
