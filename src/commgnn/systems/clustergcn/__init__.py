"""The ``clustergcn`` system: its runtime in ``system``."""
