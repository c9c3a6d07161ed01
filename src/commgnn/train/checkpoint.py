"""Per-epoch checkpoints (model + optimiser + epoch), written atomically by rank 0.

Resuming from epoch ``e`` reproduces the uninterrupted run exactly: batches and sampling
depend only on (seed, worker, epoch, step), and each epoch reseeds torch's RNG (dropout)
from the same hash, so nothing else needs saving.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import torch

CHECKPOINT_FILE = "last.pt"
log = logging.getLogger(__name__)


def save_checkpoint(directory: Path, epoch: int, model: torch.nn.Module,
                    optimizer: torch.optim.Optimizer, run_key: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / CHECKPOINT_FILE
    tmp = directory / f".{CHECKPOINT_FILE}.tmp"
    torch.save({"epoch": epoch, "run_key": run_key, "model": model.state_dict(),
                "optimizer": optimizer.state_dict()}, tmp)
    os.replace(tmp, path)
    return path


def load_checkpoint(directory: Path, model: torch.nn.Module,
                    optimizer: torch.optim.Optimizer, run_key: str) -> int:
    """Restore the latest checkpoint; return the first epoch still to run.

    Returns 0 (start over) when there is none or it belongs to another configuration.
    """
    path = directory / CHECKPOINT_FILE
    if not path.is_file():
        return 0
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise RuntimeError(f"{path}: unreadable checkpoint ({exc}); delete it to start over") \
            from exc
    if state.get("run_key") != run_key:
        log.warning("%s: checkpoint of a different configuration; starting over", path)
        return 0
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return int(state["epoch"]) + 1
