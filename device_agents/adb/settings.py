"""The keys of an adb device (`transport: adb`), typed; no adbutils here (the inventory parser loads it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, cast

from device_agents.adb.track import AdbListing
from device_agents.keys import InventoryEntry
from device_agents.presence import Presence
from device_agents.spec import DeviceSpec, TransportSettings
from orchestrator.base.errors import DeviceRefused

DEFAULT_ADB_HOST = "127.0.0.1"  # etfarm never starts a server: it asks the one the inventory names
DEFAULT_ADB_PORT = 5037
DEFAULT_WORKDIR = "/data/local/tmp/etfarm"


@dataclass(frozen=True)
class AdbSettings(TransportSettings):
    """serial (`host:port` for a network device, `adb connect`ed on demand), and the adb server to ask."""

    serial: str
    adb_host: str = DEFAULT_ADB_HOST
    adb_port: int = DEFAULT_ADB_PORT

    TRANSPORT: ClassVar[str] = "adb"
    KEYS: ClassVar[tuple[str, ...]] = ("serial", "adb_host", "adb_port")
    ANDROID: ClassVar[bool] = True

    @classmethod
    def parse(cls, entry: InventoryEntry) -> AdbSettings:
        serial = entry.required_text("serial")
        adb_host = entry.text("adb_host", DEFAULT_ADB_HOST)
        adb_port = entry.port("adb_port", DEFAULT_ADB_PORT)
        return cls(serial=serial, adb_host=adb_host or DEFAULT_ADB_HOST, adb_port=adb_port)

    @property
    def address(self) -> str:
        return f"{self.serial} via adb {self.adb_host}:{self.adb_port}"

    @property
    def presence(self) -> Presence:
        return AdbListing((self.adb_host, self.adb_port), self.serial)

    def default_workdir(self, device: str) -> str:
        return DEFAULT_WORKDIR


def adb_settings(spec: DeviceSpec) -> AdbSettings:
    """The spec's adb settings (an adb device's: its transport follows from them), refusing a spec without a serial."""
    cfg = cast(AdbSettings, spec.settings)
    if not cfg.serial:
        raise DeviceRefused(spec.name, f"adb setting 'serial' is missing (device {spec.name!r} in {spec.source})")
    return cfg
