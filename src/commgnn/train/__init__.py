"""Training runs: run specs, the per-worker loop, metrics, checkpoints and evaluation."""
