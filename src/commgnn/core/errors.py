"""The errors the CLI reports as one clear line (kept free of heavy imports).

Every user-facing failure is a :class:`CommgnnError`: its message is one line naming the
file, config key or worker, the offending value and what is wrong. Anything else escaping
a command is a bug; the CLI reports it as one line too and shows the traceback only with
``--debug``.
"""


class CommgnnError(Exception):
    """A failure the user can act on; the message is one line naming what is wrong."""


class ConfigError(CommgnnError, ValueError):
    """The configuration is invalid; the message names the key path and the value."""


class HostError(ConfigError):
    """The configuration asks for something this host lacks (a network interface, an
    address, a CUDA device, a writable directory); the message names the key."""


class InputError(CommgnnError, RuntimeError):
    """An input file or directory is missing, truncated, corrupt or inconsistent; the
    message names it. Dataset, partition and presample errors derive from this."""


class StaleInputError(InputError):
    """A derived artefact (partition, presampled blocks, calibration, policy) was made from
    other inputs than the ones given now; the message names it and how to rebuild it."""


class NotApplicable(CommgnnError):
    """A figure or claim needs runs the config did not make (a system, a partitioning
    method); the message says what. The claims ledger files its claims as "not
    applicable"; it is no error in the inputs."""


class WorkerFailed(CommgnnError, RuntimeError):
    """A worker process of a distributed run failed; the message names it."""
