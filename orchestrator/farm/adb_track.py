"""The adb server's device list, asked once or tracked: the one home of the adb smart-socket protocol here.

A worker must know at once when a phone is plugged in or pulled out, without asking the adb server
every few seconds. The server offers exactly that (adb's SERVICES.TXT): `host:track-devices` is
`host:devices` on a connection that stays open; the server answers `OKAY`, then sends the device
list (4 hex digits of length, then `serial<TAB>state` lines) at once and again on every change.

- `adb_devices(port, host)`: one `host:devices` request (what `adb devices` asks), for a caller
  that holds no tracker.
- `AdbTracker`: a daemon thread holding `host:track-devices` on one server; `serials()` is the
  set of serials in state `device` as of the last list. While the connection is down (no server,
  a closed connection, a server that accepts but does not answer within the timeout) the set is
  empty - every device of that server is offline - and the thread reconnects after a capped
  exponential backoff (a plain `Event.wait`, so that `stop()` interrupts it at once; tenacity's
  retry loop would not). `on_change()` is called from the thread whenever the set changes.
  `refresh()` corrects the set with one `host:devices`: adb servers before platform-tools 31
  (Debian's adb 29.0.6) tell trackers when a transport is added or removed (USB plug/unplug,
  `adb connect`/`disconnect`) but not when a listed one turns `offline` (a TCP device whose daemon
  died stays listed, reconnecting); the worker refreshes once per probe interval for that case.
- `AdbTrackers`: one tracker per (host, port), kept to the servers the inventory names.

This code speaks the socket protocol itself and never starts an adb server (adbutils and the
`adb` client would start one on a server-less host). Every socket operation has a timeout; a
server that is silent because nothing changes is waited for in `timeout_s` slices so that
`stop()` is seen, and the thread is a daemon, so it never holds up the worker's shutdown. Readers
(`serials()`) never touch the socket, so a stalled server cannot wedge a probe round.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Iterable

TIMEOUT_SEC = 2.0
BACKOFF_MIN_SEC = 0.2
BACKOFF_MAX_SEC = 5.0

log = logging.getLogger(__name__)
ServerKey = tuple[str, int]  # (host, port) of one adb server


def adb_devices(port: int, host: str = "127.0.0.1", timeout_s: float = TIMEOUT_SEC) -> set[str]:
    """Serials the adb server lists in state `device` (smart-socket `host:devices`)."""
    with socket.create_connection((host, port), timeout=timeout_s) as sock:
        sock.settimeout(timeout_s)
        _request(sock, "host:devices")
        return _serials(_read_message(sock))


def _request(sock: socket.socket, service: str) -> None:
    """Send one smart-socket request; raise OSError unless the server says OKAY."""
    payload = service.encode()
    sock.sendall(b"%04x" % len(payload) + payload)
    status = _read(sock, 4)
    if status != b"OKAY":
        reason = _read_message(sock).decode(errors="replace") if status == b"FAIL" else repr(status)
        raise OSError(f"adb server refused {service}: {reason}")


def _read_message(sock: socket.socket, keep_waiting: Callable[[], bool] | None = None) -> bytes:
    """One length-prefixed message: 4 hex digits, then that many bytes."""
    header = _read(sock, 4, keep_waiting)
    try:
        size = int(header, 16)
    except ValueError:
        raise OSError(f"adb server sent {header!r}, not a length") from None
    return _read(sock, size, keep_waiting)


def _read(sock: socket.socket, n: int, keep_waiting: Callable[[], bool] | None = None) -> bytes:
    """Exactly n bytes. A timeout raises, unless `keep_waiting()` says to go on (a quiet tracker)."""
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


def _serials(body: bytes) -> set[str]:
    lines = body.decode(errors="replace").splitlines()
    return {line.split("\t")[0] for line in lines if line.endswith("\tdevice")}


class AdbTracker:
    """A daemon thread tracking one adb server's devices (see the module docstring)."""

    def __init__(self, host: str, port: int, on_change: Callable[[], None] | None = None,
                 timeout_s: float = TIMEOUT_SEC) -> None:
        self.host, self.port, self.timeout_s = host, port, timeout_s
        self._on_change = on_change
        self._serials: frozenset[str] = frozenset()
        self._answered = threading.Event()  # a first list arrived, or a first attempt failed
        self._stop = threading.Event()
        self._lock = threading.Lock()  # guards _sock
        self._publishing = threading.Lock()  # one writer of _serials at a time (thread or refresh)
        self.connects = 0  # tracking connections made (one while the server stays up: nothing is polled)
        self._sock: socket.socket | None = None
        self._listed = False  # this connection delivered a list (resets the backoff)
        self._lists = 0  # lists the thread published (a refresh never overwrites a newer one)
        self._thread = threading.Thread(target=self._run, name=f"adb-track-{host}:{port}", daemon=True)
        self._thread.start()

    def serials(self, wait_s: float = 0.0) -> frozenset[str]:
        """Serials in state `device` now; waits up to `wait_s` for the tracker's first answer."""
        if wait_s > 0:
            self._answered.wait(wait_s)
        return self._serials

    def refresh(self) -> frozenset[str]:
        """Correct the set with one `host:devices` answer; an unreachable server empties it.

        Needed because adb servers before platform-tools 31 (Debian's 29.0.6 among them) do not tell
        trackers when a device turns `offline` while its transport stays listed (a TCP device whose
        daemon died, reconnecting); a USB unplug or `adb disconnect` removes the transport and is told.
        """
        lists_before = self._lists
        try:
            serials = frozenset(adb_devices(self.port, self.host, self.timeout_s))
        except OSError as exc:
            log.debug("adb server %s:%d: %s", self.host, self.port, exc)
            serials = frozenset()
        with self._publishing:
            if self._lists == lists_before:  # else the tracker got a newer list meanwhile: it wins
                self._publish(serials)
        self._answered.set()
        return self._serials

    def stop(self, join_s: float = 1.0) -> None:
        self._stop.set()
        with self._lock:
            if self._sock is not None:
                try:
                    self._sock.shutdown(socket.SHUT_RDWR)  # wakes the blocked recv at once
                except OSError:
                    pass
        if threading.current_thread() is not self._thread:
            self._thread.join(join_s)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def _run(self) -> None:
        delay = BACKOFF_MIN_SEC
        while not self._stop.is_set():
            self._listed = False
            try:
                self._track()
            except OSError as exc:  # TimeoutError and ConnectionRefusedError included
                if self._listed:  # it was tracking: try again soon, then back off
                    delay = BACKOFF_MIN_SEC
                if not self._stop.is_set():
                    log.log(logging.WARNING if self._listed else logging.DEBUG,
                            "adb server %s:%d: %s; its devices are offline, retrying in %.1f s",
                            self.host, self.port, exc, delay)
            with self._publishing:
                self._lists += 1
                self._publish(frozenset())
            self._answered.set()
            if self._stop.wait(delay):
                break
            delay = min(delay * 2, BACKOFF_MAX_SEC)

    def _track(self) -> None:
        sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        with sock:
            with self._lock:
                if self._stop.is_set():
                    return
                self._sock = sock
            try:
                sock.settimeout(self.timeout_s)
                _request(sock, "host:track-devices")
                self.connects += 1
                while True:
                    body = _read_message(sock, keep_waiting=lambda: not self._stop.is_set())
                    self._listed = True
                    with self._publishing:
                        self._lists += 1
                        self._publish(frozenset(_serials(body)))
                    self._answered.set()
            finally:
                with self._lock:
                    self._sock = None

    def _publish(self, serials: frozenset[str]) -> None:
        if serials == self._serials:
            return
        self._serials = serials
        log.debug("adb server %s:%d: devices %s", self.host, self.port, sorted(serials) or "none")
        if self._on_change is not None and not self._stop.is_set():
            try:
                self._on_change()
            except Exception:  # a listener's bug must not kill the tracker
                log.exception("adb tracker listener failed")


class AdbTrackers:
    """One AdbTracker per adb server (host, port); `keep()` stops those no longer named."""

    def __init__(self, on_change: Callable[[], None] | None = None, timeout_s: float = TIMEOUT_SEC) -> None:
        self._on_change = on_change
        self._timeout_s = timeout_s
        self._trackers: dict[ServerKey, AdbTracker] = {}

    def get(self, host: str, port: int) -> AdbTracker:
        key = (host, port)
        if key not in self._trackers:
            self._trackers[key] = AdbTracker(host, port, self._on_change, self._timeout_s)
        return self._trackers[key]

    def keep(self, servers: Iterable[ServerKey]) -> None:
        """Start a tracker for each server named, stop every other."""
        wanted = set(servers)
        for key in set(self._trackers) - wanted:
            self._trackers.pop(key).stop()
        for host, port in wanted:
            self.get(host, port)

    def refresh(self) -> None:
        """`refresh()` every tracker: one `host:devices` per server (see AdbTracker.refresh)."""
        for tracker in list(self._trackers.values()):
            tracker.refresh()

    def servers(self) -> set[ServerKey]:
        return set(self._trackers)

    def close(self) -> None:
        self.keep(())
