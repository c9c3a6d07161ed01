"""Exceptions the CLI reports as one clear line (kept free of heavy imports)."""


class WorkerFailed(RuntimeError):
    """A worker process of a distributed run failed; the message names it."""
