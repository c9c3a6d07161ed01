"""commgnn.report."""
