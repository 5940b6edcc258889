"""The workdir is the device-side trust boundary: whoever can write it could swap the runner.

- `check_workdir`: create the workdir (mode 700) before anything is staged, and refuse one that is
  a symbolic link, that the device user does not own, that others can write, or whose parent
  another user owns or anyone may write without the sticky bit (README, "Workdirs and the lock on
  the device").
- `check_relative`: every workdir-relative path stays inside the workdir.
- `safe_destination`: a pulled file lands under its plain name inside the host directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.errors import DeviceError, DeviceRefused

if TYPE_CHECKING:
    from device_agents.base import DeviceAgent

# Argument: the workdir. Prints "UID MODE PARENT_UID PARENT_MODE OUR_UID" (modes in octal).
WORKDIR_CHECK = ('w=$1; mkdir -p -m 700 -- "$w" || exit 3; '
                 'if [ -L "$w" ]; then echo "is a symbolic link" >&2; exit 4; fi; '
                 'printf "%s %s %s\\n" "$(stat -c "%u %a" -- "$w")" "$(stat -c "%u %a" -- "$(dirname -- "$w")")" "$(id -u)"')


def check_workdir(agent: DeviceAgent) -> None:
    """Create the workdir if needed; refuse it (DeviceRefused) when others could swap what is in it."""
    name, workdir = agent.spec.name, agent.spec.workdir
    result = agent.check(["sh", "-c", WORKDIR_CHECK, "etfarm-workdir", workdir], persistent=True)
    fields = result.stdout.split()
    if len(fields) != 5 or not all(f.isdigit() for f in fields):
        raise DeviceError(name, f"could not read the owner and mode of workdir {workdir}: {result.stdout.strip()[:200]!r}")
    owner, mode, parent_owner, parent_mode, uid = (int(f, 8) if i in (1, 3) else int(f) for i, f in enumerate(fields))
    if owner != uid:
        raise DeviceRefused(name, f"workdir {workdir} is owned by uid {owner}, not by the device user "
                                  f"(uid {uid}); refusing to use it: set another `workdir` in the inventory")
    if mode & 0o022:
        raise DeviceRefused(name, f"workdir {workdir} can be written by others (mode {mode:o}); refusing "
                                  f"to use it: `chmod go-w {workdir}` on the device or set another `workdir`")
    # Whoever may rename entries of the parent can swap the whole workdir: it must be ours or
    # root's, and not writable by everyone unless sticky (/tmp).
    if parent_owner not in (uid, 0) or (parent_mode & 0o002 and not parent_mode & 0o1000):
        raise DeviceRefused(name, f"the directory holding workdir {workdir} belongs to uid {parent_owner} "
                                  f"(mode {parent_mode:o}): others could replace the workdir; refusing "
                                  "to use it: set another `workdir` in the inventory")


def check_relative(rel: str, device: str) -> None:
    """Refuse a path that could leave the workdir: absolute, empty parts, `.` or `..`."""
    parts = rel.split("/")
    if rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise DeviceRefused(device, f"workdir-relative path expected, got {rel!r}")


def safe_destination(dest_dir: Path, name: str, device: str) -> Path:
    """dest_dir/name, refusing names that are not plain or that resolve outside dest_dir."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise DeviceRefused(device, f"refusing to write pulled file with unsafe name {name!r}")
    root = dest_dir.resolve()
    dest = (root / name).resolve()
    if dest.parent != root:
        raise DeviceRefused(device, f"refusing pulled file {name!r}: it resolves outside {root}")
    root.mkdir(parents=True, exist_ok=True)
    return dest
