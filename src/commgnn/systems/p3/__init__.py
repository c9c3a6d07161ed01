"""The ``p3`` system: its runtime in ``system``."""

from commgnn.core.description import SystemDescription
from commgnn.systems.default import DESCRIPTION as DEFAULT

DESCRIPTION = SystemDescription(
    name="p3",
    colour="#882255",
    figure_labels=r"P3\b|p3\+",
    options={
        "pipeline": {"type": "integer", "minimum": 0, "maximum": 8, "default": 0,
                     "description": "P3's pipelining: the first layer of the batch this "
                                    "many steps ahead starts with each step (its activation "
                                    "transfer overlaps the steps in between), on layer-1 "
                                    "weights that many updates stale; 0: none, exact"},
    },
    base=DEFAULT,
)
