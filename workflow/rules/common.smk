# Shared helpers for every workflow file: results location, the CLI, config lookups.
import json
from commgnn import cluster
from commgnn.checks import path_problems, training_host_problems
from commgnn.core import paths
from commgnn.core.config import listing
from commgnn.core.errors import CommgnnError, HostError
from commgnn.data.sources import needs_network
from commgnn.catalog import (claims_reads, declared_figures, figure_module,
                             system_declarations)
from commgnn.catalog import figure_caption as catalog_figure_caption
from commgnn.catalog import system_rule_fragments
from commgnn.systems.registry import get_system
from commgnn.network.netem import dilation_of
from commgnn.core.spec import TRAINING_DEFAULTS
from commgnn.experiments import expand_experiments
from commgnn.train.workload import Workload, probe_spec, step_workload
from commgnn.train.workload import dataset_shape as workload_dataset_shape
import shlex
import sys
from pathlib import Path

# Checks beyond the schema (commgnn.checks): cross-field constraints (in
# expand_experiments below) and the results and dataset paths before the DAG is built;
# the training settings against this host (interface, master address and port, CUDA)
# just before the first job when jobs run here (onstart: neither in a dry run nor under a
# cluster executor, whose jobs run elsewhere and check at `commgnn train`). Duplicate keys
# in a config file are refused in the Snakefile, naming the line.
def _config_failure(error):
    """End the run before any job with the config's problems, one line each."""
    print(f"commgnn: invalid configuration ({', '.join(map(str, workflow.configfiles))}): "
          f"{error}", file=sys.stderr)
    sys.exit(1)


if workflow.is_main_process:
    _paths = path_problems(config)
    if _paths:
        _config_failure(HostError(listing(_paths)))


# Under the slurm executor, a job no node of its partition can hold would pend for ever:
# stop before the first submission, one line per such rule (commgnn.slurm_fit). Snakemake
# keeps one onstart handler: both checks live in this one.
onstart:
    if workflow.local_exec and config.get("experiments"):
        _host = training_host_problems(config.get("training") or {})
        if _host:
            _config_failure(HostError(listing(_host)))
    from commgnn.slurm_fit import workflow_problems as _slurm_problems

    _unfit = _slurm_problems(workflow)
    if _unfit:
        print("\n".join(_unfit), file=sys.stderr)
        sys.exit(1)


RESULTS = config.get("results_dir", "results")


def under(template, **values):
    """One product's path: a `commgnn.core.paths` template filled, under RESULTS."""
    return f"{RESULTS}/{paths.fill(template, **values)}"
#: The repository (the Snakefile's directory); rules fragments live elsewhere, so paths
#: they name are absolute.
REPO = Path(workflow.basedir)
ENV = str(REPO / "envs" / "commgnn.yaml")


def _commgnn_command():
    """How jobs invoke the CLI: the interpreter running Snakemake (which setup.sh
    installed commgnn into), or, under --use-conda, the conda env with src/ on the path."""
    from snakemake_interface_executor_plugins.settings import DeploymentMethod

    if DeploymentMethod.CONDA in workflow.deployment_settings.deployment_method:
        src = shlex.quote(str(Path(workflow.basedir) / "src"))
        return f"PYTHONPATH={src} python -m commgnn"
    return f"{shlex.quote(sys.executable)} -m commgnn"


COMMGNN = _commgnn_command()


# What jobs ask a cluster scheduler for (commgnn.cluster; `cluster:` in the config). A
# workstation run (--cores N) uses only the thread counts.
CLUSTER = cluster.ClusterSettings.from_config(config)


def whole_machine(cluster_threads):
    """Threads of a job that takes the whole workstation (timings stay uncontended): all
    of --cores; on a cluster, where Snakemake has no core count, ``cluster_threads``."""
    return workflow._cores or cluster_threads


def dataset_shape(name):
    return cluster.dataset_shape(config["datasets"][name])


def light_resources(runtime=30):
    """Resources of a small job (tables, figures), whatever the dataset."""
    return cluster.light_resources(CLUSTER, runtime)


def spec_arg(section, name):
    """A config entry as one shell-quoted JSON argument."""
    return shlex.quote(json.dumps(config[section][name], sort_keys=True))


def downloads(dataset):
    """Download directories a dataset's conversion needs (none for generated sources)."""
    if needs_network(config["datasets"][dataset]):
        return [under(paths.RAW, dataset=dataset)]
    return []


def all_partitions():
    return expand(
        f"{RESULTS}/{paths.PARTITION}",
        dataset=sorted(config["datasets"]),
        partitioning=sorted(config["partitionings"]),
    )



try:
    RUNS = {spec.run_id: spec for spec in expand_experiments(config)}
except CommgnnError as _error:
    _config_failure(_error)
TRAINING = {**TRAINING_DEFAULTS, **config.get("training", {})}


def _recorded_settings(run_dir):
    """What a finished run records of its configuration (None if it records nothing)."""
    try:
        summary = json.loads((Path(run_dir) / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    return {key: summary.get(key) for key in ("training", "system_options", "network_spec")}


def _runs_of_another_configuration():
    """Finished runs whose summary records other settings than the config now asks for.

    A train job rerun by a changed setting (more epochs: an extension) keeps the finished
    run in place (an ``update`` output). When that job fails, Snakemake restores the run
    but records the new settings as done, so a later invocation sees nothing to do; the
    workflow names these runs and how to retry them."""
    stale = []
    for key, spec in RUNS.items():
        run_dir = f"{RESULTS}/{paths.run_dir(key)}"
        recorded = _recorded_settings(run_dir)
        wanted = json.loads(json.dumps({"training": spec.training,
                                        "system_options": spec.system_options,
                                        "network_spec": spec.network_spec}))
        if recorded is not None and recorded != wanted:
            stale.append(run_dir)
    return stale


if workflow.is_main_process and RUNS:
    for _run_dir in _runs_of_another_configuration():
        print(f"commgnn: {_run_dir} records other settings than the config's; if "
              f"Snakemake does not rerun it (a failed extension), use --forcerun {_run_dir}",
              file=sys.stderr)


def run_id(w):
    return paths.fill(paths.RUN_ID, **{k: getattr(w, k) for k in (
        "system", "dataset", "partitioning", "model", "batch", "network", "seed")})


def run_spec_arg(w):
    return shlex.quote(RUNS[run_id(w)].to_json())


def all_runs():
    return [f"{RESULTS}/{paths.run_dir(key)}" for key in RUNS]


def train_resources(w):
    """A train cell's requests: a SLURM task per worker (commgnn.cluster.train_resources)."""
    spec = RUNS[run_id(w)]
    return cluster.train_resources(
        dataset_shape(spec.dataset), spec.workers, spec.get("epochs"),
        len(spec.get("fanouts")), spec.get("device"), CLUSTER,
        external=get_system(spec.base_system).external)


def train_launch(w, resources):
    """`srun ...` before the train command inside a SLURM job, else nothing."""
    return cluster.srun_prefix(dict(resources.items()))


# Where the pipeline builds each input a system can declare in `needs`
# (commgnn.core.declarations.PIPELINE_INPUTS), for one run: name -> path of a run spec.
PIPELINE_INPUT_PATHS = {
    "presample": lambda s: under(paths.PRESAMPLE, dataset=s.dataset,
                                 partitioning=s.partitioning, batch=s.batch_size, seed=s.seed),
}  # a system's rules fragment adds the products it declares (systems/<name>/rules.smk)


def system_inputs(spec):
    """The pipeline inputs a run's system declares (`System.needs`), name -> path."""
    return {need: PIPELINE_INPUT_PATHS[need](spec)
            for need in get_system(spec.base_system).wants(spec.system_options)}


# One clock per workload (commgnn.train.dilation): every run whose network dilates time
# `auto` gets its workload's compute-step probe, measured once by the `dilation` rule.
def _workload_key(spec):
    return Workload(step_workload(spec, workload_dataset_shape(config["datasets"][spec.dataset])),
                    spec.workers).key


def _dilated_auto(spec):
    return (dilation_of(spec.network_spec)[0] == "auto"
            and not get_system(spec.base_system).external)


WORKLOADS = {}  # workload key -> its probe's settings (probe_spec of its first run id)
RUN_WORKLOAD = {}  # run id -> its workload's probe file
for _key, _spec in sorted(RUNS.items()):
    if _dilated_auto(_spec):
        _wkey = _workload_key(_spec)
        WORKLOADS.setdefault(_wkey, probe_spec(_spec))
        RUN_WORKLOAD[_key] = under(paths.DILATION, dataset=_spec.dataset, workload=_wkey)


def workload_spec_arg(w):
    return shlex.quote(WORKLOADS[w.workload].to_json())


def dilation_resources(w):
    """The probe asks for what its workload's train jobs ask (a task per worker)."""
    spec = WORKLOADS[w.workload]
    return cluster.train_resources(
        dataset_shape(spec.dataset), spec.workers, 1, len(spec.get("fanouts")),
        spec.get("device"), CLUSTER)


def train_inputs(w):
    """Named inputs of a train job: dataset, partition, the workload's probe (time
    dilation auto) and the system's needs."""
    key = run_id(w)
    spec = RUNS[key]
    probe = {"dilation": RUN_WORKLOAD[key]} if key in RUN_WORKLOAD else {}
    return {
        "dataset": under(paths.DATASET, dataset=w.dataset),
        "partition": under(paths.PARTITION, dataset=w.dataset, partitioning=w.partitioning),
        **probe,
        **system_inputs(spec),
    }


def dilation_arg(w, input):
    """`--dilation PATH` for a run whose network dilates time `auto`."""
    return f"--dilation {shlex.quote(str(input['dilation']))}" if "dilation" in input.keys() else ""


def input_args(w, input):
    """`--input NAME=PATH` for each of the system's needs."""
    spec = RUNS[run_id(w)]
    return " ".join(f"--input {name}={shlex.quote(str(input[name]))}"
                    for name in system_inputs(spec))


def presample_epochs(w):
    """Epochs a presample holds: the most any run reading it trains (an experiment's
    `epochs` may exceed `training.epochs`); a run reads the first ones."""
    path = under(paths.PRESAMPLE, dataset=w.dataset, partitioning=w.partitioning,
                 batch=w.batch, seed=w.seed)
    epochs = [spec.get("epochs") for spec in RUNS.values()
              if system_inputs(spec).get("presample") == path]
    return max(epochs, default=TRAINING["epochs"])


def all_presamples():
    """Every presample directory some run of the experiment matrix reads."""
    return sorted({path for spec in RUNS.values()
                   for name, path in system_inputs(spec).items() if name == "presample"})


def figure_targets():
    """Figures the systems of the experiment matrix declare, and the side-by-side
    comparison of every system."""
    shared = [f"{RESULTS}/figures/{name}.png" for name in [*SHARED_FIGURES, "figure_index"]]
    return [f"{RESULTS}/figures/{name}.png" for name in SYSTEM_FIGURES] + (shared if RUNS
                                                                          else [])


#: Figures of every run, whatever its system (rules of their own in figures.smk).
SHARED_FIGURES = ("compare", "claims")


def claims_inputs(w):
    """The runs table and the figure tables the claims read that this config builds."""
    return [f"{RESULTS}/tables/runs.csv"] + [f"{RESULTS}/figures/{name}.csv"
                                              for name in claims_reads(SYSTEM_FIGURES)]


def describe_all_runs():
    """What every run of the experiment matrix was run on (a caption's last paragraph)."""
    from commgnn.report.setting import describe_runs

    return describe_runs(list(RUNS.values()), config["datasets"])


# Every system's colour and figure labels (`System.colour`, `System.figure_labels`),
# passed to the figure jobs as JSON (a figure job then need not import every system, and
# torch with it, to colour its series).
SYSTEM_DECLARATIONS = json.dumps(system_declarations(), sort_keys=True)


# Paths of each kind of pipeline product a declared figure may read
# (commgnn.core.declarations.FIGURE_INPUTS) that this config builds: kind -> a function
# of no argument; a system's rules fragment adds the kinds it makes.
FIGURE_INPUT_PATHS = {
    "runs": lambda: [f"{RESULTS}/{paths.RUNS_TABLE}"] if RUNS else [],
    "partition_stats": lambda: [f"{RESULTS}/{paths.PARTITION_TABLE}"],
    "partitions": all_partitions,
    "run_dirs": all_runs,
    "presamples": all_presamples,
    "datasets": lambda: [under(paths.DATASET, dataset=name)
                         for name in sorted(config["datasets"])],
}


# Products a system's own steps make that rule all builds even where no figure reads them
# (e.g. GreenDyGNN's simulator validation): functions of no argument its fragment adds.
SYSTEM_TARGETS = []


def system_targets():
    return [path for targets in SYSTEM_TARGETS for path in targets()]


def figure_input_paths():
    """Paths of each kind of pipeline product a declared figure may read that this config
    builds."""
    return {kind: paths() for kind, paths in FIGURE_INPUT_PATHS.items()}


def system_figure_inputs(w):
    """The pipeline products a declared figure reads, in the declared order."""
    paths = figure_input_paths()
    return [path for kind in SYSTEM_FIGURES[w.name] for path in paths[kind]]


def figure_caption(name):
    """A figure's caption text (beside its module: `commgnn.catalog.figure_caption`)."""
    return catalog_figure_caption(name)


def figure_setting(name):
    """The caption's last paragraph: what the runs behind the figure were run on (those
    its module's `runs_behind(spec)` accepts; without one, every run on the datasets of
    the systems declaring it)."""
    from commgnn.report.setting import describe_runs

    behind = getattr(figure_module(name), "runs_behind", None)
    if behind is None:
        datasets = {spec.dataset for spec in RUNS.values()
                    if name in get_system(spec.base_system).figures}
        behind = lambda spec: spec.dataset in datasets
    return describe_runs([spec for spec in RUNS.values() if behind(spec)], config["datasets"])
