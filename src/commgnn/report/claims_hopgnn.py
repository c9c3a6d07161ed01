"""The hopgnn paper's headline claims (see :mod:`commgnn.report.claims`)."""

from __future__ import annotations

from commgnn.report.claims import Claim

CLAIMS: list[Claim] = []
