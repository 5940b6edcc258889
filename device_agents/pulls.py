"""Pulling one file back from the device, safely.

The name must be plain and stay inside the host directory (workdir.safe_destination), the size is
capped before anything moves, the bytes land in a temporary file renamed into place only when
their count matches what the device announced. The transport's `_pull` hook moves the bytes.
"""

from __future__ import annotations

import os
import posixpath
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from device_agents.workdir import safe_destination
from orchestrator.base.errors import CommandFailed, DeviceError, DeviceRefused

if TYPE_CHECKING:
    from device_agents.base import DeviceAgent

Pull = Callable[[str, Path, int], None]  # (absolute device path, local file, byte cap)


def fetch(agent: DeviceAgent, rel: str, dest_dir: Path, pull: Pull, *, name: str | None, cap: int,
          size: int | None) -> Path:
    """Copy workdir/<rel> to dest_dir/<name>; `size`: as the device announced it (None: ask)."""
    device = agent.spec.name
    name = name or posixpath.basename(rel)
    dest = safe_destination(dest_dir, name, device)
    remote = agent.remote_path(rel)
    size = remote_size(agent, rel) if size is None else size
    if size is None:
        raise DeviceError(device, f"no such file on the device: {remote}")
    if size > cap:
        raise DeviceRefused(device, f"{remote} is {size} bytes, over the {cap}-byte cap")
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".partial", dir=dest.parent)
    os.close(fd)
    try:
        pull(remote, Path(tmp), cap)
        got = Path(tmp).stat().st_size
        if got != size:
            raise DeviceError(device, f"pulled {got} of {size} bytes of {remote}")
        os.replace(tmp, dest)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return dest


def remote_size(agent: DeviceAgent, rel: str) -> int | None:
    """Size of workdir/<rel>; None only when the device says there is no such file."""
    result = agent.run(["stat", "-c", "%s", "--", agent.remote_path(rel)])
    if result.ok:
        try:
            return int(result.stdout.strip())
        except ValueError:
            pass
    elif result.exit_code == 1:  # stat's answer for a missing file (GNU and toybox alike)
        return None
    # Anything else (a lost link, a deadline, garbage) must not pass for "missing".
    raise CommandFailed(agent.spec.name, result.command, result.exit_code, result.tail(), result.timed_out)
