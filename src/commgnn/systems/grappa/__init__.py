"""The ``grappa`` system: its runtime in ``system``."""
