"""commgnn.models."""
