"""Communication strategies: ``default`` (on-demand fetch), ``oracle`` (all local),
``rapidgnn`` (presampled batches, steady cache, prefetcher)."""

from commgnn.systems import default, oracle, rapidgnn  # noqa: F401  (registration)
from commgnn.systems.base import SYSTEMS, PreparedBatch, System, get_system, register_system

__all__ = ["SYSTEMS", "PreparedBatch", "System", "get_system", "register_system"]
