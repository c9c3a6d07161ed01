"""The ``oracle`` system: its runtime in ``system``."""
