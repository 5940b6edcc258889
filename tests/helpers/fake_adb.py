"""Peers for the adb presence tests: an in-process fake adb server speaking the smart-socket protocol
(OKAY, then length-prefixed device lists; `host:track-devices` held open and pushed to), and a
one-reply server (adb answers a request; ssh speaks first). Real sockets; unit tests only (the real
adb server: tests/integration/test_farm_probes.py)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import pytest


def serve_once(reply: bytes, request_first: bool = True) -> int:
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


def listing(serials: dict[str, str]) -> bytes:
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
            header = conn.recv(4)
            if len(header) < 4:  # a client that connected and left (a deadline hit): keep serving the others
                conn.close()
                continue
            request = conn.recv(int(header, 16))
            self.requests.append(request)
            with self.lock:
                if not self.answer:
                    self.conns.append(conn)
                elif request == b"host:devices":  # answered once, then closed
                    snapshot = listing(self.devices)
                    self.lock.release()
                    try:
                        self.release_answer.wait(10)  # a slow answer, for races
                    finally:
                        self.lock.acquire()
                    with conn:
                        conn.sendall(b"OKAY" + snapshot)
                else:
                    self.conns.append(conn)
                    conn.sendall(b"OKAY" + listing(self.devices))

    def push(self, devices: dict[str, str]) -> None:
        with self.lock:
            self.devices = dict(devices)
            for conn in self.conns:
                conn.sendall(listing(self.devices))

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
def adb_servers() -> Iterator[Callable[..., FakeAdbServer]]:
    started: list[FakeAdbServer] = []

    def start(devices: dict[str, str], port: int = 0, answer: bool = True) -> FakeAdbServer:
        started.append(FakeAdbServer(devices, port, answer))
        return started[-1]

    yield start
    for server in started:
        server.stop()
