"""Progress of a long step as log lines (a log file has no use for a redrawn bar):
``presample: 12/48 worker-epochs (25 %), 31 s, about 93 s left`` — at most one line every
``every_s`` seconds, and always the last."""

from __future__ import annotations

import logging
import time


class Progress:
    """Count ``total`` units of ``what``; :meth:`advance` logs when a line is due."""

    def __init__(self, what: str, total: int, unit: str, logger: logging.Logger,
                 every_s: float = 10.0, clock=time.monotonic) -> None:
        self.what, self.total, self.unit, self.log = what, max(0, int(total)), unit, logger
        self.every_s, self.clock = every_s, clock
        self.done = 0
        self.start = self.last = clock()

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = self.clock()
        if self.done >= self.total or now - self.last >= self.every_s:
            self.last = now
            self.log.info("%s", self.line(now))

    def line(self, now: float) -> str:
        elapsed = now - self.start
        text = f"{self.what}: {self.done}/{self.total} {self.unit}"
        if self.total:
            text += f" ({100 * self.done / self.total:.0f} %)"
        text += f", {elapsed:.0f} s"
        if 0 < self.done < self.total:
            text += f", about {elapsed * (self.total - self.done) / self.done:.0f} s left"
        return text
