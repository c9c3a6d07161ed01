"""Seeded neighbour sampling, blocks (message-flow graphs) and presample I/O."""
