"""The adb server's smart-socket protocol, spoken directly: etfarm's one client of it (AOSP adb/SERVICES.TXT).

A request is 4 hex digits of length, then the service's name; the server answers `OKAY` (or `FAIL`
and a length-prefixed reason), then, for the listing services, a length-prefixed list of
`serial<whitespace>state[ tags]` lines. Two callers: discovery asks once (`host:devices-l`,
discover.py: `--devices adb:SERIAL`, `etfarm devices`), a farm worker's presence checks ask once
(`host:devices`) or hold a listing open (`host:track-devices`, track.py). adbutils (client.py)
only drives a device once the agent connects.

No adbutils here, and no adb server is ever started (adbutils and the `adb` client would start one
on a server-less host). Every socket operation has a timeout.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from dataclasses import dataclass

Server = tuple[str, int]  # (host, port) of one adb server
TIMEOUT_SEC = 2.0
READY = "device"  # the state of a device that takes commands


@dataclass(frozen=True)
class Listed:
    """One line of a server's device list."""

    serial: str
    state: str  # device | unauthorized | offline | ...
    model: str = ""  # `host:devices-l`'s `model:` tag (underscores for spaces, as adb prints it)


def ask(server: Server, service: str, timeout_s: float = TIMEOUT_SEC, connect_timeout_s: float | None = None) -> bytes:
    """One request and its one length-prefixed answer (`host:devices`, `host:devices-l`); OSError when the
    server is not there, refuses (with its reason) or answers out of protocol."""
    with socket.create_connection(server, timeout=connect_timeout_s or timeout_s) as sock:
        sock.settimeout(timeout_s)
        request(sock, service)
        return read_message(sock)


def request(sock: socket.socket, service: str) -> None:
    """Send one request; OSError unless the server says OKAY."""
    payload = service.encode()
    sock.sendall(b"%04x" % len(payload) + payload)
    status = read_exact(sock, 4)
    if status != b"OKAY":
        reason = read_message(sock).decode(errors="replace") if status == b"FAIL" else repr(status)
        raise OSError(f"adb server refused {service}: {reason}")


def read_message(sock: socket.socket, keep_waiting: Callable[[], bool] | None = None) -> bytes:
    """One length-prefixed message: 4 hex digits, then that many bytes."""
    header = read_exact(sock, 4, keep_waiting)
    try:
        size = int(header, 16)
    except ValueError:
        raise OSError(f"adb server sent {header!r}, not a length") from None
    return read_exact(sock, size, keep_waiting)


def read_exact(sock: socket.socket, n: int, keep_waiting: Callable[[], bool] | None = None) -> bytes:
    """Exactly n bytes. A timeout raises, unless `keep_waiting()` says to go on (a tracker of a quiet server)."""
    data = b""
    while len(data) < n:
        try:
            chunk = sock.recv(n - len(data))
        except TimeoutError:
            if keep_waiting is not None and keep_waiting():
                continue
            raise
        if not chunk:
            raise OSError("adb server closed the connection")
        data += chunk
    return data


def listed(body: bytes) -> list[Listed]:
    """The devices of a list, in its order (lines too short to name a serial and a state are skipped)."""
    out = []
    for line in body.decode(errors="replace").splitlines():
        words = line.split()
        if len(words) < 2:
            continue
        serial, state, *tags = words
        out.append(Listed(serial, state, next((t.partition(":")[2] for t in tags if t.startswith("model:")), "")))
    return out


def ready(body: bytes) -> frozenset[str]:
    """The serials of a list in state `device`."""
    return frozenset(d.serial for d in listed(body) if d.state == READY)


def ready_serials(server: Server, timeout_s: float = TIMEOUT_SEC) -> frozenset[str]:
    """Serials the server lists in state `device` now (`host:devices`, what `adb devices` asks)."""
    return ready(ask(server, "host:devices", timeout_s))
