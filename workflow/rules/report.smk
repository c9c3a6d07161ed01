# Figures: one module per figure in src/commgnn/report/figures/, one rule each.


rule rapidgnn_fig3:
    input:
        all_presamples(),
    output:
        report(
            f"{RESULTS}/figures/rapidgnn_fig3.png",
            caption="../report/rapidgnn_fig3.rst",
            category="RapidGNN",
        ),
    params:
        cmd=COMMGNN,
    log:
        f"{RESULTS}/logs/figures/rapidgnn_fig3.log",
    resources:
        **light_resources(),
    conda:
        ENV
    shell:
        "{params.cmd} figure rapidgnn_fig3 --out {output} {input} > {log} 2>&1"


rule rapidgnn_fig5:
    input:
        f"{RESULTS}/tables/runs.csv",
    output:
        report(
            f"{RESULTS}/figures/rapidgnn_fig5.png",
            caption="../report/rapidgnn_fig5.rst",
            category="RapidGNN",
        ),
    params:
        cmd=COMMGNN,
    log:
        f"{RESULTS}/logs/figures/rapidgnn_fig5.log",
    resources:
        **light_resources(),
    conda:
        ENV
    shell:
        "{params.cmd} figure rapidgnn_fig5 --out {output} {input} > {log} 2>&1"
