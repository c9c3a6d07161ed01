"""The ``default`` system: its runtime in ``system``."""

from commgnn.core.description import SystemDescription

DESCRIPTION = SystemDescription(
    name="default",
    colour="#332288",
    figure_labels=r"DGL\b|LO\b|GCN$",  # DGL-METIS/-Random, HopGNN's LO, RapidGNN's GCN
    options={
        "schedule": {"enum": ["owned", "global"], "default": "owned",
                     "description": "owned: each worker trains its partition's training "
                                    "nodes; global: the shuffled training set split evenly "
                                    "across workers"},
        "sampling": {"enum": ["distributed", "replicated"], "default": "distributed",
                     "description": "distributed: other partitions' rows sampled by their "
                                    "owners over RPC (DistDGL); replicated: the whole graph "
                                    "on every worker, free"},
    },
)
