"""The worker's device probes against real peers: the testbed's sshd and the real adb server."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

from device_agents import DeviceSpec
from orchestrator.scale.devices import probe


def _eventually(check: Callable[[], bool], timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.3)
    return False


def test_an_ssh_device_is_offline_while_its_sshd_is_stopped(ssh_server_factory, tmp_path) -> None:  # type: ignore[no-untyped-def]
    host = ssh_server_factory()
    spec = host.spec("s", tmp_path / "w")
    assert probe(spec) is True
    os.kill(host.proc.pid, signal.SIGSTOP)
    try:
        assert probe(spec) is False  # the kernel accepts the connection; nobody says SSH-
    finally:
        os.kill(host.proc.pid, signal.SIGCONT)
    assert probe(spec) is True
    host.stop()
    assert probe(spec) is False


def test_an_adb_device_is_offline_once_it_dies(adb_testdevice, adb_device: DeviceSpec) -> None:  # type: ignore[no-untyped-def]
    assert probe(adb_device) is True
    other = DeviceSpec("x", "adb", "host", "/data/local/tmp/x", settings={**adb_device.settings, "serial": "nosuch"})
    assert probe(other) is False
    adb_testdevice.kill()
    assert _eventually(lambda: probe(adb_device) is False)
