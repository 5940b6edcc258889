"""Per-device file locks: two etfarm runs (or a scripted human) never share a device."""

from __future__ import annotations

import fcntl
import getpass
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from orchestrator.cache import cache_dir
from orchestrator.errors import DeviceError

LOCK_POLL_SEC = 0.5


@contextmanager
def device_lock(device: str, *, wait: bool = True, on_wait: Callable[[str], None] = lambda s: None,
                timeout_s: float | None = None) -> Iterator[None]:
    """Hold the device's lock for the block. Busy: wait (telling on_wait who holds it) or fail."""
    path = cache_dir("locks") / f"{device}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not _try_lock(fd):
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "another process"
            if not wait:
                raise DeviceError(device, f"device is busy: locked by {holder} (drop --no-wait to wait for it)")
            on_wait(f"waiting for the device lock held by {holder}")
            deadline = None if timeout_s is None else time.monotonic() + timeout_s
            while not _try_lock(fd):
                if deadline is not None and time.monotonic() > deadline:
                    raise DeviceError(device, f"gave up after {timeout_s:g} s waiting for the device lock held by {holder} "
                                              f"(--lock-timeout)")
                time.sleep(LOCK_POLL_SEC)
        os.ftruncate(fd, 0)
        holder = f"pid {os.getpid()} of {getpass.getuser()}@{socket.gethostname()} since {time.strftime('%H:%M:%S')}"
        os.pwrite(fd, holder.encode(), 0)
        yield
    finally:
        os.close(fd)  # closing releases the flock


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
