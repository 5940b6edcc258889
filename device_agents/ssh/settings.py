"""The keys of an ssh device (`transport: ssh`), typed; no paramiko here (the inventory parser loads it).

Keys only, never passwords; the host key is verified against `known_hosts` and nothing else.
"""

from __future__ import annotations

import getpass
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, cast

from device_agents.keys import InventoryEntry
from device_agents.presence import Presence, ServerBanner
from device_agents.spec import DeviceSpec, TransportSettings
from orchestrator.base.errors import ConfigError, DeviceRefused

DEFAULT_PORT = 22
DEFAULT_KNOWN_HOSTS = "~/.config/etfarm/known_hosts"
DEFAULT_CONNECT_TIMEOUT_SEC = 15.0
# Per device and per user: two users or two inventory names never share a workdir by default.
DEFAULT_WORKDIR = "/tmp/etfarm-{user}/{device}"
BANNER = b"SSH-"  # what every SSH server says first (RFC 4253, 4.2)


def known_hosts_name(host: str, port: int) -> str:
    """How known_hosts names host:port (`[host]:port` unless the port is 22)."""
    return host if port == DEFAULT_PORT else f"[{host}]:{port}"


@dataclass(frozen=True)
class SshSettings(TransportSettings):
    """host, port, user, key, known_hosts, connect_timeout: as written in the inventory (`~` kept)."""

    host: str
    key: str  # the private key file
    port: int = DEFAULT_PORT
    user: str | None = None  # None: the local user's name
    known_hosts: str = DEFAULT_KNOWN_HOSTS
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT_SEC  # seconds, for TCP, banner, key exchange and login

    TRANSPORT: ClassVar[str] = "ssh"
    KEYS: ClassVar[tuple[str, ...]] = ("host", "port", "user", "key", "known_hosts", "connect_timeout")

    @classmethod
    def parse(cls, entry: InventoryEntry) -> SshSettings:
        host = entry.required_text("host")
        port = entry.port("port", DEFAULT_PORT)
        user = entry.text("user")
        key = entry.required_text("key")
        known_hosts = entry.text("known_hosts", DEFAULT_KNOWN_HOSTS)
        connect_timeout = entry.seconds("connect_timeout", DEFAULT_CONNECT_TIMEOUT_SEC)
        return cls(host=host, key=key, port=port, user=user or None, known_hosts=known_hosts or DEFAULT_KNOWN_HOSTS,
                   connect_timeout=connect_timeout)

    def check_host_files(self, device: str, source: str) -> None:
        """The key file must hold a usable private key (device_agents/ssh/keyfile.py; imports paramiko)."""
        from device_agents.ssh.keyfile import key_problem

        problem = key_problem(self.key_file)
        if problem is not None:
            raise ConfigError(source, f"devices.{device}.key", problem)

    @property
    def address(self) -> str:
        return f"{self.user}@{self.host}:{self.port}" if self.user else f"{self.host}:{self.port}"

    @property
    def presence(self) -> Presence:
        return ServerBanner(self.host, self.port, BANNER)

    def default_workdir(self, device: str) -> str:
        return DEFAULT_WORKDIR.format(user=self.login, device=device)

    @property
    def login(self) -> str:
        """The user name to log in as."""
        return self.user or getpass.getuser()

    @property
    def key_file(self) -> Path:
        return Path(self.key).expanduser()

    @property
    def known_hosts_file(self) -> Path:
        return Path(self.known_hosts).expanduser()

    @property
    def known_hosts_name(self) -> str:
        return known_hosts_name(self.host, self.port)


def ssh_settings(spec: DeviceSpec) -> SshSettings:
    """The spec's ssh settings (an ssh device's: its transport follows from them), refusing a spec without the
    host or the key to log in with."""
    cfg = cast(SshSettings, spec.settings)
    where = f"device {spec.name!r} in {spec.source}"
    if not cfg.host:
        raise DeviceRefused(spec.name, f"ssh setting 'host' is missing ({where})")
    if not cfg.key:
        raise DeviceRefused(spec.name, f"ssh setting 'key' (a private key file) is missing ({where}): keys only, no passwords")
    return cfg
