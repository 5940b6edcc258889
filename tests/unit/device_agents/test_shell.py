"""The persistent device shell's framing, against a channel that delivers the two streams in the worst order.

sshd reads a command's stdout and stderr from two pipes and forwards them in no set order, so the
stdout end marker can reach the host before the command's last stderr lines (seen once in a loaded
test round: a step's exit-125 reason came back empty). The fake channel here sends all of stdout,
marker included, before any of stderr: the result must still hold the command's whole stderr, and
nothing of it may spill into the next command's result. (A fake is fine here: what is under test is
the host's reading order; tests/integration/test_runloop.py runs the real shell.)
"""

from __future__ import annotations

import logging
import re
from collections import deque

from device_agents.ssh.shell import PersistentShell


class StdoutFirstChannel:
    """Answers each command line with its stdout (and the stdout marker) at once; its stderr (and the stderr
    marker, when the line asks for one) is still in flight: never ready when polled, there for a blocking read
    once stdout has been read to the end."""

    closed = False

    def __init__(self) -> None:
        self.out: deque[bytes] = deque()
        self.err: deque[bytes] = deque()
        self.count = 0

    def sendall(self, data: bytes) -> None:
        marker = re.search(rb"@@ETFARM_DONE_[0-9a-f]+", data)
        assert marker is not None
        self.count += 1
        self.out.append(f"out{self.count}\n".encode() + b"\n" + marker.group() + b" 125\n")
        self.err.append(f"err{self.count}\n".encode() + (b"\n" + marker.group() + b"\n" if marker.group() + b" >&2" in data else b""))

    def recv(self, size: int) -> bytes:
        return self.out.popleft()

    def recv_stderr_ready(self) -> bool:
        return False

    def recv_stderr(self, size: int) -> bytes:
        if self.out or not self.err:
            raise TimeoutError
        return self.err.popleft()

    def exit_status_ready(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True


class OneChannelLink:
    closed = False
    log = logging.getLogger("test")

    def __init__(self, channel: StdoutFirstChannel) -> None:
        self.channel = channel

    def start(self, what: str, timeout_s: float, command: str) -> StdoutFirstChannel:
        return self.channel


def test_the_last_stderr_line_arriving_after_stdout_s_marker_is_kept() -> None:
    shell = PersistentShell(OneChannelLink(StdoutFirstChannel()))  # type: ignore[arg-type]
    for i in (1, 2, 3):
        result = shell.run("echo out; echo err >&2; exit 125", 5, 1 << 20)
        assert (result.exit_code, result.stdout, result.stderr) == (125, f"out{i}\n".encode(), f"err{i}\n".encode())
