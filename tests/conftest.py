"""Shared fixtures: repository paths and the optional ../shared material."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
PLANETOID = SHARED / "datasets" / "planetoid"


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def planetoid_dir() -> Path:
    if not (PLANETOID / "ind.cora.x").is_file():
        pytest.skip("../shared/datasets/planetoid is absent")
    return PLANETOID
