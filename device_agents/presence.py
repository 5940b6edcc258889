"""Is the device there? Each transport's settings say how to tell (`TransportSettings.presence`).

A farm worker offers a device only while it is there (orchestrator/farm/devices.py asks every
round); the checks cost milliseconds, never log in and never start anything:
- `AlwaysPresent` (local): the host itself;
- `ServerBanner` (ssh): a TCP connection to host:port that answers with the banner (`SSH-`) within
  PROBE_TIMEOUT_SEC; a stopped sshd still has connections accepted by the kernel, but never speaks;
- `AdbListing` (adb, device_agents/adb/track.py): tracked, not polled: the adb server pushes its
  device list on every change to a tracker the `PresenceWatch` holds, one per server.

`PresenceWatch` is what checking keeps between rounds: the trackers of the presences that have
one (`TrackedPresence`), started for the presences it is told to keep and stopped for those it no
longer is; `refresh()` corrects every tracker once (what a full round does).
"""

from __future__ import annotations

import logging
import socket
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import ClassVar, Generic, Protocol, TypeVar, cast

PROBE_TIMEOUT_SEC = 2.0

log = logging.getLogger(__name__)


class Tracker(Protocol):
    """A daemon thread that follows a source of presence (an adb server) and calls back on a change."""

    def refresh(self) -> object: ...

    def stop(self) -> None: ...


T = TypeVar("T", bound=Tracker)
OnChange = Callable[[], None]


class Presence(ABC):
    """How to tell that one device is there."""

    tracked: ClassVar[bool] = False  # a tracker tells of its changes as they happen

    @abstractmethod
    def check(self, watch: PresenceWatch | None) -> bool:
        """Whether the device is there now (OSError, ValueError: it is not). `watch`: the trackers to read."""

    def present(self, watch: PresenceWatch | None = None) -> bool:
        """`check`, never raising: a check that fails says the device is not there."""
        try:
            return self.check(watch)
        except (OSError, ValueError) as exc:
            log.debug("presence check %s failed: %s", self, exc)
            return False


class TrackedPresence(Presence, Generic[T]):
    """A presence read from a tracker the watch holds (one per `tracker_key`: several devices share it)."""

    tracked: ClassVar[bool] = True

    @property
    @abstractmethod
    def tracker_key(self) -> Hashable:
        """Which tracker: devices with equal keys share one."""

    @abstractmethod
    def start_tracker(self, on_change: OnChange | None, timeout_s: float) -> T:
        """A new tracker for this key, running."""


@dataclass(frozen=True)
class AlwaysPresent(Presence):
    """The device is this host: nothing to check."""

    def check(self, watch: PresenceWatch | None) -> bool:
        return True


@dataclass(frozen=True)
class ServerBanner(Presence):
    """A server that speaks first: present while host:port answers with `banner` (sshd: `SSH-`)."""

    host: str
    port: int
    banner: bytes

    def check(self, watch: PresenceWatch | None) -> bool:
        with socket.create_connection((self.host, self.port), timeout=PROBE_TIMEOUT_SEC) as sock:
            sock.settimeout(PROBE_TIMEOUT_SEC)
            return sock.recv(len(self.banner)).startswith(self.banner)


class PresenceWatch:
    """The trackers of the tracked presences a worker keeps (see the module docstring). `on_change` is
    called from a tracker's thread when what it follows changes; `close()` stops every tracker. Used from one
    thread (the worker's probe rounds)."""

    def __init__(self, on_change: OnChange | None = None, timeout_s: float = PROBE_TIMEOUT_SEC) -> None:
        self.timeout_s = timeout_s
        self._on_change = on_change
        self._trackers: dict[Hashable, Tracker] = {}

    def tracker(self, presence: TrackedPresence[T]) -> T:
        """The presence's tracker, started on first use."""
        key = presence.tracker_key
        if key not in self._trackers:
            self._trackers[key] = presence.start_tracker(self._on_change, self.timeout_s)
        return cast(T, self._trackers[key])

    def keep(self, presences: Iterable[Presence]) -> None:
        """Start a tracker for each tracked presence given, stop every other."""
        wanted = {p.tracker_key: p for p in presences if isinstance(p, TrackedPresence)}
        for key in set(self._trackers) - set(wanted):
            self._trackers.pop(key).stop()
        for presence in wanted.values():
            self.tracker(presence)

    def refresh(self) -> None:
        """One correction per tracker (older adb servers do not push every change: adb/track.py)."""
        for tracker in list(self._trackers.values()):
            tracker.refresh()

    def keys(self) -> set[Hashable]:
        """The keys of the trackers running."""
        return set(self._trackers)

    def close(self) -> None:
        self.keep(())
