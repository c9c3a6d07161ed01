"""Which clock a run's times are on, and whether a paper's time claims can be judged on it.

The papers time GPUs talking over real networks. A run here is on one of these clocks
(``summary["clock"]``, a column of the runs table):

- ``dilated``: CPU compute with the emulated network slowed by f > 1 and times divided by
  f, which keeps the target's compute : communication proportion;
- ``accelerator, emulated network``: compute on a GPU (already the target's speed, so
  f = 1 is right) with the emulated links;
- ``accelerator, real network``: compute on GPUs across hosts with no emulation (the
  ``none`` network, workers on more than one host): a real cluster;
- ``raw CPU``: CPU compute at f = 1 — compute-bound here, so a communication speedup says
  nothing of a GPU cluster;
- ``accelerator, no network``: GPUs on one host with the ``none`` network: transfers cost
  nothing, so communication is not measured at all.

The first three are judged (:data:`JUDGED`); the claims ledger marks a time or energy claim
"not comparable" on any other.
"""

from __future__ import annotations

from collections.abc import Sequence

DILATED = "dilated"
ACCELERATOR_EMULATED = "accelerator, emulated network"
ACCELERATOR_REAL = "accelerator, real network"
RAW_CPU = "raw CPU"
ACCELERATOR_LOOPBACK = "accelerator, no network"
CLOCKS = (DILATED, ACCELERATOR_EMULATED, ACCELERATOR_REAL, RAW_CPU, ACCELERATOR_LOOPBACK)
#: Clocks on which a paper's time claims can be judged.
JUDGED = (DILATED, ACCELERATOR_EMULATED, ACCELERATOR_REAL)


def network_mode(emulates: bool, hosts: Sequence[str]) -> str:
    """``emulated`` (some transfer costs modelled time), ``real`` (nothing emulated,
    workers on several hosts) or ``loopback`` (nothing emulated, one host)."""
    if emulates:
        return "emulated"
    return "real" if len(set(hosts)) > 1 else "loopback"


def run_clock(time_dilation: float, device: str, network: str | None) -> str:
    """The clock of a run with this dilation, training device and :func:`network_mode`
    (None: not recorded — runs from before it, judged by their dilation alone)."""
    if time_dilation > 1:
        return DILATED
    if not str(device).startswith("cuda"):
        return RAW_CPU
    if network == "real":
        return ACCELERATOR_REAL
    if network == "loopback":
        return ACCELERATOR_LOOPBACK
    return ACCELERATOR_EMULATED
