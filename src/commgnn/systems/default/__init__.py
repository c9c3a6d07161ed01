"""The ``default`` system: its runtime in ``system``."""
