"""What a worker can offer: its inventory's devices, each probed, as `dev-<name>` resources.

A device is offered (resource 1) only while it answers, so the scheduler never sends a task to an
unplugged phone or a board that is down; 0 keeps the name known with nothing to give. Each
transport's settings say how its devices can be seen (`TransportSettings.presence`,
device_agents/spec.py); the checks, chosen to cost milliseconds and never start anything:
- `AlwaysPresent` (local): always there;
- `ServerBanner` (ssh): probed each round: a TCP connection to host:port that answers with the
  banner (`SSH-`) within PROBE_TIMEOUT_SEC (a stopped sshd still accepts connections in the
  kernel's backlog but never speaks);
- `AdbListing` (adb): tracked, not polled: the InventoryWatch holds one `AdbTracker` (adb_track.py,
  `host:track-devices`) per adb server its inventory names, and the device is online while that
  server lists its serial in state `device`. The tracker calls `on_change` the moment its list
  changes, so the worker publishes a plug or unplug at once instead of at the next round; a
  server that is gone makes its devices offline. Each full round also refreshes every tracker
  with one `host:devices` per server, for the changes older adb servers do not push (a device
  turning `offline` while listed). The adb server stays on 127.0.0.1 of the host.
The inventory file is re-read when its modification time changes, so a device added to it while
the worker runs is offered at the next round; trackers of servers no longer named are stopped.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from device_agents import DeviceSpec
from device_agents.spec import AdbListing, ServerBanner
from orchestrator.errors import EtfarmError
from orchestrator.farm import resource_name
from orchestrator.farm.adb_track import AdbTrackers, adb_devices

PROBE_TIMEOUT_SEC = 2.0

log = logging.getLogger(__name__)


def probe(spec: DeviceSpec, adb: AdbTrackers | None = None) -> bool:
    """True when the device answers now (see the module docstring); never raises.

    An adb device is looked up in `adb`'s tracker of its server (waiting up to PROBE_TIMEOUT_SEC for
    a new tracker's first list); without trackers, one `host:devices` request is made.
    """
    presence = spec.settings.presence
    try:
        if isinstance(presence, ServerBanner):
            return _banner(presence)
        if isinstance(presence, AdbListing):
            host, port = presence.server
            if adb is not None:
                return presence.serial in adb.get(host, port).serials(wait_s=PROBE_TIMEOUT_SEC)
            return presence.serial in adb_devices(port, host, PROBE_TIMEOUT_SEC)
        return True
    except (OSError, ValueError) as exc:
        log.debug("probe of %s failed: %s", spec.name, exc)
        return False


def tracked(spec: DeviceSpec) -> AdbListing | None:
    """How an adb server's tracker sees the device, when one does."""
    presence = spec.settings.presence
    return presence if isinstance(presence, AdbListing) else None


def _banner(presence: ServerBanner) -> bool:
    with socket.create_connection((presence.host, presence.port), timeout=PROBE_TIMEOUT_SEC) as sock:
        sock.settimeout(PROBE_TIMEOUT_SEC)
        return sock.recv(len(presence.banner)).startswith(presence.banner)


@dataclass(frozen=True)
class Offer:
    """One probe round: every device the worker knows, with its resource value."""

    specs: dict[str, DeviceSpec]
    online: dict[str, bool]

    def resources(self) -> dict[str, float]:
        return {resource_name(name): 1.0 if up else 0.0 for name, up in self.online.items()}


class InventoryWatch:
    """The worker's inventory, re-read when the file changes; `round()` checks every device.

    Owns the adb trackers (one per adb server the inventory names); `on_change` is called from a
    tracker's thread when an adb server's device list changes (the worker wakes its loop with it).
    `close()` stops the trackers.
    """

    def __init__(self, path: Path | None, load: Callable[[Path | None], dict[str, DeviceSpec]],
                 probe_device: Callable[[DeviceSpec], bool] | None = None,
                 on_change: Callable[[], None] | None = None) -> None:
        self.path = path
        self._load = load
        self.adb = AdbTrackers(on_change, timeout_s=PROBE_TIMEOUT_SEC)
        self._probe = probe_device or (lambda spec: probe(spec, self.adb))
        self._mtime: float | None = None
        self._last: dict[str, bool] = {}
        self.specs: dict[str, DeviceSpec] = {}
        self.retired: set[str] = set()  # names once offered and since removed from the file: kept at 0
        self.reload()

    def reload(self) -> bool:
        """Re-read the file if it changed; a broken file keeps the previous inventory (and says so)."""
        mtime = self.path.stat().st_mtime if self.path is not None and self.path.exists() else None
        if self.specs and mtime == self._mtime:
            return False
        try:
            specs = self._load(self.path)
        except EtfarmError as exc:
            if not self.specs:
                raise
            log.warning("inventory not reloaded, keeping the previous one: %s", exc)
            self._mtime = mtime
            return False
        self.retired |= set(self.specs) - set(specs)
        self.retired -= set(specs)
        self.specs, self._mtime = specs, mtime
        self.adb.keep(listing.server for spec in specs.values() if (listing := tracked(spec)) is not None)
        return True

    def spec(self, name: str) -> DeviceSpec | None:
        return self.specs.get(name)

    def round(self, tracked_only: bool = False) -> Offer:
        """Check every device. A full round also corrects each adb tracker with one `host:devices`
        (AdbTracker.refresh: older adb servers do not report every change to trackers).
        `tracked_only`: only adb devices, from their trackers' lists (no network I/O); the others
        keep the previous round's answer - what the worker does when a tracker wakes it, so that
        an ssh host timing out cannot delay an adb change."""
        self.reload()
        if not tracked_only:
            self.adb.refresh()
        online = {name: self._last[name] if tracked_only and tracked(spec) is None and name in self._last
                  else self._probe(spec) for name, spec in self.specs.items()}
        self._last = dict(online)
        online.update({name: False for name in self.retired})
        return Offer(dict(self.specs), online)

    def close(self) -> None:
        self.adb.close()
