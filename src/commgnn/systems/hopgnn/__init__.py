"""The ``hopgnn`` system: its runtime in ``system``."""
