"""A device behind its own network link: a network namespace joined to the host by a veth pair.

`ip link set HOST_IF down` then takes the link away the way a pulled cable or a dead Wi-Fi does:
packets vanish, no RST, no FIN. Needs root (CI runs as root); `available()` says whether it works.
"""

from __future__ import annotations

import os
import random
import subprocess
import uuid
from dataclasses import dataclass


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


def available() -> bool:
    return os.geteuid() == 0 and subprocess.run(["ip", "netns", "list"], capture_output=True).returncode == 0


@dataclass
class NetnsLink:
    """Namespace `name`; the host side `host_if` at `host_ip`, the device side at `device_ip`."""

    name: str
    host_if: str
    host_ip: str
    device_ip: str

    @classmethod
    def create(cls) -> NetnsLink:
        tag = uuid.uuid4().hex[:8]
        a, b = random.randrange(1, 254), random.randrange(0, 63) * 4
        link = cls(f"etf-{tag}", f"etfh{tag}", f"10.213.{a}.{b + 1}", f"10.213.{a}.{b + 2}")
        device_if = f"etfd{tag}"
        _ip("netns", "add", link.name)
        try:
            _ip("link", "add", link.host_if, "type", "veth", "peer", "name", device_if)
            _ip("link", "set", device_if, "netns", link.name)
            _ip("addr", "add", f"{link.host_ip}/30", "dev", link.host_if)
            _ip("link", "set", link.host_if, "up")
            _ip("-n", link.name, "addr", "add", f"{link.device_ip}/30", "dev", device_if)
            _ip("-n", link.name, "link", "set", device_if, "up")
            _ip("-n", link.name, "link", "set", "lo", "up")
        except BaseException:
            link.remove()
            raise
        return link

    def down(self) -> None:
        _ip("link", "set", self.host_if, "down")

    def up(self) -> None:
        _ip("link", "set", self.host_if, "up")

    def remove(self) -> None:
        subprocess.run(["ip", "link", "del", self.host_if], capture_output=True, timeout=10)
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=10)
