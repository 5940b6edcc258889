"""Errors grouped by who is to blame (as LAVA does), each printed as one line by the CLI.

- usage: bad input, config or model spec; the user fixes it (exit 2, before anything runs).
- infrastructure: a device, transport or toolchain failed; retryable, never a regression.
- data: an artifact is corrupt or foreign (an ETDump, a manifest).
- bug: anything else; reported with its type so it can be filed.

Device failures are collected per device and make the job exit 1 without losing the other
devices' results.
"""

from __future__ import annotations

import errno
import os
from enum import StrEnum

EXIT_OK = 0
EXIT_DEVICE_FAILED = 1
EXIT_USAGE = 2
EXIT_INFRASTRUCTURE = 3  # the job could not be run at all for the infrastructure's fault (a farm's lost scheduler)
EXIT_INTERRUPTED = 130


class Blame(StrEnum):
    USAGE = "usage"
    INFRASTRUCTURE = "infrastructure"
    DATA = "data"
    BUG = "bug"


class EtfarmError(Exception):
    """Base for errors etfarm reports to the user as one line, without a traceback."""

    exit_code = EXIT_USAGE
    blame = Blame.USAGE


def one_line(message: str) -> str:
    """`message` folded to one line: its non-blank lines joined with " | " (the CLI prints errors this way)."""
    return " | ".join(line.strip() for line in message.splitlines() if line.strip())


def said(exc: BaseException) -> str:
    """What an exception says, never nothing: a timeout or an EOF often carries no message at all (and an
    exception object is always true, so `exc or name` would print an empty string)."""
    text = one_line(str(exc))
    if text:
        return text
    return "timed out" if isinstance(exc, TimeoutError) else type(exc).__name__


def blame_of(exc: BaseException) -> Blame:
    """Who is to blame for `exc`: its own class says so; anything unexpected is a bug."""
    return exc.blame if isinstance(exc, EtfarmError) else Blame.BUG


class UsageError(EtfarmError):
    """Bad command-line input: an unknown option value, a missing file."""


class ConfigError(EtfarmError):
    """A device inventory or plan file is malformed. Names the file and the key."""

    def __init__(self, path: object, key: str | None, problem: str) -> None:
        self.path = str(path)
        self.key = key
        self.problem = problem
        where = f"{self.path}: {key}" if key else self.path
        super().__init__(f"{where}: {problem}")


class ModelSpecError(EtfarmError):
    """A model spec that cannot be resolved or whose factory fails."""


class ExportError(EtfarmError):
    """Lowering a model to ExecuTorch failed."""


class ConfigurationFailed(ExportError):
    """A model under an export recipe failed in the exporter, the quantizer or the host's run of its program: the
    same sources, tool versions and recipe fail the same way, so the export cache remembers it (lowering.py)."""


class InfrastructureError(EtfarmError):
    """A device, transport or toolchain failed: retryable, never a regression."""

    exit_code = EXIT_DEVICE_FAILED
    blame = Blame.INFRASTRUCTURE


class BuildError(EtfarmError):
    """Building the runner for a target failed (a usage error when the target is unknown)."""

    blame = Blame.INFRASTRUCTURE


class DeviceError(InfrastructureError):
    """A device could not be reached or a command on it failed."""

    def __init__(self, device: str, message: str) -> None:
        self.device = device
        super().__init__(f"[{device}] {message}")


class DeviceRefused(DeviceError):
    """The device answered and the answer is no (a host key, a login, a workdir that is not
    ours, a device another host holds): retrying cannot help, so it is never retried."""


class CommandFailed(DeviceError):
    """A command on a device exited non-zero or timed out. Carries the command and output tail."""

    def __init__(self, device: str, command: str, exit_code: int | None, output_tail: str, timed_out: bool = False) -> None:
        self.command = command
        self.returncode = exit_code
        self.output_tail = output_tail
        self.timed_out = timed_out
        if timed_out:
            what = "timed out"
        elif exit_code is None:
            what = "lost the connection before the command reported an exit status"
        else:
            what = f"exited {exit_code}"
        tail = f"\n{output_tail.rstrip()}" if output_tail.strip() else ""
        super().__init__(device, f"command {what}: {command}{tail}")


class DataError(EtfarmError):
    """An artifact is corrupt, truncated or foreign. Exit 2 when the user named the file."""

    blame = Blame.DATA


class AnalysisError(DataError):
    """An ETDump or ETRecord cannot be read."""


def not_a_file(path: os.PathLike[str] | str) -> str:
    """Why `path` cannot be read as a file, in the words every such error uses: a directory or a pipe is named as
    what it is ('no such file' only when nothing is there)."""
    if os.path.isdir(path):
        return "is a directory, not a file"
    if os.path.lexists(path):
        return "not a regular file (a pipe or a device)" if os.path.exists(path) else "a broken symbolic link"
    return "no such file"


# "No space left on device" and "disk quota exceeded": the host disk is full, whoever is writing.
DISK_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)


def disk_full(exc: BaseException) -> str | None:
    """The path of a 'no space left' (or quota) error anywhere in exc's chain ('' when it names none), else None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in DISK_FULL_ERRNOS:
            return str(current.filename) if current.filename else ""
        current = current.__cause__ or current.__context__
    return None


# The host's own files or disk in the way: a read-only or full file system, a file where a directory
# should be, a directory where a file should be, no permission, a name too long. Not etfarm's bug.
ENVIRONMENT_ERRNOS = frozenset({errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOSPC, errno.EDQUOT, errno.ENOTDIR,
                                errno.EISDIR, errno.ENAMETOOLONG, errno.ELOOP, errno.EEXIST})


def environment_problem(exc: BaseException) -> str | None:
    """One line naming the path, when `exc` (or its cause) is the host's file system refusing a path
    (ENVIRONMENT_ERRNOS); else None. EEXIST counts only for a file in the way of a directory."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in ENVIRONMENT_ERRNOS and current.filename:
            path = os.fsdecode(current.filename)
            if current.errno == errno.EEXIST:
                if os.path.isdir(path):
                    return None  # an exclusive create that lost a race: not the environment
                return f"{path}: a file is in the way of a directory"
            other = f" -> {os.fsdecode(current.filename2)}" if current.filename2 else ""
            return f"{path}{other}: {current.strerror or errno.errorcode.get(current.errno, current.errno)} (on this host)"
        current = current.__cause__ or current.__context__
    return None
