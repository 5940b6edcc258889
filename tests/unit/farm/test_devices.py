"""Worker device offers: inventory re-read on change, the devices' presence asked, adb trackers kept.

Fakes for the probe; real sockets for adb, with an in-process fake adb server (tests/helpers/fake_adb.py).
The presence checks themselves: tests/unit/device_agents/test_presence.py, test_adb_track.py.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from device_agents import DeviceSpec
from device_agents.adb.settings import AdbSettings
from device_agents.adb.track import AdbListing
from orchestrator.base.errors import ConfigError
from orchestrator.config import load_inventory
from orchestrator.farm.devices import InventoryWatch
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


def test_trackers_follow_the_servers_the_inventory_names(adb_servers, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    one, two = adb_servers({"s1": "device"}), adb_servers({"s2": "device"})

    def adb(name: str, serial: str, port: int) -> DeviceSpec:
        return DeviceSpec(name, "host", f"/data/local/tmp/{name}",
                          settings=AdbSettings(serial, adb_host="127.0.0.1", adb_port=port))

    config = write_inventory(tmp_path / "devices.yaml", [adb("p1", "s1", one.port), adb("p2", "s2", one.port)])
    changed = threading.Event()
    watch = InventoryWatch(config, _load, on_change=changed.set)
    try:
        assert watch.presence.keys() == {("adb", "127.0.0.1", one.port)}
        first = watch.presence.tracker(AdbListing(("127.0.0.1", one.port), "s1"))
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
        assert watch.presence.keys() == {("adb", "127.0.0.1", two.port)}
        assert not first.alive
    finally:
        watch.close()
    assert watch.presence.keys() == set()


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


