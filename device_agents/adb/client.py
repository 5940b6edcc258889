"""adbutils, fixed where its behaviour would hurt a farm: the one home of the adbutils internals we touch.

- `ServerConnection` (adbutils' private `adbutils._adb.AdbConnection`, its `_safe_connect`
  overridden): adbutils runs `adb start-server` on the *default* port when a connection fails,
  whatever port was configured, and leaks the socket; we report the failure instead.
- `AdbServer.make_connection`: every server connection gets our stall timeout.
- `Device.open_transport`/`open_shell` (reading adbutils' `_client` and `_serial`): close the server
  connection when opening a service fails (adbutils leaks the socket when the device is gone:
  exactly our failure path).

tests/unit/device_agents/test_library_internals.py fails, naming the internal, when an adbutils
release moves any of this (docs/how-to/boards.md, "Upgrading paramiko and adbutils").
"""

from __future__ import annotations

import socket
import struct

import adbutils
from adbutils import AdbError
from adbutils._adb import AdbConnection
from adbutils.errors import AdbConnectionError, AdbTimeout

from orchestrator.base.cleanup import close_quietly

CONNECT_TIMEOUT_SEC = 3  # to the adb server, as adbutils does
# Errors adbutils lets through when the server or the device goes away.
TRANSPORT_ERRORS = (AdbError, OSError, EOFError, struct.error, ValueError)


class ServerConnection(AdbConnection):
    """An adb server connection that never starts a server behind our back."""

    def __init__(self, host: str, port: int) -> None:
        self._address = (host, port)
        super().__init__(host, port)

    def _safe_connect(self) -> socket.socket:
        # socket.create_connection closes the socket when connecting fails; adbutils does not.
        try:
            sock = socket.create_connection(self._address, timeout=CONNECT_TIMEOUT_SEC)
        except TimeoutError:
            raise AdbTimeout(f"connecting to the adb server at {self._address[0]}:{self._address[1]} timed out") from None
        except OSError as exc:
            raise AdbConnectionError(f"connecting to the adb server failed: {exc}") from None
        sock.settimeout(None)
        return sock


class AdbServer(adbutils.AdbClient):
    """The adb server at host:port; each connection's reads time out after `stall_timeout_s`."""

    def __init__(self, host: str, port: int, stall_timeout_s: float) -> None:
        super().__init__(host=host, port=port, socket_timeout=stall_timeout_s)
        self.stall_timeout_s = stall_timeout_s

    def make_connection(self, timeout: float | None = None) -> AdbConnection:
        conn = ServerConnection(self.host, self.port)
        conn.conn.settimeout(timeout or self.stall_timeout_s)
        return conn


class Device(adbutils.AdbDevice):
    """adbutils' device, closing the server connection when opening a service fails."""

    def open_transport(self, command: str | None = None, timeout: float | None = None) -> AdbConnection:
        conn = self._client.make_connection(timeout=timeout)
        try:
            if command:
                conn.send_command(f"host-serial:{self._serial}:{command}")
            else:
                conn.send_command(f"host:transport:{self._serial}")
            conn.check_okay()
        except BaseException:
            close_quietly("an adb server connection", conn.close)
            raise
        return conn

    def open_shell(self, cmdargs: str) -> AdbConnection:  # type: ignore[override]
        conn = self.open_transport()
        try:
            conn.send_command("shell:" + cmdargs)
            conn.check_okay()
        except BaseException:
            close_quietly("an adb server connection", conn.close)
            raise
        return conn
