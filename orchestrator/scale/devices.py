"""What a worker can offer: its inventory's devices, each probed, as `dev-<name>` resources.

A device is offered (resource 1) only while it answers a cheap probe, so the scheduler never
sends a task to an unplugged phone or a board that is down; 0 keeps the name known with nothing to
give. Probes, chosen to cost milliseconds and never start anything:
- local: always there;
- ssh: a TCP connection to host:port that answers with an `SSH-` banner within PROBE_TIMEOUT_SEC
  (a stopped sshd still accepts connections in the kernel's backlog but never speaks);
- adb: the adb server's own device list (`host:devices`, the call `adb devices` makes) names the
  serial in state `device`. The adb server stays on 127.0.0.1 of the worker's host.
The inventory file is re-read when its modification time changes, so a device added to it while
the worker runs is offered at the next probe round.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from device_agents import DeviceSpec
from orchestrator.errors import EtfarmError
from orchestrator.scale import resource_name

PROBE_TIMEOUT_SEC = 2.0
DEFAULT_ADB_PORT = 5037

log = logging.getLogger(__name__)


def probe(spec: DeviceSpec) -> bool:
    """True when the device answers now (see the module docstring); never raises."""
    try:
        if spec.transport == "ssh":
            return _ssh_banner(str(spec.settings["host"]), int(spec.settings.get("port") or 22))
        if spec.transport == "adb":
            port = int(spec.settings.get("adb_port") or DEFAULT_ADB_PORT)
            return spec.settings.get("serial") in adb_devices(port, str(spec.settings.get("adb_host") or "127.0.0.1"))
        return True
    except (OSError, ValueError, KeyError) as exc:
        log.debug("probe of %s failed: %s", spec.name, exc)
        return False


def _ssh_banner(host: str, port: int) -> bool:
    with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_SEC) as sock:
        sock.settimeout(PROBE_TIMEOUT_SEC)
        return sock.recv(4).startswith(b"SSH-")


def adb_devices(port: int, host: str = "127.0.0.1") -> set[str]:
    """Serials the adb server lists in state `device` (smart-socket `host:devices`)."""
    with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_SEC) as sock:
        sock.settimeout(PROBE_TIMEOUT_SEC)
        request = b"host:devices"
        sock.sendall(b"%04x" % len(request) + request)
        if _read(sock, 4) != b"OKAY":
            return set()
        body = _read(sock, int(_read(sock, 4), 16)).decode(errors="replace")
    return {line.split("\t")[0] for line in body.splitlines() if line.endswith("\tdevice")}


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise OSError("adb server closed the connection")
        data += chunk
    return data


@dataclass(frozen=True)
class Offer:
    """One probe round: every device the worker knows, with its resource value."""

    specs: dict[str, DeviceSpec]
    online: dict[str, bool]

    def resources(self) -> dict[str, float]:
        return {resource_name(name): 1.0 if up else 0.0 for name, up in self.online.items()}


class InventoryWatch:
    """The worker's inventory, re-read when the file changes; `round()` probes every device."""

    def __init__(self, path: Path | None, load: Callable[[Path | None], dict[str, DeviceSpec]],
                 probe_device: Callable[[DeviceSpec], bool] = probe) -> None:
        self.path = path
        self._load = load
        self._probe = probe_device
        self._mtime: float | None = None
        self.specs: dict[str, DeviceSpec] = {}
        self.retired: set[str] = set()  # names once offered and since removed from the file: kept at 0
        self.reload()

    def reload(self) -> bool:
        """Re-read the file if it changed; a broken file keeps the previous inventory (and says so)."""
        mtime = self.path.stat().st_mtime if self.path is not None and self.path.exists() else None
        if self.specs and mtime == self._mtime:
            return False
        try:
            specs = self._load(self.path)
        except EtfarmError as exc:
            if not self.specs:
                raise
            log.warning("inventory not reloaded, keeping the previous one: %s", exc)
            self._mtime = mtime
            return False
        self.retired |= set(self.specs) - set(specs)
        self.retired -= set(specs)
        self.specs, self._mtime = specs, mtime
        return True

    def spec(self, name: str) -> DeviceSpec | None:
        return self.specs.get(name)

    def round(self) -> Offer:
        self.reload()
        online = {name: self._probe(spec) for name, spec in self.specs.items()}
        online.update({name: False for name in self.retired})
        return Offer(dict(self.specs), online)
