"""What the job's watchdog reads of a device session from another thread (docs/architecture.md, "Faults: the job").

A device session beats at every step it finishes (and before each bounded retry); while it
waits for another job's device lock it is `waiting`, and no progress is expected (`--lock-timeout`
bounds that wait). The watchdog gives up a session that is neither waiting nor beating for longer
than one process run's whole step may take. Each retried step it starts (run/device/retry.py: connect,
stage, run MODEL run-K) is handed to `on_step`: a farm task announces it, so that a try lost with
its worker is recorded at the step it was in (farm/tries.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Heartbeat:
    def __init__(self, on_step: Callable[[str], None] = lambda step: None) -> None:
        self._lock = threading.Lock()
        self._last = time.monotonic()
        self._waiting = False
        self.on_step = on_step

    def trying(self, step: str) -> None:
        """A retried step starts (its name as run/device/retry.py records a failed try of it)."""
        self.on_step(step)

    def beat(self) -> None:
        """Progress: the lock wait (if any) is over."""
        with self._lock:
            self._last = time.monotonic()
            self._waiting = False

    def wait_for_lock(self) -> None:
        """Waiting for another job's device lock: not wedged, however long it takes."""
        with self._lock:
            self._waiting = True

    @property
    def waiting(self) -> bool:
        return self._waiting

    def silent_for(self, now: float | None = None) -> float:
        """Seconds since the last beat (0 while waiting for a lock)."""
        with self._lock:
            if self._waiting:
                return 0.0
            return (time.monotonic() if now is None else now) - self._last
