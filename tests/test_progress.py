"""Progress lines of a long step: throttled, the last always, the time left estimated."""

from __future__ import annotations

import logging

from commgnn.core.progress import Progress


def test_lines_are_throttled_and_the_last_always_comes(caplog):
    now = [0.0]
    progress = Progress("presample", 4, "worker-epochs", logging.getLogger("t"), every_s=10,
                        clock=lambda: now[0])
    with caplog.at_level(logging.INFO, logger="t"):
        for t in (3.0, 12.0, 15.0, 16.0):  # due at 12 s (10 s since the start), and the end
            now[0] = t
            progress.advance()
    assert caplog.messages == [
        "presample: 2/4 worker-epochs (50 %), 12 s, about 12 s left",
        "presample: 4/4 worker-epochs (100 %), 16 s"]


def test_nothing_to_do_is_one_line(caplog):
    progress = Progress("train-policy", 0, "episodes", logging.getLogger("t"),
                        clock=lambda: 5.0)
    with caplog.at_level(logging.INFO, logger="t"):
        progress.advance(0)
    assert caplog.messages == ["train-policy: 0/0 episodes, 0 s"]
