"""Worker device offers: inventory re-read on change, probes and adb tracking.

Fakes for the probe; real sockets for the wire, with an in-process fake adb server (FakeAdbServer)
speaking the smart-socket protocol: OKAY, then length-prefixed device lists.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from device_agents import DeviceSpec
from device_agents.adb.settings import AdbSettings
from device_agents.ssh.settings import SshSettings
from orchestrator.config import load_inventory
from orchestrator.errors import ConfigError
from orchestrator.farm.adb_track import AdbTracker, AdbTrackers, adb_devices
from orchestrator.farm.devices import InventoryWatch, probe
from tests.helpers.inventory import write_inventory


def _load(path: Path | None) -> dict[str, DeviceSpec]:
    return {n: s for n, s in load_inventory(path).devices.items() if s.source != "<built-in>"}


def _write(path: Path, names: list[str], bump: int) -> None:
    path.write_text("devices:\n" + "".join(f"  {n}: {{transport: local, workdir: /tmp/{n}}}\n" for n in names))
    os.utime(path, (bump, bump))  # distinct mtimes even within one clock tick


def test_a_device_added_to_the_file_is_offered_and_a_removed_one_drops_to_zero(tmp_path: Path) -> None:
    config = tmp_path / "devices.yaml"
    _write(config, ["a"], 1000)
    up = {"a": True, "b": False}
    watch = InventoryWatch(config, _load, lambda spec: up[spec.name])
    assert watch.round().resources() == {"dev-a": 1.0}
    _write(config, ["a", "b"], 2000)
    assert watch.round().resources() == {"dev-a": 1.0, "dev-b": 0.0}
    up["b"] = True
    assert watch.round().resources() == {"dev-a": 1.0, "dev-b": 1.0}
    _write(config, ["b"], 3000)
    assert watch.round().resources() == {"dev-a": 0.0, "dev-b": 1.0}
    assert watch.spec("a") is None


def test_a_broken_file_keeps_the_previous_inventory_but_a_first_broken_file_is_an_error(tmp_path: Path) -> None:
    config = tmp_path / "devices.yaml"
    _write(config, ["a"], 1000)
    watch = InventoryWatch(config, _load, lambda spec: True)
    config.write_text("devices: [oops\n")
    os.utime(config, (2000, 2000))
    assert watch.round().resources() == {"dev-a": 1.0}
    with pytest.raises(ConfigError):
        InventoryWatch(config, _load, lambda spec: True)


def _serve_once(reply: bytes, request_first: bool = True) -> int:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)

    def answer() -> None:
        conn, _ = server.accept()
        with conn:
            if request_first:  # adb: the client asks first; ssh: the server speaks first
                conn.recv(64)
            conn.sendall(reply)
        server.close()

    threading.Thread(target=answer, daemon=True).start()
    return int(server.getsockname()[1])


def test_adb_device_list_keeps_only_devices_in_state_device() -> None:
    body = b"emu-1\tdevice\nusb-2\toffline\n127.0.0.1:5555\tdevice\n"
    port = _serve_once(b"OKAY" + b"%04x" % len(body) + body)
    assert adb_devices(port) == {"emu-1", "127.0.0.1:5555"}


def test_ssh_probe_wants_a_banner_and_never_raises() -> None:
    port = _serve_once(b"SSH-2.0-OpenSSH_9.2\r\n", request_first=False)
    spec = DeviceSpec("s", "ssh", "host", "/tmp/s", settings=SshSettings("127.0.0.1", key="k", port=port))
    assert probe(spec) is True
    port = _serve_once(b"HTTP/1.1 400\r\n", request_first=False)
    assert probe(DeviceSpec("s", "ssh", "host", "/tmp/s", settings=SshSettings("127.0.0.1", key="k", port=port))) is False
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        closed = free.getsockname()[1]
    assert probe(DeviceSpec("s", "ssh", "host", "/tmp/s", settings=SshSettings("127.0.0.1", key="k", port=closed))) is False
    assert probe(DeviceSpec("l", "local", "host", "/tmp/l")) is True


def test_adb_refusal_raises_with_the_servers_reason() -> None:
    reason = b"unknown host service"
    port = _serve_once(b"FAIL" + b"%04x" % len(reason) + reason)
    with pytest.raises(OSError, match="unknown host service"):
        adb_devices(port)


def _listing(serials: dict[str, str]) -> bytes:
    body = "".join(f"{serial}\t{state}\n" for serial, state in serials.items()).encode()
    return b"%04x" % len(body) + body


class FakeAdbServer:
    """An adb server that answers `host:track-devices`: OKAY and the list, then every list pushed."""

    def __init__(self, devices: dict[str, str], port: int = 0, answer: bool = True) -> None:
        self.devices = dict(devices)
        self.answer = answer  # False: accept and never speak (a stalled server)
        self.requests: list[bytes] = []
        self.release_answer = threading.Event()  # host:devices answers wait for it
        self.release_answer.set()
        self.conns: list[socket.socket] = []
        self.lock = threading.Lock()
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", port))
        self.listener.listen(4)
        self.port = int(self.listener.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            size = int(conn.recv(4), 16)
            request = conn.recv(size)
            self.requests.append(request)
            with self.lock:
                if not self.answer:
                    self.conns.append(conn)
                elif request == b"host:devices":  # answered once, then closed
                    snapshot = _listing(self.devices)
                    self.lock.release()
                    try:
                        self.release_answer.wait(10)  # a slow answer, for races
                    finally:
                        self.lock.acquire()
                    with conn:
                        conn.sendall(b"OKAY" + snapshot)
                else:
                    self.conns.append(conn)
                    conn.sendall(b"OKAY" + _listing(self.devices))

    def push(self, devices: dict[str, str]) -> None:
        with self.lock:
            self.devices = dict(devices)
            for conn in self.conns:
                conn.sendall(_listing(self.devices))

    def change_silently(self, devices: dict[str, str]) -> None:
        """What adb < 31 does when a listed device turns offline: the list changes, trackers are not told."""
        with self.lock:
            self.devices = dict(devices)

    def stop(self) -> None:
        """The server dies: no more connections accepted, the open ones closed."""
        try:
            self.listener.shutdown(socket.SHUT_RDWR)  # wakes the blocked accept(); close() alone would not
        except OSError:
            pass
        self.listener.close()
        with self.lock:
            for conn in self.conns:
                conn.close()
            self.conns.clear()


@pytest.fixture
def adb_servers() -> object:
    started: list[FakeAdbServer] = []

    def start(devices: dict[str, str], port: int = 0, answer: bool = True) -> FakeAdbServer:
        started.append(FakeAdbServer(devices, port, answer))
        return started[-1]

    yield start
    for server in started:
        server.stop()


def _eventually(check: Callable[[], bool], timeout_s: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return check()


def test_a_tracker_holds_the_initial_list_and_each_list_the_server_pushes(adb_servers) -> None:  # type: ignore[no-untyped-def]
    server = adb_servers({"emu-1": "device", "usb-2": "offline"})
    changed = threading.Event()
    tracker = AdbTracker("127.0.0.1", server.port, on_change=changed.set)
    try:
        assert tracker.serials(wait_s=5) == {"emu-1"}
        assert server.requests == [b"host:track-devices"]
        assert changed.wait(5)
        changed.clear()
        server.push({"emu-1": "device", "usb-2": "device", "usb-3": "unauthorized"})
        assert changed.wait(5)
        assert tracker.serials() == {"emu-1", "usb-2"}
        changed.clear()
        server.push({"usb-2": "device"})
        assert changed.wait(5)
        assert tracker.serials() == {"usb-2"}
        assert len(server.requests) == 1  # one connection, held: nothing polled
    finally:
        tracker.stop()
    assert not tracker.alive


def test_a_server_gone_empties_the_set_and_the_tracker_reconnects_when_it_is_back(adb_servers) -> None:  # type: ignore[no-untyped-def]
    server = adb_servers({"emu-1": "device"})
    changed = threading.Event()
    tracker = AdbTracker("127.0.0.1", server.port, on_change=changed.set)
    try:
        assert tracker.serials(wait_s=5) == {"emu-1"}
        changed.clear()
        server.stop()
        assert changed.wait(5)
        assert tracker.serials() == set()
        time.sleep(1.0)  # refused a few times: backing off
        changed.clear()
        back = adb_servers({"emu-1": "device", "emu-2": "device"}, port=server.port)
        assert changed.wait(BACKOFF_BOUND_SEC)
        assert tracker.serials() == {"emu-1", "emu-2"}
        assert back.requests == [b"host:track-devices"]
    finally:
        tracker.stop()


BACKOFF_BOUND_SEC = 7.0  # the capped backoff (5 s) plus the connection


def test_no_server_and_a_stalled_server_answer_an_empty_set_within_the_timeout(adb_servers) -> None:  # type: ignore[no-untyped-def]
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        nobody = int(free.getsockname()[1])
    stalled = adb_servers({"emu-1": "device"}, answer=False)
    for port in (nobody, stalled.port):
        tracker = AdbTracker("127.0.0.1", port, timeout_s=0.3)
        try:
            started = time.monotonic()
            assert tracker.serials(wait_s=5) == set()
            assert time.monotonic() - started < 2.0
        finally:
            tracker.stop()
        assert not tracker.alive


def test_refresh_corrects_a_change_the_server_did_not_push(adb_servers) -> None:  # type: ignore[no-untyped-def]
    server = adb_servers({"emu-1": "device", "emu-2": "device"})
    changed = threading.Event()
    tracker = AdbTracker("127.0.0.1", server.port, on_change=changed.set)
    try:
        assert tracker.serials(wait_s=5) == {"emu-1", "emu-2"}
        changed.clear()
        server.change_silently({"emu-1": "offline", "emu-2": "device"})
        time.sleep(0.2)
        assert tracker.serials() == {"emu-1", "emu-2"}  # not told
        assert tracker.refresh() == {"emu-2"}
        assert tracker.serials() == {"emu-2"} and changed.is_set()
        assert server.requests == [b"host:track-devices", b"host:devices"]
        server.stop()
        assert tracker.refresh() == set()
    finally:
        tracker.stop()


def test_a_refresh_never_overwrites_a_newer_pushed_list(adb_servers) -> None:  # type: ignore[no-untyped-def]
    server = adb_servers({"emu-1": "device"})
    tracker = AdbTracker("127.0.0.1", server.port)
    try:
        assert tracker.serials(wait_s=5) == {"emu-1"}
        server.release_answer.clear()
        refreshed: list[frozenset[str]] = []
        refreshing = threading.Thread(target=lambda: refreshed.append(tracker.refresh()))
        refreshing.start()
        assert _eventually(lambda: server.requests[-1] == b"host:devices")  # its answer: the list of now
        server.push({"emu-1": "device", "emu-2": "device"})  # a newer list, pushed while it waits
        assert _eventually(lambda: tracker.serials() == {"emu-1", "emu-2"})
        server.release_answer.set()
        refreshing.join(5)
        assert refreshed == [{"emu-1", "emu-2"}] and tracker.serials() == {"emu-1", "emu-2"}
    finally:
        tracker.stop()


def test_trackers_follow_the_servers_the_inventory_names(adb_servers, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    one, two = adb_servers({"s1": "device"}), adb_servers({"s2": "device"})

    def adb(name: str, serial: str, port: int) -> DeviceSpec:
        return DeviceSpec(name, "adb", "host", f"/data/local/tmp/{name}",
                          settings=AdbSettings(serial, adb_host="127.0.0.1", adb_port=port))

    config = write_inventory(tmp_path / "devices.yaml", [adb("p1", "s1", one.port), adb("p2", "s2", one.port)])
    changed = threading.Event()
    watch = InventoryWatch(config, _load, on_change=changed.set)
    try:
        assert watch.adb.servers() == {("127.0.0.1", one.port)}
        first = watch.adb.get("127.0.0.1", one.port)
        assert watch.round().resources() == {"dev-p1": 1.0, "dev-p2": 0.0}
        changed.clear()
        one.push({"s1": "device", "s2": "device"})
        assert changed.wait(5)
        assert watch.round(tracked_only=True).resources() == {"dev-p1": 1.0, "dev-p2": 1.0}
        one.change_silently({"s2": "device"})
        assert watch.round(tracked_only=True).resources() == {"dev-p1": 1.0, "dev-p2": 1.0}
        assert watch.round().resources() == {"dev-p1": 0.0, "dev-p2": 1.0}  # a full round refreshes
        write_inventory(config, [adb("p2", "s2", two.port)])
        os.utime(config, (5000, 5000))
        assert watch.round().resources() == {"dev-p1": 0.0, "dev-p2": 1.0}
        assert watch.adb.servers() == {("127.0.0.1", two.port)}
        assert not first.alive
    finally:
        watch.close()
    assert watch.adb.servers() == set()


def test_a_tracked_round_rechecks_adb_devices_only(tmp_path: Path) -> None:
    config = tmp_path / "devices.yaml"
    _write(config, ["a"], 1000)
    calls: list[str] = []

    def fake(spec: DeviceSpec) -> bool:
        calls.append(spec.name)
        return True

    watch = InventoryWatch(config, _load, fake)
    assert watch.round().resources() == {"dev-a": 1.0}
    assert watch.round(tracked_only=True).resources() == {"dev-a": 1.0}
    assert calls == ["a"]


def test_probe_without_trackers_asks_the_server_once_and_with_trackers_reads_the_tracker(adb_servers) -> None:  # type: ignore[no-untyped-def]
    body = b"emu-1\tdevice\n"
    port = _serve_once(b"OKAY" + b"%04x" % len(body) + body)
    spec = DeviceSpec("p", "adb", "host", "/t", settings=AdbSettings("emu-1", adb_port=port))
    assert probe(spec) is True
    server = adb_servers({"emu-1": "device"})
    trackers = AdbTrackers()
    try:
        tracked = DeviceSpec("p", "adb", "host", "/t", settings=AdbSettings("emu-1", adb_port=server.port))
        assert probe(tracked, trackers) is True
        assert server.requests == [b"host:track-devices"]
        assert probe(DeviceSpec("q", "adb", "host", "/t", settings=AdbSettings("x", adb_port=server.port)),
                     trackers) is False
    finally:
        trackers.close()
