"""The ``p3`` system: its runtime in ``system``."""
