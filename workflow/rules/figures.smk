# Figures a system declares (`System.figures` in its module, e.g. RapidGNN's Table 2 and
# Figures 3-9, Grappa's tables): one module each in src/commgnn/report/figures/, one job
# each, built when the experiment matrix runs the system. Each writes the figure as PNG
# and PDF and its data as CSV; times in them are target times (raw ÷ time dilation). The
# report caption (report/system_figure.rst: a caption file cannot be a wildcard) is the
# figure's own, workflow/report/<name>.rst, then `params.setting`: the datasets' scale,
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
    log:
        f"{RESULTS}/logs/figures/{{name}}.log",
    resources:
        **light_resources(),
    conda:
        ENV
    shell:
        "{params.cmd} figure {wildcards.name} --out {output.png} {input} > {log} 2>&1"


# Every system that ran the same workload side by side (report/figures/compare.py): the
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
    log:
        f"{RESULTS}/logs/figures/compare.log",
    resources:
        **light_resources(),
    conda:
        ENV
    shell:
        "{params.cmd} figure compare --out {output.png} {input} > {log} 2>&1"
