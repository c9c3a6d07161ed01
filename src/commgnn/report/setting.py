"""What a figure's runs were run on, in a sentence each: the datasets and their scale,
workers, devices, networks with their time dilation (and, for a congested one, its schedule
and which traffic it delays: its reach), seeds and epochs (the last paragraph of a
figure's caption in the Snakemake report)."""

from __future__ import annotations

from commgnn.core.spec import RunSpec
from commgnn.report.labels import reach_words

#: Nodes of the real datasets the synthetic presets stand for.
REAL_DATASETS = {
    "arxiv-like": ("ogbn-arxiv", 169_343),
    "reddit-like": ("Reddit", 232_965),
    "products-like": ("ogbn-products", 2_449_029),
    "papers100m-like": ("ogbn-papers100M", 111_059_956),
    "uk-like": ("UK (uk-2006-05)", 1_000_000),
    "in-like": ("IN (indochina-2004)", 1_380_000),
}


def dataset_scale(spec: dict) -> str:
    """A dataset entry's size against the dataset it stands for."""
    source = spec["source"]
    if source == "synthetic":
        from commgnn.data.synthetic import resolve_synthetic_spec  # deferred: imports numpy

        params = resolve_synthetic_spec(spec)
        nodes, preset = int(params["nodes"]), params["preset"]
        text = f"synthetic {preset}, {nodes:,} nodes"
        if preset in REAL_DATASETS:
            real, real_nodes = REAL_DATASETS[preset]
            text += f" (1/{real_nodes / nodes:.3g} of {real}'s {real_nodes:,})"
        return text
    if source == "rmat":
        return f"R-MAT scale {spec.get('scale')}"
    return f"{source} {spec.get('name', '')}".strip() + " (full size)"


def _dilation(spec: RunSpec) -> str:
    net = spec.network_spec
    preset = net.get("preset", spec.network)
    f = net.get("time_dilation", 1)
    if f == "auto":
        reference = (f"a {net['reference_step_ms']} ms reference step"
                     if net.get("reference_step_ms") is not None else
                     "each workload's H100 reference step (measured, or derived by a "
                     "FLOPs rule; none: undilated)")
        text = (f"{preset}, time dilation measured once per workload against "
                f"{reference}; times are raw ÷ f")
    elif float(f) == 1:
        text = f"{preset}, no time dilation: raw times"
    else:
        text = f"{preset}, time dilation f = {f:g}: times are raw ÷ {f:g}"
    return f"{spec.network} ({text}{_congestion(spec)})"


def _congestion(spec: RunSpec) -> str:
    """A congested network's schedule and reach (which traffic it delays), e.g. ``;
    congestion scenario:single-link on fetch+sampling traffic``; "" for a clean one."""
    # deferred: imports numpy, torch
    from commgnn.train.summary import congestion_label, congestion_reach

    label = congestion_label(spec.network_spec, spec.workers, spec.get("epochs"))
    if label == "none":
        return ""
    reach = congestion_reach(spec.network_spec, spec.workers, spec.get("epochs"))
    return f"; congestion {label}{reach_words(reach)}"


def _numbers(values) -> str:
    return ", ".join(str(v) for v in sorted(set(values)))


def _devices(specs: list[RunSpec]) -> str:
    """Where the runs compute and how a shared GPU's energy is attributed."""
    settings = sorted({s.get("device") for s in specs})
    if settings == ["cpu"]:
        return "Devices: the CPU."
    return (f"Devices: training.device {'/'.join(settings)} (each run's device plan is in its "
            "summary: a GPU where every worker has one, shared round-robin when workers "
            "outnumber GPUs); a GPU's NVML energy is split evenly among the workers sharing "
            "it.")


def describe_runs(specs: list[RunSpec], datasets: dict) -> str:
    """One paragraph: datasets (scale), workers, devices, networks (dilation; a congested
    one's schedule and reach), seeds, epochs."""
    if not specs:
        return "No runs."
    names = sorted({s.dataset for s in specs})
    parts = [
        "Datasets: " + "; ".join(f"{n}: {dataset_scale(datasets[n])}" for n in names) + ".",
        f"Workers: {_numbers(s.workers for s in specs)}.",
        _devices(specs),
        "Networks: " + "; ".join(sorted({_dilation(s) for s in specs})) + ".",
        f"Seeds: {_numbers(s.seed for s in specs)}.",
        f"Epochs: {_numbers(s.get('epochs') for s in specs)}.",
    ]
    return " ".join(parts)
