"""commgnn.systems."""
