"""Per-epoch checkpoints (model, optimiser, every worker's system state, epoch), written
atomically by rank 0.

Resuming from epoch ``e`` reproduces the uninterrupted run exactly: batches and sampling
depend only on (seed, worker, epoch, step), each epoch reseeds torch's RNG (dropout)
from the same hash, and each worker's system restores its own ``state_dict``.
"""

from __future__ import annotations

import io
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from commgnn.core.errors import InputError

CHECKPOINT_FILE = "last.pt"
log = logging.getLogger(__name__)


@dataclass
class Checkpoint:
    """What a resume restores: the next epoch to run and each worker's system state."""

    next_epoch: int
    system_states: list[dict[str, Any]]


def save_checkpoint(directory: Path, epoch: int, model: torch.nn.Module,
                    optimizer: torch.optim.Optimizer, run_key: str,
                    system_states: list[dict[str, Any]]) -> Path:
    """Write the checkpoint of ``epoch`` atomically (a temporary file renamed over the last
    one). An OS error (a full disk …) is raised naming the file, and leaves the previous
    checkpoint and no temporary file behind."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / CHECKPOINT_FILE
    tmp = directory / f".{CHECKPOINT_FILE}.tmp"
    buffer = io.BytesIO()  # serialised first: torch's own writer hides the OS error
    torch.save({"epoch": epoch, "run_key": run_key, "model": model.state_dict(),
                "optimizer": optimizer.state_dict(), "systems": system_states}, buffer)
    try:
        with open(tmp, "wb") as handle:
            handle.write(buffer.getbuffer())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise OSError(exc.errno, exc.strerror, str(exc.filename or tmp)) from exc
    return path


def load_checkpoint(directory: Path, model: torch.nn.Module,
                    optimizer: torch.optim.Optimizer, run_key: str,
                    world_size: int) -> Checkpoint | None:
    """Restore the model and optimiser of the latest checkpoint.

    Returns ``None`` (start over) when there is none or it belongs to another
    configuration.
    """
    path = directory / CHECKPOINT_FILE
    if not path.is_file():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:
        detail = " ".join(str(exc).split())[:200]
        raise InputError(f"{path}: unreadable checkpoint ({detail}); delete it to start "
                         "over") from exc
    if state.get("run_key") != run_key:
        log.warning("%s: checkpoint of a different configuration; starting over", path)
        return None
    systems = state.get("systems")
    if not isinstance(systems, list) or len(systems) != world_size:
        raise InputError(f"{path}: no system state for {world_size} workers; delete it to "
                         "start over")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return Checkpoint(next_epoch=int(state["epoch"]) + 1, system_states=systems)
