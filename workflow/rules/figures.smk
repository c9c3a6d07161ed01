# Figures a system declares (`System.figures` in its module, e.g. Grappa's tables): one
# module each in src/commgnn/report/figures/, built when the experiment matrix runs the
# system. Times in them are target times (raw ÷ time dilation).


rule system_figure:
    input:
        system_figure_inputs,
    output:
        report(
            f"{RESULTS}/figures/{{name}}.png",
            caption="../report/{name}.rst",
            category="Systems",
        ),
    wildcard_constraints:
        name="|".join(SYSTEM_FIGURES) or "^$",
    params:
        cmd=COMMGNN,
    log:
        f"{RESULTS}/logs/figures/{{name}}.log",
    resources:
        **light_resources(),
    conda:
        ENV
    shell:
        "{params.cmd} figure {wildcards.name} --out {output} {input} > {log} 2>&1"
