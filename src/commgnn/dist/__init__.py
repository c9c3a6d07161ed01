"""commgnn.dist."""
