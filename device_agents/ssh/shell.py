"""The job's long-lived device shell: one SSH session for every process run.

A session costs two round trips (channel open, exec request) plus sshd starting the login shell; a
line written to a shell that is already there costs none of that. Each command runs in a subshell
(an `exit` in it ends the subshell, not the job's shell) with stdin from /dev/null, and its end is
a line with a random marker and its exit status. A deadline, a cut stream or output over the cap
closes the shell (the next command opens a new one) and reports no exit status.
"""

from __future__ import annotations

import time
import uuid

import paramiko

from device_agents.base import RawExecResult
from device_agents.ssh.commands import RECV_BYTES, keep_stderr
from device_agents.ssh.link import SshLink
from orchestrator.base.cleanup import close_quietly
from orchestrator.base.errors import said


class PersistentShell:
    """`/bin/sh` in one session of `link`, opened on first use."""

    def __init__(self, link: SshLink) -> None:
        self.link = link
        self._channel: paramiko.Channel | None = None

    def run(self, command: str, timeout_s: float, max_bytes: int) -> RawExecResult:
        marker = f"@@ETFARM_DONE_{uuid.uuid4().hex}".encode()
        started = time.monotonic()
        deadline = started + timeout_s
        out, err = bytearray(), bytearray()
        failure = ""
        try:
            shell = self._open(timeout_s)
            # The marker ends both streams: sshd forwards the command's stdout and stderr from two pipes in no
            # set order, so the stdout marker alone can arrive before the command's last stderr lines.
            shell.sendall((f"( {command}\n) </dev/null; etfarm_status=$?; printf '\\n%s\\n' {marker.decode()} >&2; "
                           f"printf '\\n%s %s\\n' {marker.decode()} \"$etfarm_status\"\n").encode())
            while True:
                keep_stderr(shell, err)
                end = out.rfind(b"\n" + marker + b" ", max(0, len(out) - RECV_BYTES - len(marker) - 16))
                if end >= 0 and out.endswith(b"\n"):
                    code = int(out[end + len(marker) + 2:].strip() or b"-1")
                    err_end = _await_stderr_marker(shell, err, marker, deadline)
                    return RawExecResult(command, code, bytes(out[:end]), bytes(err[:err_end]), time.monotonic() - started)
                if time.monotonic() > deadline:
                    self.drop()
                    return RawExecResult(command, None, bytes(out), bytes(err), time.monotonic() - started, timed_out=True)
                if len(out) > max_bytes + len(marker) + 16:
                    failure = f"output over the {max_bytes}-byte cap; command cut off"
                    break
                try:
                    data = shell.recv(RECV_BYTES)
                except TimeoutError:
                    continue
                if not data:
                    failure = "the device shell ended without an exit status (connection lost?)"
                    break
                out += data
        except (OSError, EOFError, paramiko.SSHException, ValueError) as exc:
            failure = f"ssh shell failed: {said(exc)}"
        self.drop()
        err += f"\n[etfarm] {failure}".encode()
        return RawExecResult(command, None, bytes(out), bytes(err), time.monotonic() - started)

    def _open(self, timeout_s: float) -> paramiko.Channel:
        channel = self._channel
        if channel is None or channel.closed or channel.exit_status_ready() or self.link.closed:
            self.drop()
            channel = self._channel = self.link.start("starting the device shell", timeout_s, "/bin/sh")
        return channel

    def drop(self) -> None:
        """Close the shell (EOF on its stdin: it ends after what it is running)."""
        channel, self._channel = self._channel, None
        if channel is not None:
            close_quietly("the device shell", channel.close, self.link.log)


def _await_stderr_marker(shell: paramiko.Channel, err: bytearray, marker: bytes, deadline: float) -> int:
    """Read stderr up to the command's end marker (every line the command wrote is then in `err`); where the
    marker's line starts, or the end of what came when the deadline passed or the stream ended first."""
    line = b"\n" + marker + b"\n"
    while (found := err.rfind(line)) < 0:
        if time.monotonic() > deadline:
            return len(err)
        try:
            data = shell.recv_stderr(RECV_BYTES)
        except TimeoutError:
            continue
        if not data:
            return len(err)
        err += data
    return found
