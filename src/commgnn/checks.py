"""Everything about a config the schema cannot say: cross-field constraints and this host.

:func:`config_problems` checks what follows from the config alone (a partitioning with
more parts than its datasets have nodes, fewer chunks than parts, split fractions past 1,
evaluation fan-outs of another depth than the model, network links or congested machines
that do not exist, a congestion schedule that never fires within the epochs of the runs
that use it, RPC timeouts shorter than one emulated round trip, references to undefined
names, named models that cannot be built …; what a system's options cannot do in an
experiment cell is its own ``run_problems``, checked by
:func:`~commgnn.experiments.expand_experiments`); :func:`host_problems` what depends on
the machine the workers will run on (the results directory, a dataset path, a file a
system's options name (``System.path_problems``), the network interface and master
address, a free master port, a CUDA device). Each
problem is one line ``<key path>: <value>: what is wrong``; :func:`check_config` raises
one :class:`~commgnn.core.errors.ConfigError` (or :class:`~commgnn.core.errors.HostError`) listing
all of them.

``commgnn validate`` runs both. The workflow runs the cross-field checks and
:func:`path_problems` before it builds its DAG, and :func:`training_host_problems` just
before its first job when the jobs run on this machine; ``commgnn train`` runs the latter
where its workers start.
"""

from __future__ import annotations

import errno
import ipaddress
import math
import os
import socket
from collections.abc import Iterator
from pathlib import Path

from commgnn.cluster import dataset_shape
from commgnn.core.config import listing
from commgnn.core.errors import ConfigError, HostError
from commgnn.core.spec import EXPERIMENT_DEFAULTS, TRAINING_DEFAULTS, network_spec, split_model
from commgnn.network.congestion import (
    BUILT_IN,
    NoCongestion,
    TimeSchedule,
    congestion_kind,
    default_congested_traffic,
)

#: Timeouts below this cannot cover the workers' start-up spread (a 2-worker run on the
#: 600-node tiny dataset failed at rendezvous with 0.05 s and passed with 0.3 s here).
MIN_TIMEOUT_S = 1.0

PLANETOID_FILES = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")


def check_config(config: dict, host: bool = True) -> None:
    """Raise :class:`ConfigError` listing every cross-field problem of a schema-valid
    ``config`` (and, with ``host``, :class:`HostError` for every host problem)."""
    problems = config_problems(config)
    if problems:
        raise ConfigError(listing(problems))
    if host:
        problems = host_problems(config)
        if problems:
            raise HostError(listing(problems))


# -- cross-field ------------------------------------------------------------------------
def config_problems(config: dict) -> list[str]:
    """Every constraint between fields of a schema-valid config, one line per problem."""
    problems: list[str] = []
    for check in (_dataset_problems, _partitioning_problems, _training_node_problems,
                  _reference_problems, _model_problems, _depth_problems, _network_problems,
                  _timeout_problems):
        problems += check(config)
    return problems


def dataset_problems(name: str, spec: dict) -> list[str]:
    """A ``datasets.<name>`` entry's own constraints (a generator's parameters)."""
    where = f"datasets.{name}"
    source = spec.get("source")
    try:
        if source == "synthetic":
            from commgnn.data.synthetic import resolve_synthetic_spec  # deferred: imports numpy

            resolve_synthetic_spec(spec)
        elif source == "rmat":
            from commgnn.data.rmat import resolve_rmat_spec  # deferred: imports numpy

            resolve_rmat_spec(spec)
    except ValueError as exc:
        return [f"{where}: {exc}"]
    return []


def _dataset_problems(config: dict) -> list[str]:
    problems = []
    for name, spec in config.get("datasets", {}).items():
        problems += dataset_problems(name, spec)
    return problems


def _nodes(config: dict) -> dict[str, int]:
    """Node counts of the datasets whose size the config fixes (valid generators, public
    datasets)."""

    counts = {}
    for name, spec in config.get("datasets", {}).items():
        if dataset_problems(name, spec):
            continue
        try:
            counts[name] = dataset_shape(spec).nodes
        except ValueError:  # no published shape: checked when it is converted
            continue
    return counts


def _partitioning_problems(config: dict) -> list[str]:
    """Each partitioning's own constraints (:func:`commgnn.partition.core.normalize_spec`),
    and no more parts or chunks than any dataset has nodes."""
    from commgnn.partition.core import normalize_spec  # deferred: imports numpy, pymetis, scipy

    problems = []
    nodes = _nodes(config)
    for name, spec in config.get("partitionings", {}).items():
        try:
            spec = normalize_spec(spec)
        except ValueError as exc:
            problems.append(f"partitionings.{name}: {exc}")
            continue
        key = "chunks" if spec["method"] == "chunk" else "parts"
        problems += [f"partitionings.{name}.{key}: {spec[key]}: more {key} than dataset "
                     f"{dataset!r} has nodes ({count})" for dataset, count in nodes.items()
                     if spec[key] > count]
    return problems


def _training_node_problems(config: dict) -> list[str]:
    """Every worker needs training nodes of its own: a dataset trained with P parts needs
    at least P of them (necessary, not sufficient: the partition decides)."""

    problems = []
    datasets, partitionings = config.get("datasets", {}), config.get("partitionings", {})
    for index, experiment in _experiment_items(config):
        for name in experiment["datasets"]:
            spec = datasets.get(name)
            if spec is None or dataset_problems(name, spec):
                continue
            try:
                train = dataset_shape(spec).train_nodes
            except ValueError:
                continue
            for part in experiment["partitionings"]:
                parts = partitionings.get(part, {}).get("parts", 0)
                if train < parts:
                    problems.append(f"experiments[{index}]: dataset {name!r} has {train} "
                                    f"training nodes, fewer than partitioning {part!r}'s "
                                    f"{parts} parts: a worker would have none to train")
    return problems


def _experiment_items(config: dict) -> Iterator[tuple[int, dict]]:
    for index, experiment in enumerate(config.get("experiments") or []):
        yield index, {**EXPERIMENT_DEFAULTS, **experiment}


def _reference_problems(config: dict) -> list[str]:
    """Names that must be defined: ``control.network``, a network of the experiment
    matrix when a run gets the pipeline's policy (the workflow calibrates those runs'
    workload on a run of the matrix that uses it)."""

    control_network = (config.get("control") or {}).get("network")
    if control_network is None:
        return []
    try:
        network_spec(config, control_network)
    except ValueError as exc:
        return [f"control.network: {exc}"]
    used = {network for _, experiment in _experiment_items(config)
            for network in experiment["networks"]}
    wanting = _policy_experiments(config)
    if wanting and control_network not in used:
        return [f"control.network: {control_network!r}: no experiment runs on it, and the "
                f"workload of the dqn runs that get the pipeline's policy (experiments"
                f"{wanting}) is calibrated on a network of the experiment matrix "
                f"({', '.join(sorted(used))})"]
    return []


def _policy_experiments(config: dict) -> list[int]:
    """The experiments with a system that gets the pipeline's policy
    (``System.wants``)."""
    from commgnn.systems.registry import resolve_system  # deferred: imports numpy, torch

    indices = []
    for index, experiment in _experiment_items(config):
        for name in experiment.get("systems", []):
            try:
                cls, options = resolve_system(config, name, f"experiments[{index}].systems")
            except ConfigError:  # reported by the registry's checks
                continue
            if "policy" in cls.wants(options):
                indices.append(index)
                break
    return indices


def _model_problems(config: dict) -> list[str]:
    """Named models (``models.<name>``) that cannot be built, and experiment models that
    are neither built-ins nor named."""
    from commgnn.models.gnn import MODEL_NAMES  # deferred: imports numpy, torch

    named = config.get("models") or {}
    problems = []
    for name, entry in named.items():
        problems += named_model_problems(name, entry)
    for index, experiment in _experiment_items(config):
        for model in experiment["models"]:
            base = split_model(model)[0]
            if base not in named and base not in MODEL_NAMES:
                problems.append(f"experiments[{index}].models: {model!r}: {base!r} is "
                                f"neither a built-in model ({', '.join(MODEL_NAMES)}) nor "
                                "in 'models'")
    return problems


def named_model_problems(name: str, entry: dict) -> list[str]:
    """A ``models.<name>`` entry's problems, one line each naming its key: a name taken by
    a built-in, not exactly one of ``model``/``conv``, an unknown built-in, a ``conv`` that
    is not a ``torch_geometric.nn`` convolution or does not take bipartite input, ``args``
    its class rejects. ``conv`` and ``args`` are checked for real: the layer (or the
    built-in model) is constructed with small sizes and run on a tiny bipartite block."""
    from commgnn.models.gnn import _ALIASES, MODEL_NAMES  # deferred: imports numpy, torch

    where = f"models.{name}"
    if name in _ALIASES:
        return [f"{where}: {name!r} is a built-in model; a named model needs another name"]
    if ("model" in entry) == ("conv" in entry):
        return [f"{where}: needs exactly one of 'model' (a built-in: "
                f"{', '.join(MODEL_NAMES)}) and 'conv' (a torch_geometric.nn convolution)"]
    if "conv" in entry:
        from commgnn.models.pyg import conv_problem  # deferred: imports numpy, torch

        found = conv_problem(entry["conv"], entry.get("args"))
        return [f"{where}.{found[0]}: {found[1]}"] if found else []
    builtin = entry["model"]
    if builtin not in MODEL_NAMES:
        return [f"{where}.model: {builtin!r} is not a built-in model "
                f"({', '.join(MODEL_NAMES)})"]
    if entry.get("args"):
        message = _builtin_args_problem(builtin, entry["args"])
        if message:
            return [f"{where}.args: {message}"]
    return []


def _builtin_args_problem(builtin: str, args: dict) -> str | None:
    """Why the built-in ``builtin`` cannot be built with ``args`` and run on two tiny
    blocks, or None."""
    import torch  # deferred: imports torch

    from commgnn.core.blocks import Block  # deferred: imports numpy, torch
    from commgnn.models.gnn import build_model  # deferred: imports numpy, torch

    blocks = [Block(num_src=4, num_dst=3, indptr=torch.tensor([0, 2, 3, 4]),
                    indices=torch.tensor([1, 3, 0, 2])),
              Block(num_src=3, num_dst=2, indptr=torch.tensor([0, 1, 3]),
                    indices=torch.tensor([2, 0, 2]))]
    x = torch.linspace(-1.0, 1.0, 4 * 6).reshape(4, 6)
    try:
        with torch.random.fork_rng(devices=[]):  # validating leaves the RNG as it was
            model = build_model(builtin, 6, 4, 3, num_layers=2, dropout=0.0, heads=2, **args)
            model.eval()
            with torch.no_grad():
                model(blocks, x)
    except Exception as exc:  # the config's problem, whatever the model raises
        text = " ".join(str(exc).split()) or "(no message)"
        return f"{builtin} with args {args} fails: {type(exc).__name__}: {text}"
    return None


def _model_depths(config: dict) -> dict[str, int]:
    """Every experiment model's depth: its suffix, else the length of ``fanouts``."""

    fanouts = (config.get("training") or {}).get("fanouts", TRAINING_DEFAULTS["fanouts"])
    depths = {}
    for _, experiment in _experiment_items(config):
        for model in experiment["models"]:
            depths[model] = split_model(model)[1] or len(fanouts)
    return depths


def _depth_problems(config: dict) -> list[str]:
    training = config.get("training") or {}
    problems = []
    for depth, fanouts in (training.get("depth_fanouts") or {}).items():
        if len(fanouts) != int(depth):
            problems.append(f"training.depth_fanouts.{depth}: {fanouts}: {len(fanouts)} "
                            f"fan-outs for {depth} layers")
    eval_fanouts = training.get("eval_fanouts")
    if eval_fanouts not in (None, "training"):
        for model, depth in sorted(_model_depths(config).items()):
            if len(eval_fanouts) != depth:
                problems.append(f"training.eval_fanouts: {eval_fanouts}: {len(eval_fanouts)} "
                                f"fan-outs, but model {model!r} has {depth} layers")
    return problems


def _network_uses(config: dict) -> dict[str, set[int]]:
    """For each network name an experiment uses: the worker counts it runs with."""
    parts = {name: spec["parts"] for name, spec in config.get("partitionings", {}).items()}
    uses: dict[str, set[int]] = {}
    for _, experiment in _experiment_items(config):
        counts = {parts[p] for p in experiment["partitionings"] if p in parts}
        for network in experiment["networks"]:
            uses.setdefault(network, set()).update(counts)
    control_network = (config.get("control") or {}).get("network")
    if control_network is not None:
        uses.setdefault(control_network, set()).update(parts.values())
    return uses


def _network_runs(config: dict) -> dict[str, dict[tuple[int, int], list[int]]]:
    """For each network name an experiment runs on: (workers, epochs) → the
    experiments that run it so (an experiment's own ``epochs`` over the training's)."""
    epochs = (config.get("training") or {}).get("epochs", 3)
    parts = {name: spec["parts"] for name, spec in config.get("partitionings", {}).items()}
    runs: dict[str, dict[tuple[int, int], list[int]]] = {}
    for index, experiment in _experiment_items(config):
        length = experiment.get("epochs", epochs)
        for part in experiment["partitionings"]:
            if part not in parts:
                continue
            for network in experiment["networks"]:
                found = runs.setdefault(network, {}).setdefault((parts[part], length), [])
                if index not in found:
                    found.append(index)
    return runs


def _network_problems(config: dict) -> list[str]:
    """Links and congested machines that exist for every worker count the network runs
    with, a schedule the emulator can build, and a congestion schedule that delays some
    traffic within every run length it is used with."""
    from commgnn.network.netem import network_from_spec  # deferred: imports numpy

    epochs = (config.get("training") or {}).get("epochs", 3)
    problems = []
    networks = config.get("networks") or {}
    runs = _network_runs(config)
    for name, workers in sorted(_network_uses(config).items()):
        spec = networks.get(name)
        if spec is None:
            continue  # a preset, or undefined (reported by the experiment expansion)
        where = f"networks.{name}"
        found = []
        for count in sorted(workers):
            here = _link_problems(where, spec, count) + _congestion_problems(where, spec,
                                                                             count)
            if not here:
                try:
                    network_from_spec(spec, count, num_epochs=epochs)
                except ValueError as exc:  # netem refuses it (anything else is a bug)
                    here = [f"{where}: {exc} (with {count} workers)"]
            found += here
        problems += found or _silent_congestion_problems(where, spec, runs.get(name, {}))
    return problems


def _silent_congestion_problems(where: str, spec: dict,
                                runs: dict[tuple[int, int], list[int]]) -> list[str]:
    """A congestion schedule that never delays anything in runs of the epochs (and
    workers) it is used with: its onset or warm-up at or past the run's end (or on the
    final epoch that ``final_clean`` keeps clean), an epoch table of later epochs only,
    zero delays, no traffic class. The ``clean`` scenario is a control: exempt."""
    from commgnn.network.netem import network_from_spec  # deferred: imports numpy

    congestion = spec.get("congestion") or {}
    if congestion.get("kind", "none") == "none" or congestion.get("name") == "clean":
        return []
    if default_congested_traffic(congestion) == []:
        return [f"{where}.congestion.applies_to: []: delays no traffic class"]
    silent: dict[int, list[int]] = {}  # epochs -> experiments
    for (workers, epochs), indices in sorted(runs.items()):
        try:
            schedule = network_from_spec(spec, workers, num_epochs=epochs).congestion
        except ValueError:
            continue  # refused where it is built (the checks above)
        if isinstance(schedule, NoCongestion):
            continue
        if isinstance(schedule, TimeSchedule):
            fires = any(delays for _, delays in schedule.to_dict()["segments"])
        else:
            fires = any(schedule.node_delays_s(epoch) for epoch in range(epochs))
        if not fires:
            silent.setdefault(epochs, [])
            silent[epochs] += [i for i in indices if i not in silent[epochs]]
    problems = []
    for epochs, indices in sorted(silent.items()):
        cause, why = _silent_cause(congestion, epochs)
        problems.append(f"{where}.congestion.{cause}: never fires in a {epochs}-epoch run"
                        f"{why} ({', '.join(f'experiments[{i}]' for i in sorted(indices))})")
    return problems


def _silent_cause(congestion: dict, epochs: int) -> tuple[str, str]:
    """``<key>: <value>`` of the setting that keeps a congestion schedule from firing in
    an ``epochs``-epoch run (:func:`_silent_congestion_problems`), and why, if not plain."""

    kind = congestion["kind"]
    if kind not in BUILT_IN:  # a registered kind says it (e.g. GreenDyGNN's presets)
        cause = congestion_kind(kind).silent_cause
        return cause(congestion, epochs) if cause is not None else (f"kind: {kind}", "")
    if kind == "epochs":
        table = sorted(int(e) for e in congestion.get("table") or {})
        if all(e >= epochs for e in table) and not congestion.get("period"):
            return f"table: epochs {table}", f" (epochs 0..{epochs - 1})"
        return f"table: {congestion.get('table')!r}", ""
    return f"segments: {congestion.get('segments')!r}", ": no segment delays a machine"


def _link_problems(where: str, spec: dict, workers: int) -> list[str]:
    problems = []
    for index, link in enumerate(spec.get("links") or []):
        for end in ("src", "dst"):
            if link[end] >= workers:
                problems.append(f"{where}.links[{index}].{end}: {link[end]}: no such worker "
                                f"in a {workers}-worker run (workers 0..{workers - 1})")
        if link["src"] == link["dst"]:
            problems.append(f"{where}.links[{index}]: src = dst = {link['src']}: a link joins "
                            "two workers")
    return problems


def _machines(spec: dict, workers: int) -> int:
    return math.ceil(workers / spec.get("workers_per_node", 1))


def _congestion_problems(where: str, spec: dict, workers: int) -> list[str]:
    congestion = spec.get("congestion") or {}
    machines = _machines(spec, workers)
    named: list[tuple[str, int]] = []
    kind = congestion.get("kind")
    if kind is not None and kind not in BUILT_IN:  # a registered kind names its own
        named = congestion_kind(kind).named_nodes(congestion)
    elif kind == "epochs":
        named = [(f"table.{epoch}.{node}", int(node))
                 for epoch, row in (congestion.get("table") or {}).items() for node in row]
    elif kind == "time":
        named = [(f"segments[{i}].delays_ms.{node}", int(node))
                 for i, seg in enumerate(congestion.get("segments") or [])
                 for node in (seg.get("delays_ms") or {})]
    return [f"{where}.congestion.{key}: {node}: no such machine in a {workers}-worker run "
            f"({machines} machines, 0..{machines - 1})" for key, node in named
            if node >= machines]


def _timeout_problems(config: dict) -> list[str]:
    """Timeouts under :data:`MIN_TIMEOUT_S`, and RPC/collective timeouts no longer than
    one empty round trip (all-reduce) on a network an experiment runs on, at its fixed time
    dilation (``auto``: at least 1)."""
    from commgnn.network.netem import network_from_spec  # deferred: imports numpy

    training = {**TRAINING_DEFAULTS, **(config.get("training") or {})}
    problems = [f"training.{key}: {training[key]}: shorter than {MIN_TIMEOUT_S} s, which "
                "worker start-up alone needs" for key in ("rpc_timeout_s",
                                                           "collective_timeout_s")
                if training[key] < MIN_TIMEOUT_S]
    if problems:
        return problems
    for name, workers in sorted(_network_uses(config).items()):
        try:
            spec = network_spec(config, name)
            worst = {count: _worst_round_trips(network_from_spec(spec, count,
                                                                 training["epochs"]),
                                               training["epochs"]) for count in workers}
        except (ValueError, KeyError, IndexError, TypeError):
            continue  # a bad link or congestion spec: reported by the network checks
        for count, (rpc_s, allreduce_s) in sorted(worst.items()):
            for key, need in (("rpc_timeout_s", rpc_s), ("collective_timeout_s", allreduce_s)):
                if training[key] <= need:
                    problems.append(
                        f"training.{key}: {training[key]}: network {name!r} with {count} "
                        f"workers takes {need:.3g} s for an empty "
                        f"{'round trip' if key == 'rpc_timeout_s' else 'all-reduce'} "
                        "(dilated, congested): no such call can finish in time")
    return problems


def _worst_round_trips(emulator, epochs: int) -> tuple[float, float]:
    """The slowest empty RPC round trip and empty ring all-reduce of any epoch."""
    workers = emulator.num_workers
    rpc_s = allreduce_s = 0.0
    for epoch in range(epochs):
        for src in range(workers):
            for dst in range(workers):
                if src != dst:
                    rpc_s = max(rpc_s, emulator.request_cost_s(src, dst, 0, 0, epoch, 0.0))
            allreduce_s = max(allreduce_s, emulator.ring_allreduce_cost_s(src, workers, 0,
                                                                          epoch, 0.0))
    return rpc_s, allreduce_s


# -- this host --------------------------------------------------------------------------
def host_problems(config: dict) -> list[str]:
    """What the config asks of this machine: :func:`path_problems`, and the training
    settings of :func:`training_host_problems` when there are experiments to run."""
    problems = path_problems(config)
    if config.get("experiments"):
        problems += training_host_problems(config.get("training") or {})
    return problems


def path_problems(config: dict) -> list[str]:
    """A results directory that is (or can become) a writable directory, dataset paths
    and the files the ``systems`` entries name (``System.path_problems``) that exist."""
    problems = _results_problems(config.get("results_dir", "results"))
    for name, spec in config.get("datasets", {}).items():
        problems += _dataset_path_problems(name, spec)
    return problems + _system_path_problems(config)


def _system_path_problems(config: dict) -> list[str]:
    """Files the options of each ``systems`` entry name (``System.path_problems``)."""
    from commgnn.systems.registry import resolve_system  # deferred: imports numpy, torch

    problems = []
    for name in config.get("systems") or {}:
        where = f"systems.{name}"
        try:
            cls, options = resolve_system(config, name, where)
        except ConfigError:  # reported by the config checks
            continue
        problems += cls.path_problems(where, options)
    return problems


def _results_problems(results_dir: str) -> list[str]:
    path = Path(results_dir)
    existing = next((p for p in [path, *path.parents] if p.exists()), Path("."))
    if existing.is_file() or (existing != path and not existing.is_dir()):
        what = "is a file" if existing == path else f"is under the file {existing}"
        return [f"results_dir: {results_dir!r}: {what}, not a directory"]
    if not os.access(existing, os.W_OK | os.X_OK):
        return [f"results_dir: {results_dir!r}: {existing} is not writable"]
    return []


def _dataset_path_problems(name: str, spec: dict) -> list[str]:
    where = f"datasets.{name}"
    if spec["source"] == "planetoid":
        root = Path(spec["path"])
        if not root.is_dir():
            return [f"{where}.path: {spec['path']!r}: no such directory"]
        missing = [f"ind.{spec['name']}.{s}" for s in PLANETOID_FILES
                   if not (root / f"ind.{spec['name']}.{s}").is_file()]
        if missing:
            return [f"{where}.path: {spec['path']!r}: lacks {', '.join(missing)}"]
    elif spec["source"] in ("ogb", "reddit") and Path(spec.get("root", ".")).is_file():
        return [f"{where}.root: {spec['root']!r}: is a file, not a directory"]
    return []


def training_host_problems(training: dict, rendezvous: bool = True) -> list[str]:
    """Whether this host has the ``training`` section's interface and device and, with
    ``rendezvous`` (the local launcher serves it here), its master address and fixed master
    port. Run where the workers start (``commgnn train``)."""

    settings = {**TRAINING_DEFAULTS, **training}
    problems = []
    addresses = _local_addresses()
    interface = settings["interface"]
    if interface is not None and interface not in addresses:
        problems.append(f"training.interface: {interface!r}: no such network interface "
                        f"here (have {', '.join(sorted(addresses))})")
    if not rendezvous:
        return problems + _device_problems(settings["device"])
    addr = settings["master_addr"]
    local = _is_local(addr, addresses)
    if local is None:
        problems.append(f"training.master_addr: {addr!r}: does not resolve")
    elif not local:
        problems.append(f"training.master_addr: {addr!r}: not an address of this host, "
                        "where the local launcher starts the rendezvous")
    elif interface is not None and interface in addresses and \
            not _is_local(addr, {interface: addresses[interface]}):
        problems.append(f"training.master_addr: {addr!r}: not on training.interface "
                        f"{interface!r} ({', '.join(addresses[interface])})")
    port = settings["master_port"]
    if port and local and _port_busy(addr, port):
        problems.append(f"training.master_port: {port}: in use on {addr} "
                        "(0 picks a free port)")
    return problems + _device_problems(settings["device"])


def _device_problems(device: str) -> list[str]:
    if device == "cuda":
        import torch  # deferred: imports torch

        if not torch.cuda.is_available():
            return ["training.device: 'cuda': this host has no usable CUDA device"]
    return []


def _local_addresses() -> dict[str, list[str]]:
    """Interface name → its IPv4/IPv6 addresses."""
    import psutil  # deferred: imports psutil

    return {name: [a.address.split("%")[0] for a in entries
                   if a.family in (socket.AF_INET, socket.AF_INET6)]
            for name, entries in psutil.net_if_addrs().items()}


def _is_local(addr: str, addresses: dict[str, list[str]]) -> bool | None:
    """Whether ``addr`` (a name or an address) is one of ``addresses``; None if it does
    not resolve."""
    try:
        infos = socket.getaddrinfo(addr, None)
    except socket.gaierror:
        return None
    mine = {ipaddress.ip_address(a) for found in addresses.values() for a in found}
    loopback = any(ip.is_loopback for ip in mine)  # 127.0.1.1 … are local where lo is
    ips = {ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos}
    return any(ip in mine or (loopback and ip.is_loopback and ip.version == 4)
               for ip in ips)


def _port_busy(addr: str, port: int) -> bool:
    """Whether the store could not listen on ``addr:port`` (bound as it binds, with
    ``SO_REUSEADDR``, so a finished run's TIME_WAIT sockets do not count)."""
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((addr, port))
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False
