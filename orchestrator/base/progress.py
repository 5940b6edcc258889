"""Progress lines for long work: one line per step, prefixed by elapsed time and device.

Every line is also logged at INFO on `etfarm.progress` (`etfarm.progress.<device>`), even with
`quiet`, so a run's etfarm.log holds the progress beside the device commands.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import TextIO

PROGRESS_LOGGER = "etfarm.progress"


class Progress:
    """Thread-safe progress printer; each device thread reports through the same instance."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False) -> None:
        self._stream = stream
        self._quiet = quiet
        self._started = time.monotonic()
        self._lock = threading.Lock()

    def __call__(self, message: str, device: str | None = None) -> None:
        logging.getLogger(f"{PROGRESS_LOGGER}.{device}" if device else PROGRESS_LOGGER).info("%s", message)
        if self._quiet:
            return
        prefix = f"[{time.monotonic() - self._started:6.1f}s]"
        if device:
            prefix += f" [{device}]"
        with self._lock:
            stream = self._stream or sys.stderr
            print(f"{prefix} {message}", file=stream, flush=True)

    def for_device(self, device: str) -> DeviceProgress:
        return DeviceProgress(self, device)


class DeviceProgress:
    def __init__(self, progress: Progress, device: str) -> None:
        self._progress = progress
        self.device = device

    def __call__(self, message: str) -> None:
        self._progress(message, self.device)
