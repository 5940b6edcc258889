"""Android devices the adb server sees, without an inventory entry: a phone without writing YAML.

- `--devices adb:SERIAL` names a device directly (orchestrator/config.py builds its spec: its target
  comes from its ABI, `ro.product.cpu.abi`, read here);
- `etfarm devices` lists the devices an adb server sees that the inventory does not name (`unnamed_devices`).

Which server: the one adb's own client would ask, `$ADB_SERVER_SOCKET` (`tcp:HOST:PORT`), else
127.0.0.1 on `$ANDROID_ADB_SERVER_PORT` (5037 by default), as `adb devices` does; etfarm never
starts a server.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from device_agents.adb import wire
from device_agents.adb.settings import DEFAULT_ADB_HOST, DEFAULT_ADB_PORT, DEFAULT_WORKDIR, AdbSettings
from device_agents.adb.wire import Server
from device_agents.spec import DeviceSpec
from orchestrator.base.errors import UsageError
from orchestrator.base.names import ADB_NAME_PREFIX

QUERY_TIMEOUT_SEC = 15.0
CONNECT_TIMEOUT_SEC = 3.0  # to the adb server, as adbutils does
ABI_PROPERTY = "ro.product.cpu.abi"



@dataclass(frozen=True)
class SeenDevice:
    """One line of the server's `adb devices -l`."""

    serial: str
    state: str  # device | unauthorized | offline | ...
    server: Server
    model: str = ""  # the server's `model:` tag (underscores for spaces, as adb prints it)

    @property
    def name(self) -> str:
        """How `--devices` names it."""
        return ADB_NAME_PREFIX + self.serial


def default_server() -> Server:
    """The adb server adb's own client would ask (see the module docstring)."""
    socket_spec = os.environ.get("ADB_SERVER_SOCKET", "")
    if socket_spec.startswith("tcp:"):
        host, _, port = socket_spec[len("tcp:"):].rpartition(":")
        if port.isdigit():
            return host or DEFAULT_ADB_HOST, int(port)
    port_text = os.environ.get("ANDROID_ADB_SERVER_PORT", "")
    return DEFAULT_ADB_HOST, int(port_text) if port_text.isdigit() else DEFAULT_ADB_PORT


def seen_devices(server: Server) -> list[SeenDevice]:
    """Every device the server lists (`host:devices-l`), in its order; [] when no server answers there.
    Spoken directly (wire.py), so `etfarm devices` on an inventory without adb devices never imports adbutils."""
    try:
        body = wire.ask(server, "host:devices-l", QUERY_TIMEOUT_SEC, connect_timeout_s=CONNECT_TIMEOUT_SEC)
    except OSError:
        return []
    return [SeenDevice(d.serial, d.state, server, d.model) for d in wire.listed(body)]


def unnamed_devices(specs: Iterable[DeviceSpec]) -> list[SeenDevice]:
    """The devices that adb's default server and every server these specs name see, and that no spec names
    (by server and serial), in the servers' order (`etfarm devices` lists them as `adb:SERIAL`)."""
    named = {((s.adb_host, s.adb_port), s.serial) for spec in specs if isinstance(s := spec.settings, AdbSettings)}
    servers = dict.fromkeys([default_server(), *(server for server, _ in sorted(named))])
    return [seen for server in servers for seen in seen_devices(server) if (server, seen.serial) not in named]


def device_abi(server: Server, serial: str) -> str:
    """The device's `ro.product.cpu.abi`; UsageError (one line) when the server does not have it ready."""
    where = f"the adb server at {server[0]}:{server[1]}"
    seen = {d.serial: d for d in seen_devices(server)}
    if serial not in seen:
        known = ", ".join(f"{s} ({d.state})" for s, d in seen.items()) or "none"
        raise UsageError(f"{ADB_NAME_PREFIX}{serial}: {where} does not see this device (it sees: {known}; "
                         "set ANDROID_ADB_SERVER_PORT or ADB_SERVER_SOCKET for another server)")
    if seen[serial].state != wire.READY:
        raise UsageError(f"{ADB_NAME_PREFIX}{serial}: the device is {seen[serial].state} on {where}")
    from device_agents.adb.client import TRANSPORT_ERRORS, AdbServer, Device

    try:
        abi = Device(AdbServer(*server, QUERY_TIMEOUT_SEC), serial=serial).shell(["getprop", ABI_PROPERTY],
                                                                                 timeout=QUERY_TIMEOUT_SEC)
    except TRANSPORT_ERRORS as exc:
        raise UsageError(f"{ADB_NAME_PREFIX}{serial}: reading {ABI_PROPERTY} failed: {exc}") from None
    return str(abi).strip()


def adb_device_spec(serial: str, target: str, server: Server) -> DeviceSpec:
    """The spec of `adb:SERIAL`: the inventory's defaults for an adb device (workdir /data/local/tmp/etfarm)."""
    settings = AdbSettings(serial=serial, adb_host=server[0], adb_port=server[1])
    return DeviceSpec(name=ADB_NAME_PREFIX + serial, target=target, workdir=DEFAULT_WORKDIR,
                      settings=settings, source=f"--devices {ADB_NAME_PREFIX}{serial} (adb server {server[0]}:{server[1]})")
