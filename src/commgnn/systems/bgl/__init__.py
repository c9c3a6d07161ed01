"""The ``bgl`` system: its runtime in ``system``."""

from commgnn.core.description import SystemDescription
from commgnn.systems.default import DESCRIPTION as DEFAULT

DESCRIPTION = SystemDescription(
    name="bgl",
    colour="#999933",
    figure_labels=r"BGL\b",
    options={
        "prefetch_depth": {"type": "integer", "minimum": 1, "maximum": 1024, "default": 4,
                           "description": "steps sampled and fetched ahead by the background "
                                          "producer"},
        "cache_rows": {"type": "integer", "minimum": 0, "default": 0,
                       "description": "FIFO cache capacity (remote feature rows); 0 (the "
                                      "default) = no cache, GreenDyGNN's BGL (0 % hit rate, "
                                      "its Fig. 7)"},
    },
    base=DEFAULT,
)
