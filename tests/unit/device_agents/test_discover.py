"""device_agents/adb/discover.py: what an adb server lists, read without adbutils (the real server: test_android_run.py)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest

from device_agents.adb.discover import SeenDevice, seen_devices

LISTING = ("emulator-5554          device product:sdk_gphone64 model:sdk_gphone64_arm64 device:emu64a transport_id:1\n"
           "39071FDJH000XY         unauthorized usb:1-1 transport_id:2\n"
           "\n")


@pytest.fixture
def server() -> Iterator[tuple[str, int]]:
    """A one-request adb server: answers `host:devices-l` with LISTING, as adb does."""
    listener = socket.create_server(("127.0.0.1", 0))
    requests: list[bytes] = []

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            length = int(conn.recv(4), 16)
            requests.append(conn.recv(length))
            body = LISTING.encode()
            conn.sendall(b"OKAY" + b"%04x" % len(body) + body)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()
    thread.join(5)
    listener.close()
    assert requests == [b"host:devices-l"]


def test_every_device_the_server_lists(server: tuple[str, int]) -> None:
    seen = seen_devices(server)
    assert seen == [SeenDevice("emulator-5554", "device", server, "sdk_gphone64_arm64"),
                    SeenDevice("39071FDJH000XY", "unauthorized", server, "")]
    assert seen[0].name == "adb:emulator-5554"  # what --devices takes


def test_no_server_lists_nothing_and_imports_no_adbutils() -> None:
    """`etfarm devices` on an inventory without adb devices asks adb's default server, without adbutils."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nobody listens here
    code = ("import sys; from device_agents.adb.discover import seen_devices; "
            f"assert seen_devices(('127.0.0.1', {port})) == []; assert 'adbutils' not in sys.modules")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60).returncode == 0
