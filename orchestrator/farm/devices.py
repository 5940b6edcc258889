"""What a worker can offer: its inventory's devices, each checked, as `dev-<name>` resources.

A device is offered (resource 1) only while it is there, so the scheduler never sends a task to an
unplugged phone or a board that is down; 0 keeps the name known with nothing to give. Whether a
device is there is its transport's answer (`TransportSettings.presence`, device_agents/presence.py:
ssh by the server's banner each round, adb tracked by its server, local always); this module only
asks. Tracked presences (adb) tell their `PresenceWatch` the moment their device list changes and
`on_change` wakes the worker, which then publishes a plug or unplug at once instead of at the next
round; each full round also refreshes every tracker once, for the changes older adb servers do not
push. The inventory file is re-read when its modification time changes, so a device added to it
while the worker runs is offered at the next round; trackers no longer needed are stopped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from device_agents import DeviceSpec
from device_agents.presence import PresenceWatch
from orchestrator.base.errors import EtfarmError
from orchestrator.farm import resource_name

log = logging.getLogger(__name__)


def probe(spec: DeviceSpec, watch: PresenceWatch | None = None) -> bool:
    """True when the device is there now; never raises. `watch`: where tracked presences are read
    (without one, an adb device is looked up with one `host:devices` request)."""
    return spec.settings.presence.present(watch)


def tracked(spec: DeviceSpec) -> bool:
    """Whether the device's presence is tracked (its changes pushed), not checked each round."""
    return spec.settings.presence.tracked


@dataclass(frozen=True)
class Offer:
    """One probe round: every device the worker knows, with its resource value."""

    specs: dict[str, DeviceSpec]
    online: dict[str, bool]

    def resources(self) -> dict[str, float]:
        return {resource_name(name): 1.0 if up else 0.0 for name, up in self.online.items()}


class InventoryWatch:
    """The worker's inventory, re-read when the file changes; `round()` checks every device.

    Owns the presence trackers (one per adb server the inventory names); `on_change` is called from a
    tracker's thread when what it follows changes (the worker wakes its loop with it). `close()` stops them.
    """

    def __init__(self, path: Path | None, load: Callable[[Path | None], dict[str, DeviceSpec]],
                 probe_device: Callable[[DeviceSpec], bool] | None = None,
                 on_change: Callable[[], None] | None = None) -> None:
        self.path = path
        self._load = load
        self.presence = PresenceWatch(on_change)
        self._probe = probe_device or (lambda spec: probe(spec, self.presence))
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
        self.presence.keep(spec.settings.presence for spec in specs.values())
        return True

    def spec(self, name: str) -> DeviceSpec | None:
        return self.specs.get(name)

    def round(self, tracked_only: bool = False) -> Offer:
        """Check every device. A full round also refreshes each tracker once (an adb server's: one
        `host:devices`, since older adb servers do not report every change to trackers).
        `tracked_only`: only tracked devices (adb), from their trackers (no network I/O); the others
        keep the previous round's answer - what the worker does when a tracker wakes it, so that
        an ssh host timing out cannot delay an adb change."""
        self.reload()
        if not tracked_only:
            self.presence.refresh()
        online = {name: self._last[name] if tracked_only and not tracked(spec) and name in self._last
                  else self._probe(spec) for name, spec in self.specs.items()}
        self._last = dict(online)
        online.update({name: False for name in self.retired})
        return Offer(dict(self.specs), online)

    def close(self) -> None:
        self.presence.close()
