"""One device command in its own SSH session, with a host-side deadline and an output cap.

The command runs through /bin/sh whatever the login shell is; the trailing `exit $?` keeps sh from
exec'ing the last command, so a signal death still arrives as an exit-status (paramiko ignores
exit-signal). A channel that closes without an exit status (link or sshd died) reports none:
never a success.
"""

from __future__ import annotations

import shlex
import time

import paramiko

from device_agents.base import RawExecResult
from device_agents.ssh.link import SshLink
from orchestrator.base.errors import said

# Stderr is kept to its last bytes: that is where errors are.
STDERR_KEEP_BYTES = 1 << 20
RECV_BYTES = 1 << 16


def exec_command(link: SshLink, command: str, timeout_s: float, max_bytes: int) -> RawExecResult:
    """Run `command`; exit_code None when the deadline, the cap or the link ended it first."""
    remote = "/bin/sh -c " + shlex.quote(f"{command}\nexit $?")
    started = time.monotonic()
    deadline = started + timeout_s
    out, err = bytearray(), bytearray()
    try:
        channel = link.start("starting a command", timeout_s, remote)
        channel.shutdown_write()  # no stdin: a command that reads it sees EOF, not a hang
        ended = _drain(channel, out, err, deadline, max_bytes)
        timed_out = ended is False
        if ended is not True:
            channel.close()
            exit_code = None
            if ended is None:
                err += f"\n[etfarm] output over the {max_bytes}-byte cap; command cut off".encode()
        else:
            channel.status_event.wait(max(0.0, deadline - time.monotonic()))
            status = channel.exit_status if channel.status_event.is_set() else -1
            channel.close()
            # -1: the channel closed without an exit status (link or sshd died).
            exit_code = None if status == -1 else status
            if exit_code is None:
                err += b"\n[etfarm] ssh channel closed without an exit status (connection lost?)"
    except (OSError, EOFError, paramiko.SSHException) as exc:
        exit_code, timed_out = None, False
        err += f"\n[etfarm] ssh transport failed: {said(exc)}".encode()
    return RawExecResult(command, exit_code, bytes(out), bytes(err), time.monotonic() - started, timed_out=timed_out)


def keep_stderr(channel: paramiko.Channel, err: bytearray) -> None:
    """Append what stderr has now, keeping its last STDERR_KEEP_BYTES."""
    while channel.recv_stderr_ready():
        err += channel.recv_stderr(RECV_BYTES)
        if len(err) > STDERR_KEEP_BYTES:
            del err[: len(err) - STDERR_KEEP_BYTES]


def _drain(channel: paramiko.Channel, out: bytearray, err: bytearray, deadline: float, max_bytes: int) -> bool | None:
    """Read stdout and stderr until EOF: True; False when the host-side deadline passed
    first; None when stdout went over max_bytes."""
    while True:
        keep_stderr(channel, err)
        if time.monotonic() > deadline:
            return False
        try:
            data = channel.recv(RECV_BYTES)
        except TimeoutError:
            continue
        if not data:  # EOF covers both streams; collect what stderr has left
            while channel.recv_stderr_ready():
                err += channel.recv_stderr(RECV_BYTES)
            return True
        out += data
        if len(out) > max_bytes:
            return None
