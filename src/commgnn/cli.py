"""The ``commgnn`` command: one subcommand per pipeline step.

Snakemake rules call these with the relevant config section passed as JSON (``--spec``), so
a rule's inputs are exactly what its command line says. Every subcommand validates its spec
against the pipeline schema before doing any work. A user-facing failure
(:class:`~commgnn.core.errors.CommgnnError`: bad config or input, a failed worker) exits with
status 2 and one line naming the file, key or worker; anything else is a bug and exits with
status 1, also as one line. ``commgnn --debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import errno
import json
import logging
import sys
import time
from pathlib import Path

from commgnn.catalog import figure_module, system_commands, system_declarations
from commgnn.checks import dataset_problems, host_problems, training_host_problems
from commgnn.core import config as cfg
from commgnn.core.config import section_arg
from commgnn.core.errors import CommgnnError, HostError, InputError, NotApplicable
from commgnn.core.files import write_csv
from commgnn.core.spec import RunSpec
from commgnn.core.testbed import generator_of
from commgnn.experiments import expand_experiments
from commgnn.report.palette import use_declarations
from commgnn.report.status import render, run_statuses
from commgnn.runtime.heartbeat import failed_attempt_error
from commgnn.runtime.launcher import external_env, prestart_fork_server
from commgnn.train.walltime import process_start

log = logging.getLogger("commgnn")


def cmd_validate(args: argparse.Namespace) -> None:
    config = cfg.load_config(args.config)
    try:
        runs = expand_experiments(config)  # names, system options, cross-field constraints
        problems = [] if args.no_host else host_problems(config)
        if problems:
            raise HostError(cfg.listing(problems))
    except cfg.ConfigError as exc:
        raise type(exc)(f"{args.config}: {exc}") from None
    where = "" if args.no_host else " on this host"
    print(f"{args.config}: valid{where} ({len(runs)} runs)")


def cmd_systems(args: argparse.Namespace) -> None:
    from commgnn.systems.registry import discover  # deferred: imports numpy, torch

    for _, cls in sorted(discover().items()):
        print("\n".join(cls.describe()))


def cmd_dataset(args: argparse.Namespace) -> None:
    from commgnn.data.sources import build_dataset  # deferred: imports numpy
    from commgnn.data.store import write_dataset  # deferred: imports numpy

    spec = section_arg(args.spec, "dataset", f"datasets.{args.name}")
    problems = dataset_problems(args.name, spec)
    if problems:
        raise cfg.ConfigError(cfg.listing(problems))
    start = time.perf_counter()
    ds = build_dataset(args.name, spec, raw_dir=args.raw)
    built = time.perf_counter()
    write_dataset(ds, args.out, source=spec, generator=generator_of(spec))
    log.info("dataset %s: %d nodes, %d edges, %d features, %d classes; built in %.2fs, "
             "written in %.2fs", args.name, ds.num_nodes, ds.num_edges, ds.feature_dim,
             ds.num_classes, built - start, time.perf_counter() - built)


def cmd_download(args: argparse.Namespace) -> None:
    from commgnn.data.sources import download  # deferred: imports numpy

    spec = section_arg(args.spec, "dataset", f"datasets.{args.name}")
    download(spec, args.out)


def cmd_partition_table(args: argparse.Namespace) -> None:
    # deferred: imports numpy, pandas, pymetis, scipy, torch
    from commgnn.report.tables import partition_table

    frame = partition_table(args.partitions)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_csv(frame, args.out)


def cmd_runs_table(args: argparse.Namespace) -> None:
    # deferred: imports numpy, pandas, pymetis, scipy, torch
    from commgnn.report.tables import read_runs_table, runs_table, updated_runs_table

    _require(args.runs, "summary.json")
    frame = runs_table(args.runs)
    if args.update and args.out.is_file():
        frame = updated_runs_table(read_runs_table(args.out), frame)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_csv(frame, args.out)


def cmd_reprice(args: argparse.Namespace) -> None:
    # deferred: imports pandas, torch
    from commgnn.train.reprice import ENERGY_MODEL, reprice_run

    _require(args.runs, "summary.json")
    for run in args.runs:
        done = reprice_run(run)
        print(f"{run}: {'re-priced to' if done else 'already on'} {ENERGY_MODEL}")


def cmd_status(args: argparse.Namespace) -> None:
    if not args.results.is_dir():
        raise InputError(f"{args.results}: no results directory")
    statuses = run_statuses(args.results)
    if args.state:
        statuses = [s for s in statuses if s.state in args.state]
    print(render(statuses, args.results))


def _require(paths: list[Path], member: str | None = None) -> None:
    """InputError naming the first of ``paths`` (or its ``member`` file) that is missing."""
    for path in paths:
        target = path / member if member else path
        if not target.exists():
            hint = " (an unfinished run?)" if member == "summary.json" else ""
            raise InputError(f"{target}: missing{hint}")


def cmd_dilation(args: argparse.Namespace) -> None:
    try:
        spec = RunSpec.from_json(args.spec)
    except (ValueError, TypeError) as exc:
        raise cfg.ConfigError(f"--spec: not a run spec ({exc})") from exc
    if external_env() is None:
        prestart_fork_server("commgnn.train.dilation")
    # deferred: imports numba, numpy, torch
    from commgnn.train.dilation import PROBE_STEPS_WORKLOAD, probe_workload
    if not (args.dataset / "meta.json").is_file():
        raise InputError(f"{args.dataset / 'meta.json'}: missing")
    probe = probe_workload(spec, str(args.dataset), str(args.out),
                           args.steps or PROBE_STEPS_WORKLOAD)
    ref = probe["reference"]
    log.info("workload %s: step %.1f ms on this host; reference %s", probe["workload"],
             probe["probe_s"] * 1e3, "none (runs undilated unless the config gives one)"
             if ref is None else f"{ref['step_s'] * 1e3:.3f} ms ({ref['source']})")


def _attempt_number(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: not a positive whole number")
    return int(text)


def cmd_train(args: argparse.Namespace) -> None:
    try:
        spec = RunSpec.from_json(args.spec)
    except (ValueError, TypeError) as exc:
        raise cfg.ConfigError(f"--spec: not a run spec ({exc})") from exc
    if external_env() is None:
        # Before this process imports torch: the server's imports (the workers') overlap
        # this process's own. It idles for a system that trains outside commgnn's loop.
        prestart_fork_server("commgnn.train.loop")
    from commgnn.systems.registry import get_system  # deferred: imports numpy, torch

    # deferred: imports numba, numpy, pandas, pymetis, scipy, torch
    from commgnn.train.loop import RunPaths, probe_arg, run
    given = {key: value for key, value in spec.training.items() if value is not None}
    cfg.validate(given, cfg.subschema("training"), prefix="--spec training")
    if isinstance(spec.network_spec, dict):
        cfg.validate(spec.network_spec, cfg.subschema("network"),
                     prefix=f"--spec network_spec ({spec.network})")
    problems = training_host_problems(spec.training, rendezvous=external_env() is None)
    if problems:
        raise HostError(cfg.listing(problems))
    inputs = {}
    for item in args.input:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise cfg.ConfigError(f"--input {item!r}: expected NAME=PATH")
        inputs[name] = path
    paths = RunPaths(dataset=str(args.dataset), partition=str(args.partition),
                     out=str(args.out), checkpoints=str(args.checkpoints), inputs=inputs,
                     dilation=None if args.dilation is None else str(args.dilation),
                     attempt=args.attempt,
                     failed_attempt=None if args.failed_log is None
                     else failed_attempt_error(args.failed_log))
    probe_arg(args.dilation, spec, args.dataset)  # a bad probe fails before any worker
    summary = run(spec, paths, get_system(spec.base_system), process_started=process_start())
    acc = summary.get("test_acc")
    log.info("run %s: %.3fs/epoch, %d remote rows/epoch, test acc %s", spec.run_id,
             summary["mean_epoch_time_s"], summary["remote_rows_per_epoch"],
             "n/a" if acc is None else f"{acc:.4f}")


def cmd_presample(args: argparse.Namespace) -> None:
    # deferred: imports numba, numpy, pymetis, scipy, torch
    from commgnn.sampling.presample import presample

    try:
        fanouts = [int(f) for f in args.fanouts.split(",")]
    except ValueError as exc:
        raise cfg.ConfigError(f"--fanouts {args.fanouts!r}: not comma-separated integers") \
            from exc
    meta = presample(args.dataset, args.partition, args.out, fanouts=fanouts,
                     batch_size=args.batch_size, base_seed=args.seed, epochs=args.epochs,
                     threads=args.threads)
    log.info("presampled %d workers x %d epochs x %d steps to %s", meta["num_workers"],
             args.epochs, meta["steps_per_epoch"], args.out)


def cmd_figure(args: argparse.Namespace) -> None:
    module = figure_module(args.name)  # ConfigError for an unknown name
    _require(args.inputs)

    if args.systems is None:  # read from the systems themselves (imports them)

        use_declarations(system_declarations())
    else:
        try:
            declared = json.loads(args.systems)
        except json.JSONDecodeError as exc:
            raise cfg.ConfigError(f"--systems: not JSON ({exc})") from exc
        if not isinstance(declared, dict) or not all(isinstance(d, dict)
                                                     for d in declared.values()):
            raise cfg.ConfigError("--systems: expected {system: {colour, figure_labels}}")
        use_declarations(declared)
    # deferred: imports pandas
    from commgnn.report.figure_tables import figure_table, not_applicable_table

    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        data = module.make(args.inputs, args.out)
    except NotApplicable as exc:  # the runs lack what it needs: drawn and written as such
        # deferred: imports matplotlib, numpy, pandas, pymetis, scipy
        from commgnn.report.figures.plotting import save_not_applicable

        log.warning("figure %s does not apply to these runs: %s", args.name, exc)
        save_not_applicable(args.out, args.name, str(exc))
        data = not_applicable_table(str(exc))
    write_csv(figure_table(data), args.out.with_suffix(".csv"))


def cmd_partition(args: argparse.Namespace) -> None:
    from commgnn.data.store import load_dataset  # deferred: imports numpy

    # deferred: imports numpy, pymetis, scipy
    from commgnn.partition import partition_graph, write_partition

    spec = section_arg(args.spec, "partitioning", f"partitionings.{args.name}")
    ds = load_dataset(args.dataset, verify_checksums=args.verify)
    part = partition_graph(ds, spec)
    write_partition(part, args.out)
    log.info("partition %s of %s written to %s", args.name, ds.name, args.out)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="commgnn", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of any failure (default: one line)")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("validate", help="check a config file: schema, duplicate keys, "
                                        "cross-field constraints and this host")
    p.add_argument("config", type=Path)
    p.add_argument("--no-host", action="store_true",
                   help="skip the checks of this host (the workers run elsewhere)")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("systems", help="list the registered systems and their options")
    p.set_defaults(func=cmd_systems)

    p = sub.add_parser("dataset", help="generate or download a dataset into the common format")
    p.add_argument("--name", required=True)
    p.add_argument("--spec", required=True, help="the datasets.<name> config entry as JSON")
    p.add_argument("--raw", type=Path, help="downloaded raw files (network sources)")
    p.add_argument("--out", required=True, type=Path)
    p.set_defaults(func=cmd_dataset)

    p = sub.add_parser("download", help="download a network dataset's raw files")
    p.add_argument("--name", required=True)
    p.add_argument("--spec", required=True, help="the datasets.<name> config entry as JSON")
    p.add_argument("--out", required=True, type=Path)
    p.set_defaults(func=cmd_download)

    p = sub.add_parser("partition", help="partition a dataset")
    p.add_argument("--name", required=True)
    p.add_argument("--spec", required=True, help="the partitionings.<name> entry as JSON")
    p.add_argument("--dataset", required=True, type=Path, help="dataset directory")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--verify", action="store_true", help="verify dataset checksums first")
    p.set_defaults(func=cmd_partition)

    p = sub.add_parser("train", help="run one experiment cell on P workers")
    p.add_argument("--spec", required=True, help="the run spec as JSON (RunSpec)")
    p.add_argument("--dataset", required=True, type=Path)
    p.add_argument("--partition", required=True, type=Path)
    p.add_argument("--out", required=True, type=Path, help="run directory (made on success)")
    p.add_argument("--checkpoints", required=True, type=Path)
    p.add_argument("--input", action="append", default=[], metavar="NAME=PATH",
                   help="a pipeline input the system needs (e.g. presample=DIR); repeatable")
    p.add_argument("--dilation", type=Path, default=None,
                   help="the workload's compute-step probe (commgnn dilation's output) for "
                        "time_dilation auto; without it the run probes its own")
    p.add_argument("--attempt", type=_attempt_number, default=1,
                   help="which attempt at this run this is (the workflow's retry: 2); the "
                        "summary records it")
    p.add_argument("--failed-log", type=Path, default=None,
                   help="the previous, failed attempt's log: its first error goes into the "
                        "summary")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("dilation", help="measure a workload's compute-only step (time "
                                        "dilation auto) on its workers at once")
    p.add_argument("--spec", required=True, help="a run spec of the workload as JSON")
    p.add_argument("--dataset", required=True, type=Path)
    p.add_argument("--out", required=True, type=Path, help="the probe's JSON file")
    p.add_argument("--steps", type=int, default=None, help="timed steps per worker")
    p.set_defaults(func=cmd_dilation)

    p = sub.add_parser("presample", help="presample every worker's batches to disk")
    p.add_argument("--dataset", required=True, type=Path)
    p.add_argument("--partition", required=True, type=Path)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--fanouts", required=True, help="comma-separated, input layer first")
    p.add_argument("--batch-size", required=True, type=int)
    p.add_argument("--seed", required=True, type=int)
    p.add_argument("--epochs", required=True, type=int)
    p.add_argument("--threads", type=int, default=1)
    p.set_defaults(func=cmd_presample)

    for add_commands in system_commands():  # each system's own steps (systems/<name>/cli.py)
        add_commands(sub)

    p = sub.add_parser("partition-table", help="gather partition stats into one CSV table")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("partitions", nargs="+", type=Path, help="partition directories")
    p.set_defaults(func=cmd_partition_table)

    p = sub.add_parser("figure", help="draw one figure (PNG plus its data as CSV)")
    p.add_argument("name", help="figure module, e.g. rapidgnn_fig5")
    p.add_argument("--out", required=True, type=Path, help="PNG path")
    p.add_argument("--systems", help="the systems' colours and figure labels as JSON "
                   "{system: {colour, figure_labels}} (default: read from every system's "
                   "description)")
    p.add_argument("inputs", nargs="+", type=Path)
    p.set_defaults(func=cmd_figure)

    p = sub.add_parser("status", help="list the training runs under a results directory: "
                       "running, failed, partial, finished")
    p.add_argument("results", nargs="?", type=Path, default=Path("results"),
                   help="results directory (default: results)")
    p.add_argument("--state", choices=["running", "failed", "partial", "finished"],
                   action="append", help="only runs in this state (repeatable)")
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("reprice", help="bring finished runs' target energy to the current "
                                       "energy model from their own records (v2 -> v3)")
    p.add_argument("runs", nargs="+", type=Path, help="run directories")
    p.set_defaults(func=cmd_reprice)

    p = sub.add_parser("runs-table", help="gather run summaries into one CSV table")
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--update", action="store_true",
                   help="keep the rows of --out's runs that are not given (their directories "
                        "gone, e.g. a campaign over several sessions); a given run replaces "
                        "its row")
    p.add_argument("runs", nargs="+", type=Path, help="run directories")
    p.set_defaults(func=cmd_runs_table)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        args.func(args)
    except Exception as exc:
        if args.debug:
            raise
        print(f"commgnn {args.command}: error: {_one_line(exc)}", file=sys.stderr)
        return 2 if _user_facing(exc) else 1
    except KeyboardInterrupt:
        print(f"commgnn {args.command}: interrupted", file=sys.stderr)
        return 130
    return 0


#: OS errors that say something about the user's files or machine, not about commgnn.
ENVIRONMENT_ERRNOS = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EISDIR, errno.EACCES,
                                errno.EPERM, errno.ENOSPC, errno.EDQUOT, errno.EROFS,
                                errno.EEXIST, errno.EMFILE})


def _user_facing(exc: Exception) -> bool:
    return isinstance(exc, CommgnnError) or (isinstance(exc, OSError)
                                             and exc.errno in ENVIRONMENT_ERRNOS)


def _one_line(exc: Exception) -> str:
    """A failure as the CLI reports it: a :class:`CommgnnError`'s own message (a listing of
    several problems keeps its lines), an OS error about a file or this machine as
    ``path: reason``; anything else, which is a bug, as its type and first line, with a
    pointer to ``--debug``."""
    if isinstance(exc, CommgnnError):
        return str(exc)
    if _user_facing(exc):
        where = f"{exc.filename}: " if exc.filename else ""
        return f"{where}{exc.strerror or exc}"
    first = next((line for line in str(exc).splitlines() if line.strip()), "")
    return (f"internal error: {type(exc).__name__}: {first.strip()} "
            "(run `commgnn --debug ...` for the traceback)")


if __name__ == "__main__":
    sys.exit(main())
