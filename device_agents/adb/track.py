"""An adb server's devices, tracked: a device's presence pushed the moment it changes (`AdbListing`).

A farm worker must know at once when a phone is plugged in or pulled out, without asking the adb
server every few seconds. The server offers exactly that (adb's SERVICES.TXT): `host:track-devices`
is `host:devices` on a connection that stays open; the server answers `OKAY`, then sends the device
list at once and again on every change (the protocol: wire.py).

- `AdbListing`: an adb device's presence (AdbSettings.presence): there while its server lists its
  serial in state `device`; read from the server's tracker in a PresenceWatch
  (device_agents/presence.py), else asked once.
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

Every socket operation has a timeout; a server that is silent because nothing changes is waited
for in `timeout_s` slices so that `stop()` is seen, and the thread is a daemon, so it never holds
up the worker's shutdown. Readers (`serials()`) never touch the socket, so a stalled server cannot
wedge a probe round. No adb server is ever started.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass

from device_agents.adb import wire
from device_agents.presence import OnChange, PresenceWatch, TrackedPresence

BACKOFF_MIN_SEC = 0.2
BACKOFF_MAX_SEC = 5.0

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class AdbListing(TrackedPresence["AdbTracker"]):
    """Present while the adb server at `server` (host, port) lists `serial` in state `device`."""

    server: wire.Server
    serial: str

    @property
    def tracker_key(self) -> tuple[str, str, int]:
        return ("adb", *self.server)

    def start_tracker(self, on_change: OnChange | None, timeout_s: float) -> AdbTracker:
        return AdbTracker(*self.server, on_change=on_change, timeout_s=timeout_s)

    def check(self, watch: PresenceWatch | None) -> bool:
        """From the server's tracker (waiting up to the watch's timeout for a new tracker's first list);
        without a watch, one `host:devices`."""
        if watch is None:
            return self.serial in wire.ready_serials(self.server)
        return self.serial in watch.tracker(self).serials(wait_s=watch.timeout_s)


class AdbTracker:
    """A daemon thread tracking one adb server's devices (see the module docstring)."""

    def __init__(self, host: str, port: int, on_change: Callable[[], None] | None = None,
                 timeout_s: float = wire.TIMEOUT_SEC) -> None:
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
            serials = wire.ready_serials((self.host, self.port), self.timeout_s)
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
                wire.request(sock, "host:track-devices")
                self.connects += 1
                while True:
                    body = wire.read_message(sock, keep_waiting=lambda: not self._stop.is_set())
                    self._listed = True
                    with self._publishing:
                        self._lists += 1
                        self._publish(wire.ready(body))
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
