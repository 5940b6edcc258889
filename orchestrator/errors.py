"""One error base per area. The CLI prints `error: <message>` and exits with `exit_code`.

Usage errors (bad input, config, model spec) exit 2; device failures are collected
per device and make the job exit 1 without losing the other devices' results.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_DEVICE_FAILED = 1
EXIT_USAGE = 2


class EtfarmError(Exception):
    """Base for errors etfarm reports to the user as one line, without a traceback."""

    exit_code = EXIT_USAGE


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


class BuildError(EtfarmError):
    """Building the runner for a target failed."""


class DeviceError(EtfarmError):
    """A device could not be reached or a command on it failed."""

    exit_code = EXIT_DEVICE_FAILED

    def __init__(self, device: str, message: str) -> None:
        self.device = device
        super().__init__(f"[{device}] {message}")


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


class AnalysisError(EtfarmError):
    """An ETDump or ETRecord cannot be read."""
