"""The core every layer shares: errors, files, provenance, the config schema, the run
spec, batches, placements, counts and the path layout. It imports nothing of commgnn
above it."""
