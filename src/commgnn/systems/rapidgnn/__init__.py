"""The ``rapidgnn`` system: its runtime in ``system``."""
