"""Emulated devices on this host: a Raspberry Pi 5 behind a real sshd, a Pixel 8 behind the real adb server.

`etfarm devices emulate` (cli/devices.py) starts them (fleet.py) and writes an inventory naming them; the
integration tests start the same peers as fixtures. Every process started here carries a unique environment
tag, so stopping kills it and everything it spawned (sshd sessions, `timeout` process groups, orphans of a
killed daemon) without touching anything else on the machine.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import time
import uuid
from pathlib import Path
from typing import NoReturn

from orchestrator.base.errors import EtfarmError

__all__ = ["TAG_VAR", "ToolMissing", "descendant_pids", "free_port", "kill_tagged", "missing", "new_tag",
           "require_tool", "tagged_env", "tagged_pids", "wait_port"]

TAG_VAR = "ETFARM_TESTBED_TAG"


class ToolMissing(EtfarmError):
    """A program an emulated device needs is not installed here (the tests skip on it, or fail under CI=true)."""


def missing(reason: str) -> NoReturn:
    raise ToolMissing(reason)


def require_tool(name: str) -> str:
    """Path of a tool (a name on PATH or an absolute path), or ToolMissing naming the package to install."""
    found = shutil.which(name) or (name if os.path.isabs(name) and os.access(name, os.X_OK) else None)
    if found:
        return found
    missing(f"{name!r} is not installed (Debian: `make testbed` or scripts/install-testbed.sh installs what "
            "emulated devices need)")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def new_tag() -> str:
    return f"etfarm-testbed-{uuid.uuid4().hex}"


def wait_port(port: int, timeout_s: float, alive: object = None, host: str = "127.0.0.1") -> None:
    """Wait until host:port accepts connections; `alive()` returning False aborts early."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if callable(alive) and not alive():
            raise RuntimeError(f"process for port {port} exited before listening")
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout_s} s")


def tagged_pids(tag: str) -> list[int]:
    """Processes whose environment holds TAG_VAR=tag (root sees every process)."""
    needle = f"{TAG_VAR}={tag}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            pids.append(int(entry.name))
    return pids


def descendant_pids(root: int) -> list[int]:
    """Every live descendant of `root` (children first found, then theirs), from /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # the process ended while we looked
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, queue = [], [root]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def kill_tagged(tag: str, timeout_s: float = 3.0) -> None:
    """SIGKILL every process carrying `tag` until none is left (or the timeout passes)."""
    deadline = time.monotonic() + timeout_s
    while True:
        pids = tagged_pids(tag)
        if not pids or time.monotonic() > deadline:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)


def tagged_env(tag: str, **extra: str) -> dict[str, str]:
    return {**os.environ, TAG_VAR: tag, **extra}
