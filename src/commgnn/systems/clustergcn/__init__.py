"""The ``clustergcn`` system: its runtime in ``system``."""

from commgnn.core.description import SystemDescription

DESCRIPTION = SystemDescription(
    name="clustergcn",
    colour="#DDCC77",
    figure_labels=r"Cluster-?GCN",
    options={
        "clusters": {"type": "integer", "minimum": 1, "default": 64,
                     "description": "C: clusters of the whole graph, a multiple of the "
                                    "workers (each worker clusters its partition into C/P "
                                    "with METIS)"},
        "clusters_per_batch": {"type": "integer", "minimum": 1, "default": 4,
                               "description": "q: clusters whose union (every edge among "
                                              "them kept) is one batch"},
        "diag_lambda": {"type": "number", "minimum": 0, "default": 1.0,
                        "description": "lambda of the diagonal enhancement (Ã + λ diag(Ã), "
                                       "Ã = (D+I)^-1 (A+I)); 0: plain row normalisation"},
    },
    partition_methods=("metis",),
    figures={"grappa_table5": ("runs", "partition_stats")},
)
