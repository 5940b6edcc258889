"""Worker device offers: inventory re-read on change, probes (fakes for the probe, real sockets for the wire)."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from device_agents import DeviceSpec
from orchestrator.config import load_inventory
from orchestrator.errors import ConfigError
from orchestrator.scale.devices import InventoryWatch, adb_devices, probe


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
    spec = DeviceSpec("s", "ssh", "host", "/tmp/s", settings={"host": "127.0.0.1", "port": port})
    assert probe(spec) is True
    port = _serve_once(b"HTTP/1.1 400\r\n", request_first=False)
    assert probe(DeviceSpec("s", "ssh", "host", "/tmp/s", settings={"host": "127.0.0.1", "port": port})) is False
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        closed = free.getsockname()[1]
    assert probe(DeviceSpec("s", "ssh", "host", "/tmp/s", settings={"host": "127.0.0.1", "port": closed})) is False
    assert probe(DeviceSpec("l", "local", "host", "/tmp/l")) is True
