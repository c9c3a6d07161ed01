"""commgnn.control."""
