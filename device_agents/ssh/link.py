"""One SSH connection, and every request to sshd on it bounded in time.

Opening a channel, starting a command in it and the SFTP version handshake each wait for one
reply from sshd, and paramiko waits for those forever (a frozen sshd, an sftp subsystem that never
answers). `bounded` gives such a request `request_timeout_s`: past it the connection is abandoned
(closed without waiting, which also ends the waiting thread) and a DeviceError says what did not
answer. The next operation on the link finds it closed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import paramiko

from orchestrator.base.cleanup import close_quietly
from orchestrator.base.errors import DeviceError

# Reads of a command's or the shell's channel wake this often to check their deadline.
POLL_SEC = 0.2
_T = TypeVar("_T")


class SshLink:
    """A logged-in paramiko client for one device, until `close` or `abandon`."""

    def __init__(self, client: paramiko.SSHClient, device: str, log: logging.Logger, *,
                 request_timeout_s: float, stall_timeout_s: float) -> None:
        self.client: paramiko.SSHClient | None = client
        self.device = device
        self.log = log
        self.request_timeout_s = request_timeout_s  # one reply from sshd
        self.stall_timeout_s = stall_timeout_s  # a transfer making no progress

    @property
    def closed(self) -> bool:
        return self.client is None

    def transport(self) -> paramiko.Transport:
        transport = self.client.get_transport() if self.client else None
        if transport is None or not transport.is_active():
            raise DeviceError(self.device, "not connected (ssh transport is closed)")
        return transport

    def start(self, what: str, timeout_s: float, command: str) -> paramiko.Channel:
        """A new session channel running `command`, with its open and start bounded by
        min(timeout_s, request_timeout_s); its reads time out every POLL_SEC."""
        bound = min(timeout_s, self.request_timeout_s)
        channel = self.transport().open_session(timeout=bound)
        channel.settimeout(POLL_SEC)
        self.bounded(what, bound, lambda: channel.exec_command(command))
        return channel

    def bounded(self, what: str, timeout_s: float, call: Callable[[], _T]) -> _T:
        """`call()` (one request to sshd that paramiko would wait for forever), given up after
        timeout_s: the connection is then abandoned and a DeviceError says what did not answer."""
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = call()
            except BaseException as exc:  # handed to the caller's thread
                box["error"] = exc

        thread = threading.Thread(target=target, name=f"ssh-{self.device}-{what}", daemon=True)
        thread.start()
        thread.join(timeout_s)
        if thread.is_alive():
            self.abandon()
            thread.join(5.0)
            raise self.no_answer(what, timeout_s)
        if "error" in box:
            raise box["error"]
        return box["value"]

    def no_answer(self, what: str, timeout_s: float) -> DeviceError:
        """The error of a request sshd never answered; the connection is given up."""
        return DeviceError(self.device, f"{what} got no answer from sshd within {timeout_s:g} s "
                                        "(device frozen, link down or a wedged ssh server); connection closed")

    def abandon(self) -> None:
        """Close the connection without waiting for a device that does not answer."""
        client, self.client = self.client, None
        if client is not None:
            transport = client.get_transport()
            if transport is not None:
                close_quietly("the ssh transport", transport.close, self.log)
            close_quietly("the ssh connection", client.close, self.log)

    def close(self) -> None:
        client, self.client = self.client, None
        if client is not None:
            close_quietly("the ssh connection", client.close, self.log)
