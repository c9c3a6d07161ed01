"""Exact communication counts of feature fetches (no timings but the last RTTs)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FetchCounts:
    """Communication of one or more fetches (exact counts, no timings)."""

    remote_rpcs: int = 0
    remote_rows: int = 0
    remote_bytes: int = 0
    local_rows: int = 0
    per_owner_rows: dict[int, int] = field(default_factory=dict)
    rtt_s: dict[int, float] = field(default_factory=dict)  # per owner, last request (timing)

    def add(self, other: FetchCounts) -> None:
        self.remote_rpcs += other.remote_rpcs
        self.remote_rows += other.remote_rows
        self.remote_bytes += other.remote_bytes
        self.local_rows += other.local_rows
        for owner, rows in other.per_owner_rows.items():
            self.per_owner_rows[owner] = self.per_owner_rows.get(owner, 0) + rows
        self.rtt_s.update(other.rtt_s)
