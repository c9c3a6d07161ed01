"""Exceptions the CLI reports as one clear line (kept free of heavy imports)."""


class InputError(RuntimeError):
    """An input file or directory is missing, truncated, corrupt or inconsistent; the
    message names it. Dataset, partition and presample errors derive from this."""


class WorkerFailed(RuntimeError):
    """A worker process of a distributed run failed; the message names it."""
