"""The workdir is the device-side trust boundary: whoever can write it could swap the runner.

- `check_workdir`: create the workdir (mode 700) before anything is staged, and refuse one that
  cannot be made or written (a read-only or full file system: the lock in it could never be taken),
  that is a symbolic link, that the device user does not own, that others can write, or whose parent
  another user owns or anyone may write without the sticky bit (docs/how-to/boards.md, "Workdirs and the lock on
  the device"). Each refusal is one line with the device's own reason.
- `check_relative`: every workdir-relative path stays inside the workdir.
- `safe_destination`: a pulled file lands under its plain name inside the host directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.base.errors import DeviceError, DeviceRefused, one_line

if TYPE_CHECKING:
    from device_agents.base import DeviceAgent

# Argument: the workdir. Answers one tagged line, never a non-zero exit for what it finds (so no error
# carries this script): `LINK`; `CANNOT-CREATE <mkdir's words>`; or `MODES UID MODE PARENT_UID PARENT_MODE
# OUR_UID` (modes in octal) and then `WRITABLE` or `UNWRITABLE <mkdir's words>`. The write probe is a
# `mkdir`, as the lock is, which never follows a link planted in a workdir that is not ours.
WORKDIR_CHECK = ('w=$1; if [ -L "$w" ]; then echo LINK; exit 0; fi; '
                 'if ! e=$(mkdir -p -m 700 -- "$w" 2>&1); then printf "CANNOT-CREATE %s\\n" "$e" | head -n 1; exit 0; fi; '
                 'printf "MODES %s %s %s\\n" "$(stat -c "%u %a" -- "$w")" "$(stat -c "%u %a" -- "$(dirname -- "$w")")" '
                 '"$(id -u)"; p="$w/.etfarm-probe-$$"; '
                 'if e=$(mkdir -- "$p" 2>&1); then rmdir -- "$p"; echo WRITABLE; '
                 'else printf "UNWRITABLE %s\\n" "$e" | head -n 1; fi')


def device_reason(words: str) -> str:
    """The device's own reason, in one line: what mkdir or the shell says after the path ("Read-only file
    system", "No space left on device", "Permission denied"), else its whole first line."""
    line = next((part.strip() for part in words.splitlines() if part.strip()), "")
    return line.rsplit(": ", 1)[-1].strip() or "no reason given"


def check_workdir(agent: DeviceAgent) -> None:
    """Create the workdir if needed; refuse it (DeviceRefused) when it cannot be made or written, or when
    others could swap what is in it."""
    name, workdir = agent.spec.name, agent.spec.workdir
    answer = agent.check(["sh", "-c", WORKDIR_CHECK, "etfarm-workdir", workdir], persistent=True).stdout
    lines = [line.strip() for line in answer.splitlines() if line.strip()]
    tag, _, rest = (lines[0] if lines else "").partition(" ")
    if tag == "LINK":
        raise DeviceRefused(name, f"workdir {workdir} is a symbolic link; refusing to use it: set another `workdir` "
                                  "in the inventory")
    if tag == "CANNOT-CREATE":
        raise DeviceRefused(name, f"cannot create workdir {workdir}: {device_reason(rest)}")
    fields = rest.split()
    if tag != "MODES" or len(fields) != 5 or not all(f.isdigit() for f in fields) or len(lines) != 2:
        raise DeviceError(name, f"could not read the owner and mode of workdir {workdir}: {one_line(answer)[:200]!r}")
    _refuse_if_others_could_swap(name, workdir, *(int(f, 8) if i in (1, 3) else int(f) for i, f in enumerate(fields)))
    probe, _, words = lines[1].partition(" ")
    if probe != "WRITABLE":
        raise DeviceRefused(name, f"workdir {workdir} cannot be written ({device_reason(words)}): etfarm keeps its "
                                  "lock, the runner and its outputs there; make it writable or set another `workdir`")


def _refuse_if_others_could_swap(name: str, workdir: str, owner: int, mode: int, parent_owner: int, parent_mode: int,
                                 uid: int) -> None:
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
