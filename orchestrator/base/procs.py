"""The one place etfarm runs host subprocesses: argv lists, never a shell.

Every command runs in its own process group (a new session), so a deadline kills the command
and everything it started. The groups still running are registered: `kill_running()` ends them
all at once, which is what Ctrl-C and SIGTERM do to an `etfarm run` (local runners, builds).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

OUTPUT_TAIL_CHARS = 4000
# After SIGTERM to a process group, SIGKILL follows this long after if it is still there.
KILL_GRACE_SEC = 2.0

_running: set[int] = set()  # process group ids of the commands running now
_running_lock = threading.Lock()


@dataclass(frozen=True)
class CommandResult:
    """How a command ended, on the host or on a device."""

    command: str  # the command line as run, shell-quoted
    exit_code: int | None  # None when a deadline killed it or the transport lost it
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out

    def tail(self, chars: int = OUTPUT_TAIL_CHARS) -> str:
        return (self.stdout + self.stderr)[-chars:]


def run(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
    input_bytes: bytes | None = None,
) -> CommandResult:
    """Run argv to completion, capturing output; a deadline kills the process group."""
    result, _, _ = run_bytes(argv, cwd=cwd, env=env, timeout_s=timeout_s, input_bytes=input_bytes)
    return result


def run_bytes(
    argv: Sequence[str | os.PathLike[str]],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
    input_bytes: bytes | None = None,
) -> tuple[CommandResult, bytes, bytes]:
    """`run`, also returning stdout and stderr as the bytes the command wrote."""
    args = tuple(str(a) for a in argv)
    full_env = None if env is None else {**os.environ, **env}
    started = time.monotonic()
    proc = subprocess.Popen(
        args,
        cwd=cwd,
        env=full_env,
        stdin=subprocess.PIPE if input_bytes is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    with _running_lock:
        _running.add(proc.pid)
    try:
        out, err = proc.communicate(input=input_bytes, timeout=timeout_s)
        timed_out = False
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        out, err = proc.communicate()
        timed_out = True
    except BaseException:  # Ctrl-C while waiting: the command does not outlive its caller
        _kill_group(proc)
        proc.wait()
        raise
    finally:
        with _running_lock:
            _running.discard(proc.pid)
    result = CommandResult(
        command=shlex.join(args),
        exit_code=None if timed_out else proc.returncode,
        stdout=out.decode(errors="replace"),
        stderr=err.decode(errors="replace"),
        duration_s=time.monotonic() - started,
        timed_out=timed_out,
    )
    return result, out, err


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def running_groups() -> list[int]:
    """Process group ids of the host commands running now (one per `run`/`run_bytes` call)."""
    with _running_lock:
        return sorted(_running)


def kill_running(grace_s: float = KILL_GRACE_SEC) -> list[int]:
    """SIGTERM every running command's process group, SIGKILL what is left after `grace_s`.

    Returns the groups signalled. Their callers' `communicate()` then returns (killed commands
    end like failed ones), so the threads waiting on them finish on their own."""
    groups = running_groups()
    for pgid in groups:
        _signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_group_alive(g) for g in groups):
        time.sleep(0.05)
    for pgid in groups:
        _signal_group(pgid, signal.SIGKILL)
    return groups


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def which(name: str) -> Path | None:
    from shutil import which as _which

    found = _which(name)
    return Path(found) if found else None
