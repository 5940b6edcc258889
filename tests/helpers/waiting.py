"""Waiting for something a thread or a peer does, with a deadline: never a fixed sleep that CI could outrun."""

from __future__ import annotations

import time
from collections.abc import Callable


def eventually(check: Callable[[], bool], timeout_s: float = 5.0, poll_s: float = 0.02) -> bool:
    """Whether `check()` holds within `timeout_s` (asked every `poll_s`, and once more at the deadline)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(poll_s)
    return check()
