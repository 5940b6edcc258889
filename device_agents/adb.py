"""Android devices through the adb server, with adbutils.

adbutils' `shell()` returns whatever arrived before the stream closed — `''` when
the device died mid-command — and shell v1 carries no exit status. So every
command ends by printing a random per-call marker with `$?`; no marker means the
transport failed, never success. Transfers go through the sync service and are
checked by size here and by sha256 in the base class.
"""

from __future__ import annotations

import re
import shlex
import socket
import struct
import time
import uuid
from pathlib import Path

import adbutils
from adbutils import AdbError
from adbutils._adb import AdbConnection
from adbutils.errors import AdbConnectionError, AdbTimeout

from device_agents.base import STALL_TIMEOUT_SEC, DeviceAgent, DeviceSpec, RawExecResult
from orchestrator.cleanup import close_quietly
from orchestrator.errors import DeviceError, DeviceRefused

DEFAULT_ADB_HOST = "127.0.0.1"
DEFAULT_ADB_PORT = 5037
POLL_SEC = 0.2
RECV_BYTES = 1 << 16
# Errors adbutils lets through when the server or the device goes away.
TRANSPORT_ERRORS = (AdbError, OSError, EOFError, struct.error, ValueError)


class _Connection(AdbConnection):
    """An adb server connection that never starts a server behind our back.

    adbutils runs `adb start-server` on the *default* port when a connection
    fails, whatever port was configured; we report the failure instead.
    """

    def __init__(self, host: str, port: int) -> None:
        self._address = (host, port)
        super().__init__(host, port)

    def _safe_connect(self) -> socket.socket:
        # socket.create_connection closes the socket when connecting fails; adbutils does not.
        try:
            sock = socket.create_connection(self._address, timeout=3)
        except TimeoutError:
            raise AdbTimeout(f"connecting to the adb server at {self._address[0]}:{self._address[1]} timed out") from None
        except OSError as exc:
            raise AdbConnectionError(f"connecting to the adb server failed: {exc}") from None
        sock.settimeout(None)
        return sock


class _Client(adbutils.AdbClient):
    def make_connection(self, timeout: float | None = None) -> AdbConnection:
        conn = _Connection(self.host, self.port)
        conn.conn.settimeout(timeout or STALL_TIMEOUT_SEC)
        return conn


class _Device(adbutils.AdbDevice):
    """adbutils' device, closing the server connection when opening a service fails
    (adbutils leaks the socket when the device is gone: exactly our failure path)."""

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


class AdbAgent(DeviceAgent):
    transport = "adb"

    def __init__(self, spec: DeviceSpec) -> None:
        super().__init__(spec)
        s = spec.settings
        where = f"device {spec.name!r} in {spec.source}"
        if not s.get("serial"):
            raise DeviceRefused(spec.name, f"adb setting 'serial' is missing ({where})")
        self.serial = str(s["serial"])
        self.adb_host = str(s.get("adb_host") or DEFAULT_ADB_HOST)
        try:
            self.adb_port = int(s.get("adb_port") or DEFAULT_ADB_PORT)
        except (TypeError, ValueError):
            raise DeviceRefused(spec.name, f"adb setting 'adb_port' is not a number ({where})") from None
        self._device: adbutils.AdbDevice | None = None

    # ---- hooks ------------------------------------------------------------------

    def _connect(self, timeout_s: float) -> None:
        client = _Client(host=self.adb_host, port=self.adb_port, socket_timeout=STALL_TIMEOUT_SEC)
        try:
            client.server_version()
        except TRANSPORT_ERRORS as exc:
            raise DeviceError(
                self.spec.name,
                f"adb server not reachable at {self.adb_host}:{self.adb_port} ({exc}); "
                f"start it with `adb -P {self.adb_port} start-server`",
            ) from None
        device = _Device(client, serial=self.serial)
        state = self._wait_state(client, device, timeout_s)
        if state != "device":
            hint = {
                "unauthorized": "accept the USB debugging prompt on the device",
                "offline": "reconnect the device or restart its adbd",
                "missing": "check the serial (`adb devices`) and the cable or network",
            }.get(state.split()[0], "")
            kind = DeviceRefused if state.startswith("unauthorized") else DeviceError  # a person must act
            raise kind(self.spec.name, f"adb device {self.serial} is {state}" + (f": {hint}" if hint else ""))
        self._device = device
        self.log.debug("adb device %s via %s:%s", self.serial, self.adb_host, self.adb_port)

    def _wait_state(self, client: _Client, device: adbutils.AdbDevice, timeout_s: float) -> str:
        """The device's state, waiting while it is offline or connecting (booting, re-plugged).

        A network serial (host:port) that the server does not know is `adb connect`ed first;
        a missing USB serial or an unauthorized device is reported at once.
        """
        deadline = time.monotonic() + timeout_s
        network = re.fullmatch(r"[^\s:]+:\d+", self.serial) is not None
        connected = False
        while True:
            try:
                state = device.get_state().strip() or "missing"
            except TRANSPORT_ERRORS:
                state = "missing"
            if state in ("device", "unauthorized") or time.monotonic() > deadline:
                return state
            if state == "missing" and not network:
                return state
            if state == "missing" and not connected:
                connected = True
                try:
                    answer = client.connect(self.serial, timeout=max(1.0, deadline - time.monotonic()))
                except TRANSPORT_ERRORS as exc:
                    answer = str(exc)
                self.log.debug("adb connect %s: %s", self.serial, answer)
                if "connected to" not in answer:
                    return f"missing (adb connect: {answer.strip()})"
                continue
            time.sleep(0.1)

    def _exec_raw(self, command: str, timeout_s: float, max_bytes: int) -> RawExecResult:
        marker = f"ETFARM_EXIT_{uuid.uuid4().hex}"
        # The command runs in its own sh, so even an `exit` inside it cannot skip the marker.
        remote = f"sh -c {shlex.quote(command)}; printf '\\n%s %s\\n' {marker} \"$?\""
        started = time.monotonic()
        raw = bytearray()
        timed_out = False
        failure = ""
        try:
            conn = self._dev().open_shell(remote)
        except TRANSPORT_ERRORS as exc:
            return RawExecResult(command, None, b"", f"[etfarm] adb shell failed to start: {exc}".encode(),
                                 time.monotonic() - started)
        try:
            conn.conn.settimeout(POLL_SEC)
            deadline = started + timeout_s
            while True:
                if time.monotonic() > deadline:
                    timed_out = True  # closing the stream makes adbd end the command
                    break
                try:
                    data = conn.conn.recv(RECV_BYTES)
                except TimeoutError:
                    continue
                if not data:
                    break
                raw += data
                if len(raw) > max_bytes + 256:  # the exit marker rides on the same stream
                    failure = f"output over the {max_bytes}-byte cap; command cut off"
                    break
        except OSError as exc:
            failure = f"adb shell stream failed: {exc}"
        finally:
            close_quietly("the adb shell stream", conn.close, self.log)
        stdout, exit_code = _split_marker(bytes(raw), marker)
        stderr = ""
        if timed_out:
            exit_code = None
        elif exit_code is None or failure:
            exit_code = None
            # What adbutils would have returned as a silent success.
            stderr = (f"[etfarm] {failure or 'adb shell ended without an exit status'}: "
                      "the device disconnected or adbd killed the command")
            self.log.warning("no exit status from %s for: %s", self.serial, command[:500])
        return RawExecResult(command, exit_code, stdout, stderr.encode(), time.monotonic() - started, timed_out=timed_out)

    def _push(self, local: Path, remote_path: str) -> None:
        size = local.stat().st_size
        try:
            sent = self._dev().sync.push(local, remote_path, mode=0o644, check=True)
        except TRANSPORT_ERRORS as exc:
            raise DeviceError(self.spec.name, f"adb push of {local} to {remote_path} failed: {exc}") from None
        if sent != size:
            raise DeviceError(self.spec.name, f"adb push of {local}: sent {sent} of {size} bytes")

    def _pull(self, remote_path: str, local: Path, max_bytes: int) -> None:
        written = 0
        try:
            with open(local, "wb") as fh:
                for chunk in self._dev().sync.iter_content(remote_path):
                    written += len(chunk)
                    if written > max_bytes:
                        raise DeviceRefused(self.spec.name, f"{remote_path} is over the {max_bytes}-byte cap")
                    fh.write(chunk)
        except TRANSPORT_ERRORS as exc:
            raise DeviceError(self.spec.name, f"adb pull of {remote_path} failed: {exc}") from None

    def _close(self) -> None:
        self._device = None  # adbutils opens a server connection per call; nothing to hold

    def _dev(self) -> adbutils.AdbDevice:
        if self._device is None:
            raise DeviceError(self.spec.name, "not connected")
        return self._device


def _split_marker(raw: bytes, marker: str) -> tuple[bytes, int | None]:
    """(output without the marker line, exit code or None when the marker never came)."""
    # Old adbd gives the shell a pty: accept \r\n as well as \n around the marker.
    matches = list(re.finditer(rb"\r?\n" + re.escape(marker.encode()) + rb" (\d+)\r?\n", raw))
    if not matches:
        return raw, None
    last = matches[-1]
    output = raw[: last.start()] + raw[last.end() :]
    return output, int(last.group(1))
