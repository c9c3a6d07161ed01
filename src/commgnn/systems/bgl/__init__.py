"""The ``bgl`` system: its runtime in ``system``."""
