"""The ``oracle`` system: its runtime in ``system``."""

from commgnn.core.description import SystemDescription
from commgnn.systems.default import DESCRIPTION as DEFAULT

DESCRIPTION = SystemDescription(
    name="oracle",
    colour="#DDDDDD",  # the compute-only limit: grey
    figure_labels=r"[Oo]racle\b",
    options={"sampling": {**DEFAULT.options["sampling"], "default": "replicated"}},
    uses_network=False,
    base=DEFAULT,
)
