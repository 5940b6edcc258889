"""The device workflow, shared by every transport.

A `DeviceSpec` is data (what the inventory says, device_agents/spec.py); a `DeviceAgent` drives
one device. The base class owns the workflow — quoting, device-side deadlines, the workdir check
(workdir.py), hash-checked staging (staging.py), safe pulls (pulls.py), device facts (facts.py) —
and a transport fills four hooks: `_connect`, `_exec` (run a /bin/sh command string), `_push`,
`_pull` (docs/architecture.md, "Devices").
"""

from __future__ import annotations

import logging
import posixpath
import shlex
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from device_agents import facts, pulls, staging
from device_agents.facts import DeviceFacts
from device_agents.spec import DeviceSpec
from device_agents.staging import HASH_BYTES_PER_SEC, StageReport
from device_agents.workdir import check_relative, check_workdir, safe_destination
from orchestrator.base.cleanup import close_quietly
from orchestrator.base.errors import CommandFailed
from orchestrator.base.procs import CommandResult

# Grace between the device-side `timeout` and the host giving up on the transport (docs/how-to/boards.md: 15 s).
HOST_DEADLINE_GRACE_SEC = 15.0
# A transfer or command socket that makes no progress this long is a dead or frozen device, not a
# slow one (docs/how-to/boards.md: 30 s, as housekeeping commands). One value for every transport.
STALL_TIMEOUT_SEC = 30.0
# SIGTERM first; SIGKILL this long after, for a runner that ignores TERM.
KILL_AFTER_SEC = 5

# Device commands end the same way host commands do.
ExecResult = CommandResult

__all__ = ["HOST_DEADLINE_GRACE_SEC", "KILL_AFTER_SEC", "STALL_TIMEOUT_SEC", "DeviceAgent", "DeviceSpec", "ExecResult",
           "RawExecResult", "StageReport", "safe_destination"]


@dataclass(frozen=True)
class RawExecResult:
    """A device command's end with its output as bytes (for binary streams: run_step's frames)."""

    command: str
    exit_code: int | None
    stdout: bytes
    stderr: bytes
    duration_s: float
    timed_out: bool = False

    def decoded(self) -> ExecResult:
        return ExecResult(self.command, self.exit_code, self.stdout.decode(errors="replace"),
                          self.stderr.decode(errors="replace"), self.duration_s, self.timed_out)


class DeviceAgent(ABC):
    """Drives one device. Use as a context manager: connect on enter, close on exit."""

    CONNECT_TIMEOUT_SEC: ClassVar[float] = 15.0
    # Housekeeping (mkdir, stat, describe) takes well under a second; more means a stuck device.
    COMMAND_TIMEOUT_SEC: ClassVar[float] = 30.0
    PUSH_TIMEOUT_SEC: ClassVar[float] = 600.0
    MAX_PULL_BYTES: ClassVar[int] = 2 << 30
    # Output a housekeeping command may send; a device sending more is cut off (host memory).
    MAX_OUTPUT_BYTES: ClassVar[int] = 64 << 20

    def __init__(self, spec: DeviceSpec) -> None:
        self.spec = spec
        self.log = logging.getLogger(f"etfarm.device.{spec.name}")

    # ---- lifecycle -------------------------------------------------------------

    def connect(self) -> None:
        """Connect, then create and check the workdir (workdir.check_workdir) before anything is staged."""
        self._connect(self.CONNECT_TIMEOUT_SEC)
        check_workdir(self)

    def close(self) -> None:
        """Close the connection. Never raises: after a fault the link may be dead already, and the
        error the user must see is the fault, not a failed close (orchestrator/base/cleanup.py)."""
        close_quietly(f"the connection to {self.spec.name}", self._close, self.log)

    def reconnect(self) -> None:
        """Drop whatever is left of the connection and connect again (before retrying a step)."""
        self.close()
        self.connect()

    def __enter__(self) -> DeviceAgent:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- commands --------------------------------------------------------------

    def remote_path(self, rel: str) -> str:
        """Absolute device path of `rel` inside the workdir; `rel` must stay inside it."""
        check_relative(rel, self.spec.name)
        return posixpath.join(self.spec.workdir, rel)

    def command_words(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        use_exec_prefix: bool = False,
        prefix: Sequence[str] = (),
    ) -> list[str]:
        """argv behind `env`, the device-side deadline, `prefix` (e.g. taskset) and the exec_prefix."""
        words: list[str] = []
        if env:
            words += ["env"] + [f"{key}={value}" for key, value in env.items()]
        if timeout_s is not None:
            words += ["timeout", "-k", str(KILL_AFTER_SEC), str(max(1, int(round(timeout_s))))]
        words += list(prefix)
        if use_exec_prefix:
            words += list(self.spec.exec_prefix)
        return words + list(argv)

    def build_command(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        use_exec_prefix: bool = False,
    ) -> str:
        """The /bin/sh command line for argv: every word quoted, a device-side deadline."""
        command = shlex.join(self.command_words(argv, env=env, timeout_s=timeout_s, use_exec_prefix=use_exec_prefix))
        if cwd is not None:
            command = f"cd -- {shlex.quote(cwd)} && {command}"
        return command

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        use_exec_prefix: bool = False,
        persistent: bool = False,
    ) -> ExecResult:
        """Run argv on the device with a device-side deadline; returns the real exit code.

        `persistent`: through the job's long-lived device shell where the transport keeps one."""
        timeout_s = self.COMMAND_TIMEOUT_SEC if timeout_s is None else timeout_s
        command = self.build_command(argv, cwd=cwd, env=env, timeout_s=timeout_s, use_exec_prefix=use_exec_prefix)
        self.log.debug("exec: %s", command)
        if persistent:
            result = self._exec_persistent(command, timeout_s + HOST_DEADLINE_GRACE_SEC, self.MAX_OUTPUT_BYTES).decoded()
        else:
            result = self._exec(command, timeout_s + HOST_DEADLINE_GRACE_SEC)
        # coreutils/toybox `timeout` exits 124 when it had to stop the command.
        if result.exit_code == 124:
            result = ExecResult(command, None, result.stdout, result.stderr, result.duration_s, timed_out=True)
        return result

    def exec_raw(self, command: str, timeout_s: float, max_bytes: int | None = None,
                 persistent: bool = False) -> RawExecResult:
        """Run a prepared /bin/sh command string; output as bytes, at most max_bytes of stdout.

        `persistent`: through the job's long-lived device shell where the transport keeps one
        (ssh: one session per job instead of one per command); the command must not read stdin."""
        self.log.debug("exec: %s", command[:2000])
        cap = self.MAX_OUTPUT_BYTES if max_bytes is None else max_bytes
        if persistent:
            return self._exec_persistent(command, timeout_s, cap)
        return self._exec_raw(command, timeout_s, cap)

    def check(self, argv: Sequence[str], **kwargs: Any) -> ExecResult:
        """`run`, raising CommandFailed unless the command exits 0."""
        result = self.run(argv, **kwargs)
        if not result.ok:
            raise CommandFailed(self.spec.name, result.command, result.exit_code, result.tail(), result.timed_out)
        return result

    # ---- files -----------------------------------------------------------------

    def stage(self, files: Mapping[str, Path]) -> StageReport:
        """Make workdir/<rel> equal to each local file; unchanged files are not sent (staging.py)."""
        return staging.stage(self, files, self._push)

    def remote_sha256(self, rels: Sequence[str], nbytes: int = 0) -> dict[str, str]:
        """sha256 of each workdir-relative file that exists on the device (`nbytes`: about their size)."""
        return staging.run_then_hash(self, [], rels, nbytes)

    def hash_timeout_s(self, nbytes: int) -> float:
        """Deadline of a sha256 pass over nbytes on the device: scaled with the size, never unbounded."""
        return self.COMMAND_TIMEOUT_SEC + nbytes / HASH_BYTES_PER_SEC

    def fetch(self, rel: str, dest_dir: Path, name: str | None = None, max_bytes: int | None = None,
              size: int | None = None) -> Path:
        """Copy workdir/<rel> to dest_dir/<name> safely: plain name, size cap, temp file + rename (pulls.py).

        `size`: the size the device already announced (run_step's listing), saving a `stat` round trip."""
        cap = self.MAX_PULL_BYTES if max_bytes is None else max_bytes
        return pulls.fetch(self, rel, dest_dir, self._pull, name=name, cap=cap, size=size)

    def remote_size(self, rel: str) -> int | None:
        """Size of workdir/<rel>; None only when the device says there is no such file."""
        return pulls.remote_size(self, rel)

    def remove(self, rel: str) -> None:
        self.check(["rm", "-rf", "--", self.remote_path(rel)])

    # ---- facts -----------------------------------------------------------------

    def describe(self) -> DeviceFacts:
        """What the device is right now: abi, cores, cpufreq, governors, temperatures, load (facts.py)."""
        return facts.describe(self)

    # ---- transport hooks ---------------------------------------------------------

    @abstractmethod
    def _connect(self, timeout_s: float) -> None: ...

    def _exec(self, command: str, timeout_s: float) -> ExecResult:
        """Run a /bin/sh command string on the device; never trust a missing exit code.

        A transport implements this or `_exec_raw` (bytes, for binary streams); each defaults to the other."""
        return self._exec_raw(command, timeout_s, self.MAX_OUTPUT_BYTES).decoded()

    def _exec_raw(self, command: str, timeout_s: float, max_bytes: int) -> RawExecResult:
        if type(self)._exec is DeviceAgent._exec:
            raise NotImplementedError(f"{type(self).__name__} implements neither _exec nor _exec_raw")
        result = self._exec(command, timeout_s)  # text transports (test fakes): lossy for binary output
        return RawExecResult(command, result.exit_code, result.stdout.encode(), result.stderr.encode(),
                             result.duration_s, result.timed_out)

    def _exec_persistent(self, command: str, timeout_s: float, max_bytes: int) -> RawExecResult:
        """`_exec_raw` through a shell kept open for the job; transports without one run it alone."""
        return self._exec_raw(command, timeout_s, max_bytes)

    @abstractmethod
    def _push(self, local: Path, remote_path: str) -> None: ...

    @abstractmethod
    def _pull(self, remote_path: str, local: Path, max_bytes: int) -> None: ...

    def _close(self) -> None:  # noqa: B027 - an optional hook: most transports hold nothing to close
        pass
