"""The emulated devices `etfarm devices emulate` starts, and the inventory entries that name them.

A board (`rpi5`, `rpi4`) is a real sshd on loopback with its own host key, client key and a known_hosts that
trusts exactly that key; its runner is the `linux-aarch64` one under `qemu-aarch64 -cpu <its core>` (the
device's exec_prefix: qemu-user's default `max` CPU computes some XNNPACK int8 kernels wrongly). A phone
(`pixel8`) is the real adb server on a private port with the project's phone daemon serving an empty
Android root (android_root.py): getprop, dumpsys and sysfs say Pixel 8, its shell is mksh and toybox.

Timings on them are qemu's, not the hardware's: every entry says `emulated: true`, which the manifest
and every page keep beside the device.
"""

from __future__ import annotations

import getpass
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.artifacts.targets import QEMU_SYSROOT
from orchestrator.base.errors import UsageError

from . import require_tool
from .adbserver import AdbTestServer, start_adb_server
from .android import ANDROID_TARGET, AndroidPhone, start_android_phone
from .android_root import WORKDIR
from .sshd import SshTestHost, start_sshd

__all__ = ["BOARDS", "NAMES", "PHONES", "Board", "EmulatedFleet", "Phone", "board_prefix", "start_fleet"]


@dataclass(frozen=True)
class Board:
    """An aarch64 Linux board: sshd on loopback, the runner under qemu-user with the board's core."""

    cpu: str  # qemu-aarch64 -cpu
    description: str


@dataclass(frozen=True)
class Phone:
    description: str


BOARDS: Mapping[str, Board] = {
    "rpi5": Board("cortex-a76", "Raspberry Pi 5 (emulated: sshd on loopback, qemu-aarch64 -cpu cortex-a76)"),
    "rpi4": Board("cortex-a72", "Raspberry Pi 4 (emulated: sshd on loopback, qemu-aarch64 -cpu cortex-a72)"),
}
PHONES: Mapping[str, Phone] = {
    "pixel8": Phone("Pixel 8, Android 14 (emulated: adb server + etfarm's phone daemon, aarch64 under qemu)"),
}
NAMES = (*BOARDS, *PHONES)


def board_prefix(board: Board) -> tuple[str, ...]:
    """A board's exec_prefix: its runner under qemu-user with the board's core and Debian's aarch64 glibc (ToolMissing
    naming the package when either is not installed). Never qemu's default `max` CPU: XNNPACK picks SVE/SME kernels
    there, ten times slower under qemu, int8 ones computing wrongly."""
    qemu = require_tool("qemu-aarch64")
    if not Path(QEMU_SYSROOT).is_dir():
        require_tool("aarch64-linux-gnu-g++")  # names the package that brings the sysroot
    return (qemu, "-cpu", board.cpu, "-L", QEMU_SYSROOT)


def check_names(names: Iterable[str]) -> list[str]:
    """The names asked for, in order, each once; UsageError for one etfarm cannot emulate."""
    wanted = list(dict.fromkeys(names))
    if not wanted:
        raise UsageError(f"name at least one device to emulate: {', '.join(NAMES)}")
    unknown = [n for n in wanted if n not in NAMES]
    if unknown:
        raise UsageError(f"cannot emulate {', '.join(map(repr, unknown))}; emulated devices: {', '.join(NAMES)}")
    return wanted


@dataclass
class EmulatedFleet:
    """What is running: every sshd, the adb server and the phones, and each device's inventory entry."""

    root: Path
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    hosts: list[SshTestHost] = field(default_factory=list)
    phones: list[AndroidPhone] = field(default_factory=list)
    adb: AdbTestServer | None = None

    def start_board(self, name: str, board: Board) -> None:
        prefix = board_prefix(board)  # before sshd starts: a missing tool leaves nothing running
        host = start_sshd(self.root / name / "ssh")
        self.hosts.append(host)
        self.entries[name] = {
            "transport": "ssh", "host": host.listen, "port": host.port, "user": host.user or getpass.getuser(),
            "key": str(host.client_key), "known_hosts": str(host.known_hosts), "target": "linux-aarch64",
            "workdir": str(self.root / name / "workdir"),
            "exec_prefix": list(prefix),
            "description": board.description, "emulated": True,
        }

    def start_phone(self, name: str, phone: Phone) -> None:
        if self.adb is None:
            self.adb = start_adb_server(self.root / "adb-server")
        started = start_android_phone(self.adb, self.root / name / "root")
        self.phones.append(started)
        self.entries[name] = {
            "transport": "adb", "serial": started.serial, "adb_host": "127.0.0.1", "adb_port": self.adb.port,
            "target": ANDROID_TARGET, "workdir": WORKDIR, "exec_prefix": list(started.runner_prefix),
            "description": phone.description, "emulated": True,
        }

    def stop(self) -> None:
        """Stop every phone daemon, the adb server and every sshd, with all they started."""
        for phone in self.phones:
            phone.stop()
        if self.adb is not None:
            self.adb.stop()
        for host in self.hosts:
            host.stop()
        self.phones, self.hosts, self.adb = [], [], None

    def inventory(self) -> dict[str, Any]:
        return {"devices": {name: dict(entry) for name, entry in self.entries.items()}}


def start_fleet(names: Iterable[str], root: Path) -> EmulatedFleet:
    """Start each named device under `root`; on any failure, stop what started and raise."""
    fleet = EmulatedFleet(root=root)
    try:
        for name in check_names(names):
            if name in BOARDS:
                fleet.start_board(name, BOARDS[name])
            else:
                fleet.start_phone(name, PHONES[name])
    except BaseException:
        fleet.stop()
        raise
    return fleet


def remove_tree(root: Path) -> None:
    """The fleet's files (keys, workdirs, the phone's root): nothing stays mounted there (the phone's mounts
    live in its daemon's own mount namespace, gone with it), so they can go."""
    shutil.rmtree(root, ignore_errors=True)
