"""commgnn.partition."""
