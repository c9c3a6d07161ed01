"""commgnn.energy."""
