"""The worker's device checks against real peers: the testbed's sshd, the real adb server tracked.

The adb tests hold `host:track-devices` on the real adb server (`adb_server` fixture) while real
device daemons attach (`adb connect`), leave (`adb disconnect`: the transport is removed, as on a
USB unplug) and die (`kill()`: the Debian adb 29 server marks the device offline but does not
tell trackers, so a full round's refresh is what notices it).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import replace

import pytest

from device_agents import DeviceSpec
from device_agents.adb.settings import AdbSettings
from device_agents.adb.track import AdbTracker
from device_agents.presence import PROBE_TIMEOUT_SEC
from orchestrator.config import load_inventory
from orchestrator.farm.devices import InventoryWatch, probe
from tests.helpers.inventory import write_inventory
from tests.helpers.waiting import eventually

TRACKED_WITHIN_SEC = 5.0


def _eventually(check: Callable[[], bool], timeout_s: float = 20.0) -> bool:
    return eventually(check, timeout_s, poll_s=0.3)


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
    other = DeviceSpec("x", "host", "/data/local/tmp/x", settings=replace(adb_device.settings, serial="nosuch"))
    assert probe(other) is False
    adb_testdevice.kill()
    assert _eventually(lambda: probe(adb_device) is False)


def test_the_adb_tracker_sees_devices_attach_and_leave_without_polling(adb_server, adb_device_factory) -> None:  # type: ignore[no-untyped-def]
    tracker = AdbTracker("127.0.0.1", adb_server.port)
    try:
        tracker.serials(wait_s=5)
        first = adb_device_factory()
        assert _eventually(lambda: first.serial in tracker.serials(), TRACKED_WITHIN_SEC)
        second = adb_device_factory()
        assert _eventually(lambda: second.serial in tracker.serials(), TRACKED_WITHIN_SEC)
        adb_server.cmd("disconnect", first.serial)
        assert _eventually(lambda: first.serial not in tracker.serials(), TRACKED_WITHIN_SEC)
        assert second.serial in tracker.serials()
        assert adb_server.cmd("connect", first.serial).returncode == 0
        assert _eventually(lambda: first.serial in tracker.serials(), TRACKED_WITHIN_SEC)
        assert tracker.connects == 1  # one connection held throughout: nothing was polled
    finally:
        tracker.stop()
    assert not tracker.alive


def _load(path):  # type: ignore[no-untyped-def]
    return {n: s for n, s in load_inventory(path).devices.items() if s.source != "<built-in>"}


def test_a_dead_adb_device_goes_offline_in_the_rounds_after_it_died(adb_testdevice, adb_device: DeviceSpec, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Each round asks the adb server afresh (nothing cached from the round before). The server itself learns of
    the daemon's death only when its connection drops, which a loaded host can delay past the next round, so the
    rounds are polled; each round stays within its deadline."""
    watch = InventoryWatch(write_inventory(tmp_path / "devices.yaml", [adb_device]), _load)
    try:
        assert watch.round().resources() == {"dev-adbdev": 1.0}
        adb_testdevice.kill()
        rounds: list[float] = []

        def offline() -> bool:
            started = time.monotonic()
            resources = watch.round().resources()
            rounds.append(time.monotonic() - started)
            return resources == {"dev-adbdev": 0.0}

        assert _eventually(offline)
        assert max(rounds) < 2 * PROBE_TIMEOUT_SEC + 5, rounds  # a round is bounded by its probe deadline
    finally:
        watch.close()


def test_a_stopped_adb_server_makes_its_devices_offline_and_no_server_is_started(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = int(free.getsockname()[1])
    spec = DeviceSpec("p", "host", "/t", settings=AdbSettings("emu-1", adb_host="127.0.0.1", adb_port=port))
    watch = InventoryWatch(write_inventory(tmp_path / "devices.yaml", [spec]), _load)
    try:
        assert watch.round().resources() == {"dev-p": 0.0}
        time.sleep(0.5)
    finally:
        watch.close()
    with pytest.raises(ConnectionRefusedError):  # neither the tracker nor the refresh started an adb server
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


SLOW_INTERVAL_SEC = 300  # far beyond the test: any change seen comes from the tracker, not a probe round
PUBLISHED_WITHIN_SEC = 10.0


@pytest.mark.slow
def test_a_worker_publishes_an_adb_change_long_before_its_probe_interval(  # type: ignore[no-untyped-def]
        adb_server, adb_testdevice, adb_device: DeviceSpec, tmp_path) -> None:
    from distributed import Client

    from orchestrator.farm.status import farm_status
    from tests.integration.test_farm import Farm

    root = tmp_path / "farm"
    root.mkdir()
    farm = Farm(root)
    try:
        config = write_inventory(tmp_path / "devices.yaml", [adb_device])
        with (root / "worker-w.log").open("ab") as sink:
            farm.procs.append(subprocess.Popen(
                [sys.executable, "-m", "orchestrator.cli", "worker", "--scheduler", farm.address, "--config", str(config),
                 "--name", "w", "--listen-host", "127.0.0.1", "--probe-interval", str(SLOW_INTERVAL_SEC)],
                stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, "ETFARM_CACHE_DIR": str(root / "cache")},
                start_new_session=True))
        with Client(farm.address, timeout=60) as client:
            def online() -> bool | None:
                return next((row.devices.get("adbdev") for row in farm_status(client)), None)

            assert _eventually(lambda: online() is True, 60), farm.logs()
            for change, want in ((("disconnect", adb_testdevice.serial), False),
                                 (("connect", adb_testdevice.serial), True)):
                started = time.monotonic()
                assert adb_server.cmd(*change).returncode == 0
                assert _eventually(lambda want=want: online() is want, PUBLISHED_WITHIN_SEC), (change, farm.logs())
                print(f"adb {change[0]}: published in {time.monotonic() - started:.2f} s")
    finally:
        farm.stop()


def test_the_tracker_follows_a_real_adb_server_through_a_restart(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from orchestrator.emulate.adbserver import start_adb_device, start_adb_server

    server = start_adb_server(tmp_path / "server")
    device = None
    tracker = AdbTracker("127.0.0.1", server.port)
    try:
        device = start_adb_device(server, tmp_path / "device")
        assert _eventually(lambda: device.serial in tracker.serials(), TRACKED_WITHIN_SEC)
        server.stop()
        assert _eventually(lambda: tracker.serials() == set(), TRACKED_WITHIN_SEC)
        time.sleep(1.0)  # refused meanwhile: the tracker backs off and did not start a server
        assert adb_server_is_down(server.port)
        assert server.cmd("start-server").returncode == 0
        assert "connected to" in server.cmd("connect", device.serial).stdout
        assert _eventually(lambda: device.serial in tracker.serials(), RECONNECT_WITHIN_SEC)
        assert tracker.connects == 2
    finally:
        tracker.stop()
        if device is not None:
            device.stop()
        server.stop()


RECONNECT_WITHIN_SEC = 10.0  # the capped backoff (5 s) plus the server's own reconnection to the device


def adb_server_is_down(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False
