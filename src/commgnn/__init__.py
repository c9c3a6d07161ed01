"""commgnn: communication-efficient distributed GNN training on one substrate."""

__version__ = "0.1.0"
