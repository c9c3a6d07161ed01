"""The ``rapidgnn`` system: its runtime in ``system``."""

from commgnn.core.description import SystemDescription

DESCRIPTION = SystemDescription(
    name="rapidgnn",
    colour="#117733",
    figure_labels="RapidGNN",
    options={
        "n_hot": {"type": "integer", "minimum": 0, "default": 0,
                  "description": "steady-cache size (rows)"},
        "prefetch_depth": {"type": "integer", "minimum": 0, "maximum": 1024, "default": 4,
                           "description": "Q, batches staged ahead (0 = no prefetcher)"},
    },
    needs=("presample",),
    #: The paper's evaluation (§5): one module per result in ``figures/``; the roles
    #: (RapidGNN, DGL-METIS, DGL-Random, GCN) are in ``rapidgnn_runs``.
    figures={
        "rapidgnn_fig3": ("presamples",),
        "rapidgnn_table2": ("runs", "partition_stats", "datasets"),
        "rapidgnn_fig4": ("runs", "partition_stats", "datasets"),
        "rapidgnn_fig5": ("runs",),
        "rapidgnn_fig6": ("runs", "partition_stats", "datasets"),
        "rapidgnn_fig7": ("runs", "partition_stats", "datasets"),
        "rapidgnn_table3": ("runs", "partition_stats", "datasets", "run_dirs"),
        "rapidgnn_fig8": ("runs", "partition_stats", "datasets", "run_dirs"),
        "rapidgnn_fig9": ("runs", "partition_stats", "datasets", "run_dirs"),
    },
)
