"""Fixtures of the model tests."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture
def one_thread():
    """These small kernels run fastest single-threaded (and far faster on a busy machine)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
