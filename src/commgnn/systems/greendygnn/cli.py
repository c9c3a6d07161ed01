"""GreenDyGNN's own ``commgnn`` subcommands: ``calibrate``, ``validate-simulator`` and
``train-policy`` (the steps of ``rules.smk`` beside this file). The CLI adds them
(:func:`add_commands`); each imports its work (and torch) when it runs, so that building
the ``commgnn`` parser stays light."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from commgnn.core.config import section_arg
from commgnn.core.files import atomic_directory
from commgnn.core.spec import run_spec_arg

log = logging.getLogger("commgnn")


def cmd_calibrate(args: argparse.Namespace) -> None:
    # deferred: imports numba, numpy, pymetis, scipy, torch
    from commgnn.systems.greendygnn.calibrate import calibrate

    # deferred: imports numba, numpy, pandas, pymetis, scipy, torch
    from commgnn.train.loop import probe_arg

    template = run_spec_arg(args.spec)
    settings = section_arg(args.settings, "control_calibration", "control.calibration")
    paths = {"dataset": str(args.dataset), "partition": str(args.partition),
             "presample": str(args.presample),
             "dilation": probe_arg(args.dilation, template, args.dataset)}
    with atomic_directory(args.out) as tmp:
        result = calibrate(template, paths, tmp, settings)
    fit = result["rpc"]["fit"]
    log.info("calibrated %s: alpha %.3g ms, beta %.3g s/B, gamma %.3g s/B/ms", args.out,
             fit["alpha_s"] * 1e3, fit["beta_s_per_byte"], fit["gamma_s_per_byte_ms"])


def cmd_validate_simulator(args: argparse.Namespace) -> None:
    # deferred: imports numba, numpy, pymetis, scipy, torch
    from commgnn.systems.greendygnn.calibrate import validate
    from commgnn.systems.greendygnn.costmodel import read_calibration  # deferred: imports numpy

    # deferred: imports numba, numpy, pandas, pymetis, scipy, torch
    from commgnn.train.loop import probe_arg

    template = run_spec_arg(args.spec)
    settings = section_arg(args.settings, "control_validation", "control.validation")
    calibration = read_calibration(args.calibration / "calibration.json")
    paths = {"dataset": str(args.dataset), "partition": str(args.partition),
             "presample": str(args.presample),
             "dilation": probe_arg(args.dilation, template, args.dataset)}
    with atomic_directory(args.out) as tmp:
        result = validate(template, paths, calibration, tmp, settings)
    log.info("simulator error: mean %.1f%%, max %.1f%%", 100 * result["mean_error"],
             100 * result["max_error"])


def cmd_train_policy(args: argparse.Namespace) -> None:
    from commgnn.systems.greendygnn.costmodel import read_calibration  # deferred: imports numpy
    from commgnn.systems.greendygnn.policy import train_policy  # deferred: imports numpy, torch

    settings = section_arg(args.settings, "control_policy", "control.policy")
    calibration = read_calibration(args.calibration / "calibration.json")
    with atomic_directory(args.out) as tmp:
        record = train_policy(calibration, tmp, settings)
    log.info("policy trained: %d episodes in %.1f s", record["episodes"], record["seconds"])


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add GreenDyGNN's subcommands to the ``commgnn`` parser's ``sub``."""
    control = {"calibrate": ("GreenDyGNN calibration: RPC grid, hit tables, clean runs",
                             cmd_calibrate),
               "validate-simulator": ("held-out runs vs the simulator (Figure 8)",
                                      cmd_validate_simulator)}
    for name, (text, func) in control.items():
        p = sub.add_parser(name, help=text)
        p.add_argument("--spec", required=True,
                       help="a greendygnn run spec as JSON: workload, network, options")
        p.add_argument("--settings", default="{}", help="the control.<section> entry as JSON")
        p.add_argument("--dataset", required=True, type=Path)
        p.add_argument("--partition", required=True, type=Path)
        p.add_argument("--presample", required=True, type=Path)
        p.add_argument("--dilation", type=Path, default=None,
                       help="the workload's compute-step probe (time dilation auto)")
        if name == "validate-simulator":
            p.add_argument("--calibration", required=True, type=Path,
                           help="a calibrate output directory")
        p.add_argument("--out", required=True, type=Path)
        p.set_defaults(func=func)

    p = sub.add_parser("train-policy", help="train the Double-DQN window policy in the "
                                            "calibrated simulator")
    p.add_argument("--calibration", required=True, type=Path,
                   help="a calibrate output directory")
    p.add_argument("--settings", default="{}", help="the control.policy entry as JSON")
    p.add_argument("--out", required=True, type=Path)
    p.set_defaults(func=cmd_train_policy)
