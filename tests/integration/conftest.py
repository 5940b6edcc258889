"""The integration testbed as pytest fixtures: real sshd, the real adb server, a device daemon.

Fixtures (every spec is a `device_agents.base.DeviceSpec`, ready for `create_agent`):

- `ssh_device` -> DeviceSpec, transport "ssh", target "host": the session's sshd on
  127.0.0.1:<free port>, key login as the current user, known_hosts already trusting
  the server; workdir is a fresh `tmp_path/"ssh-workdir"` (created on connect).
- `unknown_key_ssh_device` -> the same server with an empty known_hosts (key unknown).
- `wrong_key_ssh_device` -> the same server with a known_hosts naming another key.
- `sshd_host` (session) -> `orchestrator.emulate.sshd.SshTestHost`: `.spec(name, workdir, target=,
  exec_prefix=, known_hosts=, **settings)`, `.port`, `.known_hosts`, `.client_key`.
- `ssh_server_factory` -> `start() -> SshTestHost`: a private sshd per call (one per
  device, or one a test may kill); all stopped at teardown.
- `rpi5_device` -> DeviceSpec "rpi5", transport "ssh", target "linux-aarch64",
  exec_prefix `qemu-aarch64 -cpu cortex-a76 -L /usr/aarch64-linux-gnu` (`etfarm devices emulate`'s), on its own
  sshd: an emulated Raspberry Pi 5 (the runner's libs still need LD_LIBRARY_PATH).
- `adb_server` (session) -> `orchestrator.emulate.adbserver.AdbTestServer`: `adb -P <port>` on a
  free port (`.port`, `.cmd(*args)`), killed at session end.
- `adb_device_factory` -> `start() -> AdbTestDevice`: a new device daemon attached
  with `adb connect`; `.spec(name, workdir=None, target=, exec_prefix=)`, `.serial`,
  `.root` (the folder its shell runs in), `.kill()` (the device dies).
- `adb_testdevice` -> one AdbTestDevice; `adb_device` -> its DeviceSpec "adbdev",
  transport "adb", target "host" (its shell runs on this x86_64 host), workdir
  `<root>/etfarm`.
- `mounts` -> `mount(path)`: `path` (made if missing) bind-mounted read-only onto itself;
  `mount(path, size="64k")`: a tmpfs of that size there (`full=True`: already filled to the last
  byte). Real file systems, since the tests run as root, where chmod stops no write; unmounted at
  teardown; root and `mount` missing skips (fails under CI=true).
- `android_phone` -> `orchestrator.emulate.android.AndroidPhone`: an emulated Pixel 8 on the same adb
  server (chroot without glibc, mksh + toybox-like applets, getprop/dumpsys/sysfs, aarch64
  under qemu); `.spec(name)` is target android-arm64-v8a, workdir /data/local/tmp/etfarm.

A missing sshd, ssh-keygen, adb, qemu-aarch64 (or for the phone mksh, busybox-static,
qemu-user-static, a mount namespace) skips the test with the reason, and
fails it when CI=true. Every process started here is killed at teardown.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

# Import the testbed the same way whether or not pytest treats this folder as a package.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from testbed import missing  # noqa: E402
from testbed.netns import NetnsLink  # noqa: E402
from testbed.netns import available as netns_available  # noqa: E402

from device_agents.base import DeviceSpec  # noqa: E402
from orchestrator.emulate import ToolMissing  # noqa: E402
from orchestrator.emulate.adbserver import (  # noqa: E402
    AdbTestDevice,
    AdbTestServer,
    start_adb_device,
    start_adb_server,
)
from orchestrator.emulate.android import AndroidPhone, start_android_phone  # noqa: E402
from orchestrator.emulate.fleet import BOARDS, board_prefix  # noqa: E402
from orchestrator.emulate.sshd import SshTestHost, keygen, start_sshd  # noqa: E402

Stoppable = TypeVar("Stoppable", SshTestHost, AdbTestDevice)


def _tool_missing_is_missing() -> Iterator[None]:
    """An emulated device's missing tool (orchestrator/emulate raises ToolMissing) skips the test, or fails it
    under CI=true, as every testbed prerequisite does."""
    try:
        return (yield)
    except ToolMissing as exc:
        missing(str(exc))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    return (yield from _tool_missing_is_missing())  # a fixture that starts an emulated device


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    return (yield from _tool_missing_is_missing())  # a test that asks for a board's exec_prefix itself


@pytest.fixture(scope="session")
def sshd_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshTestHost]:
    host = start_sshd(tmp_path_factory.mktemp("sshd"))
    yield host
    host.stop()


def _stopped_at_teardown(make: Callable[..., Stoppable]) -> Iterator[Callable[..., Stoppable]]:
    """A factory fixture's body: hand out `make`, and stop everything it made at teardown."""
    started: list[Stoppable] = []

    def start(**kwargs: Any) -> Stoppable:
        started.append(make(**kwargs))
        return started[-1]

    yield start
    for thing in started:
        thing.stop()


@pytest.fixture
def ssh_server_factory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., SshTestHost]]:
    yield from _stopped_at_teardown(lambda **kwargs: start_sshd(tmp_path_factory.mktemp("sshd"), **kwargs))


@pytest.fixture
def netns_ssh_host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SshTestHost, NetnsLink]]:
    """An sshd in its own network namespace, reached over a veth link the test can take down."""
    if not netns_available():
        missing("network namespaces need root and iproute2 (CI runs as root; run `make testbed`)")
    link = NetnsLink.create()
    try:
        host = start_sshd(tmp_path_factory.mktemp("sshd-netns"), listen=link.device_ip, netns=link.name)
        try:
            yield host, link
        finally:
            host.stop()
    finally:
        link.remove()


@pytest.fixture
def ssh_device(sshd_host: SshTestHost, tmp_path: Path) -> DeviceSpec:
    return sshd_host.spec("sshdev", tmp_path / "ssh-workdir")


@pytest.fixture
def unknown_key_ssh_device(sshd_host: SshTestHost, tmp_path: Path) -> DeviceSpec:
    return sshd_host.spec("unknown-key", tmp_path / "ssh-workdir", known_hosts=tmp_path / "empty" / "known_hosts")


@pytest.fixture
def wrong_key_ssh_device(sshd_host: SshTestHost, tmp_path: Path) -> DeviceSpec:
    other = " ".join(keygen(tmp_path / "impostor_ed25519").split()[:2])
    known_hosts = tmp_path / "wrong_known_hosts"
    known_hosts.write_text(f"{sshd_host.host_pattern} {other}\n")
    return sshd_host.spec("wrong-key", tmp_path / "ssh-workdir", known_hosts=known_hosts)


@pytest.fixture
def rpi5_device(ssh_server_factory: Callable[[], SshTestHost], tmp_path: Path) -> DeviceSpec:
    prefix = board_prefix(BOARDS["rpi5"])
    host = ssh_server_factory()
    return host.spec("rpi5", tmp_path / "rpi5-workdir", target="linux-aarch64", exec_prefix=prefix)


@pytest.fixture(scope="session")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AdbTestServer]:
    server = start_adb_server(tmp_path_factory.mktemp("adb-server"))
    yield server
    server.stop()


@pytest.fixture
def adb_device_factory(
    adb_server: AdbTestServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[[], AdbTestDevice]]:
    yield from _stopped_at_teardown(lambda: start_adb_device(adb_server, tmp_path_factory.mktemp("adb-device")))


@pytest.fixture
def adb_testdevice(adb_device_factory: Callable[[], AdbTestDevice]) -> AdbTestDevice:
    return adb_device_factory()


@pytest.fixture
def adb_device(adb_testdevice: AdbTestDevice) -> DeviceSpec:
    return adb_testdevice.spec("adbdev")


@pytest.fixture
def android_phone(adb_server: AdbTestServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[AndroidPhone]:
    phone = start_android_phone(adb_server, tmp_path_factory.mktemp("android-phone"))
    yield phone
    phone.stop()


@pytest.fixture(scope="session")
def llama_ops_pte(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A program calling llama::update_cache, the op export_llama --use_sdpa_with_kv_cache adds."""
    import executorch.extension.llm.custom_ops.custom_ops  # noqa: F401  (registers the llama:: ops)
    import torch
    from executorch.exir import to_edge_transform_and_lower

    class CacheUpdate(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.register_buffer("k_cache", torch.zeros(1, 8, 2, 4))

        def forward(self, value: torch.Tensor) -> torch.Tensor:
            torch.ops.llama.update_cache(value, self.k_cache, 0)
            return self.k_cache + 1

    exported = torch.export.export(CacheUpdate(), (torch.ones(1, 1, 2, 4),))
    pte = tmp_path_factory.mktemp("llama-ops") / "sdpa_kv.pte"
    pte.write_bytes(to_edge_transform_and_lower(exported).to_executorch().buffer)
    return pte


@pytest.fixture
def mounts() -> Iterator[Callable[..., Path]]:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        missing("read-only bind mounts and tmpfs need root and mount (CI runs as root)")
    done: list[Path] = []

    def mount(path: Path, *, size: str | None = None, full: bool = False) -> Path:
        path.mkdir(parents=True, exist_ok=True)
        if size is None:
            subprocess.run(["mount", "--bind", str(path), str(path)], check=True)
            done.append(path)
            subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], check=True)
            return path
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
        done.append(path)
        if full:  # every byte taken: a new empty file still fits, one byte does not (bounded, should the mount fail)
            subprocess.run(["sh", "-c", 'head -c 100M /dev/zero > "$1/filler"', "fill", str(path)], check=False,
                           stderr=subprocess.DEVNULL)
        return path

    yield mount
    for path in reversed(done):
        subprocess.run(["umount", "-l", str(path)], check=False)
