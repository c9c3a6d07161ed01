# Shared helpers for every rule file: results location, the CLI, config lookups.
import json
import shlex
import sys

RESULTS = config.get("results_dir", "results")
# The interpreter running Snakemake has commgnn installed (README's setup step).
COMMGNN = f"{shlex.quote(sys.executable)} -m commgnn"
NETWORK_SOURCES = ("ogb", "reddit")


def spec_arg(section, name):
    """A config entry as one shell-quoted JSON argument."""
    return shlex.quote(json.dumps(config[section][name], sort_keys=True))


def downloads(dataset):
    """Download directories a dataset's conversion needs (none for generated sources)."""
    if config["datasets"][dataset]["source"] in NETWORK_SOURCES:
        return [f"{RESULTS}/raw/{dataset}"]
    return []


def all_partitions():
    return expand(
        f"{RESULTS}/partitions/{{dataset}}/{{partitioning}}",
        dataset=sorted(config["datasets"]),
        partitioning=sorted(config["partitionings"]),
    )


wildcard_constraints:
    dataset=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
    partitioning=r"[A-Za-z0-9][A-Za-z0-9_.-]*",
