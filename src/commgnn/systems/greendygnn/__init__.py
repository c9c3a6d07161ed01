"""The ``greendygnn`` system: its runtime in ``system``."""
