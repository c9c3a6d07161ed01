# commgnn pipeline: dataset -> partition (-> presample -> train -> report in later stages).
# Run: .venv/bin/snakemake --cores 2   (see README.md)
import sys

from snakemake.utils import min_version, validate

from commgnn.core.config import ConfigError, read_yaml, schema_file
from commgnn.core.config import validate as validate_config

min_version("8.0")


# config.yaml is the default; --configfile replaces it (rather than merging into it).
if not workflow.overwrite_configfiles:

    configfile: "config.yaml"



# Duplicate keys (Snakemake's loader lets the last one win without a word), then the
# schema check with one line per problem (Snakemake's own validate prints the whole
# schema), then Snakemake's, which fills in the schema's defaults.
try:
    for _configfile in workflow.configfiles:
        read_yaml(_configfile)
    validate_config(config, prefix="")
except ConfigError as error:
    print(f"commgnn: invalid configuration ({', '.join(map(str, workflow.configfiles))}): "
          f"{error}", file=sys.stderr)
    sys.exit(1)
# the pipeline's schema with every system's part (commgnn.core.config.schema_file)
validate(config, str(schema_file()))


include: "workflow/rules/common.smk"

wildcard_constraints:
    dataset=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    partitioning=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    system=r"[a-z0-9][a-z0-9-]*",
    model=r"[a-z0-9][a-z0-9_]*(-(10|[1-9]))?",
    batch=r"\d+",
    network=r"[A-Za-z0-9][A-Za-z0-9.-]*",
    seed=r"\d+",


include: "workflow/rules/datasets.smk"
include: "workflow/rules/partition.smk"
include: "workflow/rules/presample.smk"
# Each system's own pipeline steps (systems/<name>/rules.smk: GreenDyGNN's control plane,
# DistDGL's partition conversion), with the pipeline products they add.
for _fragment in system_rule_fragments():

    include: _fragment


include: "workflow/rules/train.smk"
include: "workflow/rules/figures.smk"


rule all:
    input:
        all_partitions(),
        f"{RESULTS}/tables/partition_stats.csv",
        all_runs(),
        f"{RESULTS}/tables/runs.csv" if RUNS else [],
        figure_targets(),
        system_targets(),
    default_target: True
