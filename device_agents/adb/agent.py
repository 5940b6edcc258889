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
import time
import uuid
from pathlib import Path
from typing import ClassVar

from device_agents.adb.client import TRANSPORT_ERRORS, AdbServer, Device
from device_agents.adb.settings import adb_settings
from device_agents.base import STALL_TIMEOUT_SEC, DeviceAgent, DeviceSpec, RawExecResult
from orchestrator.base.cleanup import close_quietly
from orchestrator.base.errors import DeviceError, DeviceRefused

POLL_SEC = 0.2
RECV_BYTES = 1 << 16
# What each state of a device that is not ready asks of the user.
_STATE_HINTS = {
    "unauthorized": "accept the USB debugging prompt on the device",
    "offline": "reconnect the device or restart its adbd",
    "missing": "check the serial (`adb devices`) and the cable or network",
}


class AdbAgent(DeviceAgent):
    # A server connection that makes no progress this long is a dead or frozen device or server.
    STALL_TIMEOUT_SEC: ClassVar[float] = STALL_TIMEOUT_SEC

    def __init__(self, spec: DeviceSpec) -> None:
        super().__init__(spec)
        self.settings = adb_settings(spec)
        self.serial = self.settings.serial
        self.adb_host, self.adb_port = self.settings.adb_host, self.settings.adb_port
        self._device: Device | None = None

    # ---- hooks ------------------------------------------------------------------

    def _connect(self, timeout_s: float) -> None:
        client = AdbServer(self.adb_host, self.adb_port, self.STALL_TIMEOUT_SEC)
        try:
            client.server_version()
        except TRANSPORT_ERRORS as exc:
            raise DeviceError(
                self.spec.name,
                f"adb server not reachable at {self.adb_host}:{self.adb_port} ({exc}); "
                f"start it with `adb -P {self.adb_port} start-server`",
            ) from None
        device = Device(client, serial=self.serial)
        state = self._wait_state(client, device, timeout_s)
        if state != "device":
            hint = _STATE_HINTS.get(state.split()[0], "")
            kind = DeviceRefused if state.startswith("unauthorized") else DeviceError  # a person must act
            raise kind(self.spec.name, f"adb device {self.serial} is {state}" + (f": {hint}" if hint else ""))
        self._device = device
        self.log.debug("adb device %s via %s:%s", self.serial, self.adb_host, self.adb_port)

    def _wait_state(self, client: AdbServer, device: Device, timeout_s: float) -> str:
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

    def _dev(self) -> Device:
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
