# The greendygnn rules' functions, and the pipeline products they add (included by
# rules.smk beside this file): one calibration, validation and policy per workload
# (dataset x partitioning x model x batch size x network) that a run with
# `controller: dqn` and no policy file of its own needs.
CONTROL = config.get("control", {})


def _calibration_network(spec):
    """The network the run's workload is calibrated on: `control.network` (one calibration
    for runs under several congestion schedules of one network), else the run's own
    (calibration strips its congestion)."""
    name = CONTROL.get("network", spec.network)
    for other in RUNS.values():
        if other.network == name:
            return name, other.network_spec
    raise ValueError(f"control.network: no run of the experiment matrix uses network {name!r}")


def control_key(spec):
    return (f"{spec.dataset}/{spec.partitioning}/{spec.model}_b{spec.batch_size}_"
            f"{_calibration_network(spec)[0]}")


def _control_template(spec):
    import dataclasses

    name, network_spec = _calibration_network(spec)
    return dataclasses.replace(spec, seed=CONTROL.get("seed", spec.seed), network=name,
                               network_spec=network_spec)


CONTROL_TEMPLATES = {}
for _spec in RUNS.values():
    if "policy" in get_system(_spec.base_system).wants(_spec.system_options):
        CONTROL_TEMPLATES.setdefault(control_key(_spec), _control_template(_spec))


def control_template(w):
    return CONTROL_TEMPLATES[f"{w.dataset}/{w.partitioning}/{w.model}_b{w.batch}_{w.network}"]


def control_resources(w, step):
    """Requests of `calibrate` or `validate_simulator`: their short runs spawn every worker
    inside one job (commgnn.cluster.control_resources)."""
    from commgnn.systems.greendygnn.calibrate import CALIBRATION_DEFAULTS, VALIDATION_DEFAULTS

    spec = control_template(w)
    if step == "calibration":
        s = {**CALIBRATION_DEFAULTS, **CONTROL.get("calibration", {})}
        runs = len(set(s["windows"]))
    else:
        s = {**VALIDATION_DEFAULTS, **CONTROL.get("validation", {})}
        runs = len(s["windows"]) * len(s["delays_ms"])
    return cluster.control_resources(
        dataset_shape(spec.dataset), spec.workers, runs, int(s["epochs"]),
        len(spec.get("fanouts")), spec.get("device"), CLUSTER)


# The calibration's runs divide by their workload's probe too (one clock per workload).
for _template in CONTROL_TEMPLATES.values():
    if _dilated_auto(_template):
        WORKLOADS.setdefault(_workload_key(_template), _template)


def control_inputs(w):
    spec = control_template(w)
    probe = ({"dilation": f"{RESULTS}/dilation/{spec.dataset}/{_workload_key(spec)}.json"}
             if _dilated_auto(spec) else {})
    return {"dataset": f"{RESULTS}/datasets/{spec.dataset}",
            "partition": f"{RESULTS}/partitions/{spec.dataset}/{spec.partitioning}",
            "presample": PIPELINE_INPUT_PATHS["presample"](spec), **probe}


def control_targets():
    """Every control directory the experiment matrix needs (validation when enabled)."""
    parts = ["calibration", "policy"] + (["validation"] if CONTROL.get("validate", True) else [])
    return [f"{RESULTS}/control/{key}/{part}" for key in sorted(CONTROL_TEMPLATES)
            for part in parts]


PIPELINE_INPUT_PATHS["policy"] = lambda s: f"{RESULTS}/control/{control_key(s)}/policy"
FIGURE_INPUT_PATHS["control"] = control_targets
SYSTEM_TARGETS.append(control_targets)
FIGURE_INPUT_PATHS["validation"] = lambda: [path for path in control_targets()
                                            if Path(path).name == "validation"]
