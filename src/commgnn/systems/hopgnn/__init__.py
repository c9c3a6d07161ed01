"""The ``hopgnn`` system: its runtime in ``system``."""

from commgnn.core.description import SystemDescription
from commgnn.systems.default import DESCRIPTION as DEFAULT

DESCRIPTION = SystemDescription(
    name="hopgnn",
    colour="#88CCEE",
    figure_labels=r"HopGNN|Naive\b|\+MG|\+PG|All\b",  # and its ablation ladder
    options={
        "mode": {"enum": ["micrograph", "naive"], "default": "micrograph",
                 "description": "micrograph: HopGNN (§5); naive: migrate the model per "
                                "subgraph with its intermediate data (§3.2)"},
        "pregather": {"type": "boolean", "default": True,
                      "description": "fetch each iteration's remote rows once, before the "
                                     "time steps (§5.2)"},
        "merging": {"enum": ["none", "search", "fixed"], "default": "search",
                    "description": "search: merge time steps while epochs get faster "
                                   "(§5.3); fixed: remove `merges` steps; none"},
        "merges": {"type": "integer", "minimum": 0, "default": 1,
                   "description": "time steps removed per iteration with merging: fixed"},
        "sampling": DEFAULT.options["sampling"],
    },
    figures={
        "hopgnn_table1": ("partitions",),
        "hopgnn_fig11": ("runs",),
        "hopgnn_fig13": ("runs",),
        "hopgnn_fig14": ("runs",),
        "hopgnn_fig16": ("runs",),
        "hopgnn_table3": ("runs",),
    },
)
