"""Communication strategies, one module each; see :mod:`commgnn.systems.base` for the
contract and :mod:`commgnn.systems.registry` for discovery. Built in: ``default``
(on-demand fetch), ``oracle`` (all local), ``rapidgnn`` (presampled batches, steady
cache, prefetcher)."""

from commgnn.systems.base import PIPELINE_INPUTS, Placement, PreparedBatch, StepOutput, System
from commgnn.systems.registry import SYSTEMS, check_config, discover, get_system

__all__ = ["PIPELINE_INPUTS", "SYSTEMS", "Placement", "PreparedBatch", "StepOutput", "System",
           "check_config", "discover", "get_system"]
