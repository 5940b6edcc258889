"""What the inventory says about a device: data, kept apart from the agent that drives it.

A `DeviceSpec` holds the keys every device has (target, workdir, exec_prefix, threads, cpus, runtime),
typed, and its transport's own keys as that transport's `TransportSettings`: a frozen dataclass
defined next to the transport's agent (`SshSettings`, `AdbSettings`; `LocalSettings`, the default, here), parsed once
from the YAML mapping, and the one place that knows the transport's defaults, how its address
reads, and how a worker can tell that such a device is there. Code outside device_agents/ asks
the settings, never the transport's name (docs/architecture.md, "Device inventory").

Settings modules import no transport library: the inventory parser loads them, and `etfarm
devices` on a local-only inventory must not pay for paramiko or adbutils.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from device_agents.presence import AlwaysPresent, Presence
from orchestrator.base.cache import cache_dir

if TYPE_CHECKING:
    from typing import Self

    from device_agents.keys import InventoryEntry


class TransportSettings(ABC):
    """A transport's own inventory keys, typed and frozen (subclasses are frozen dataclasses)."""

    TRANSPORT: ClassVar[str]  # its name in device_agents.TRANSPORTS (`transport:` in the inventory)
    KEYS: ClassVar[tuple[str, ...]] = ()  # the inventory keys it reads, beside the common ones
    DEFAULT_TARGET: ClassVar[str | None] = None  # the target a device gets when the file names none
    ANDROID: ClassVar[bool] = False  # every device of this transport runs Android (run/device/controls.py)

    @classmethod
    @abstractmethod
    def parse(cls, entry: InventoryEntry) -> Self:
        """Read the transport's keys of one inventory entry; ConfigError names the file and key."""

    @property
    @abstractmethod
    def address(self) -> str:
        """How `etfarm devices` shows where the device is."""

    @property
    @abstractmethod
    def presence(self) -> Presence:
        """How to tell that the device is there (device_agents/presence.py; a farm worker asks every round)."""

    @abstractmethod
    def default_workdir(self, device: str) -> str:
        """The workdir of a device whose entry names none."""

    def workdir(self, given: str) -> str:
        """The workdir as the device will use it (the host's own devices expand `~`)."""
        return given

    def check_host_files(self, device: str, source: str) -> None:
        """Refuse, before a job runs, what this host must hold for the device and does not (an ssh key file
        that is missing or unreadable): a ConfigError naming the inventory and the key. Nothing by default."""
        return None

    def keys(self) -> dict[str, Any]:
        """The inventory keys that parse back to these settings (absent values left out)."""
        return {f.name: getattr(self, f.name) for f in fields(self)  # type: ignore[arg-type]
                if getattr(self, f.name) is not None}


@dataclass(frozen=True)
class LocalSettings(TransportSettings):
    """`transport: local` has no keys of its own; its workdir defaults to the cache. Defined here, not beside
    the local agent, because it is also what a spec has when nothing names a transport (DeviceSpec's default)."""

    TRANSPORT: ClassVar[str] = "local"
    DEFAULT_TARGET: ClassVar[str | None] = "host"

    @classmethod
    def parse(cls, entry: InventoryEntry) -> LocalSettings:
        return cls()

    @property
    def address(self) -> str:
        return "this host"

    @property
    def presence(self) -> Presence:
        return AlwaysPresent()

    def default_workdir(self, device: str) -> str:
        return str(cache_dir("devices") / device)

    def workdir(self, given: str) -> str:
        return str(Path(given).expanduser())


@dataclass(frozen=True)
class DeviceSpec:
    """One device as the inventory describes it."""

    name: str
    target: str
    workdir: str
    exec_prefix: tuple[str, ...] = ()
    settings: TransportSettings = field(default_factory=lambda: LocalSettings())
    source: str = "<built-in>"  # the inventory file, or where a built-in spec came from
    threads: int = 0  # runner CPU threads; 0: the runner's default
    # The runner's CPU affinity: taskset's list syntax ("4-7", "0,2"), or `big` / `prime` (the fastest
    # clusters, from the device's own facts: orchestrator/run/device/affinity.py).
    cpus: str | None = None
    runtime: str | None = None  # the user's ExecuTorch install prefix (`runtime: PATH`), None: etfarm's own runtime
    description: str = ""  # free text for people (`etfarm devices` shows it)
    emulated: bool = False  # qemu on a host, not the hardware (`etfarm devices emulate`): its timings say so

    def __post_init__(self) -> None:
        if isinstance(self.exec_prefix, str):  # `DeviceSpec(name, "local", "host", workdir)`: a transport given as a word
            raise TypeError(f"DeviceSpec {self.name!r}: exec_prefix must be a tuple of words, got {self.exec_prefix!r} "
                            "(the transport is not an argument: it follows from the settings)")

    @property
    def transport(self) -> str:
        """The transport's name, from its settings: a spec cannot say one transport and hold another's keys."""
        return self.settings.TRANSPORT

    @property
    def android(self) -> bool:
        """Whether the device runs Android: an Android transport or target."""
        return self.settings.ANDROID or self.target.startswith("android")

    def inventory_entry(self) -> dict[str, Any]:
        """This device as an inventory file lists it: the mapping that parses back to this spec."""
        entry: dict[str, Any] = {"transport": self.transport, "target": self.target, "workdir": self.workdir}
        if self.exec_prefix:
            entry["exec_prefix"] = list(self.exec_prefix)
        if self.threads:
            entry["threads"] = self.threads
        if self.cpus is not None:
            entry["cpus"] = self.cpus
        if self.runtime is not None:
            entry["runtime"] = self.runtime
        if self.description:
            entry["description"] = self.description
        if self.emulated:
            entry["emulated"] = True
        return {**entry, **self.settings.keys()}


@dataclass(frozen=True)
class TrustedKey:
    """A host key recorded on purpose (`etfarm devices trust`): its fingerprint and where it went."""

    fingerprint: str  # "ssh-ed25519 SHA256:..."
    known_hosts: str  # the file, as the inventory names it
