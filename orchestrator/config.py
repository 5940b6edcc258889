"""The device inventory (docs/architecture.md, "Device inventory"): load, validate, and name the file and key on error.

`local` (the host itself) always exists unless the file defines its own `local`.
The file comes from --config, else $ETFARM_CONFIG, else
$XDG_CONFIG_HOME/etfarm/devices.yaml when present; with none, only `local` exists.

This module reads the keys every device has; each transport's own keys are read by its settings
type, which the transport registry names (device_agents.TRANSPORTS): one parse, one set of errors.

`--devices adb:SERIAL` names a phone the inventory does not list: its spec has an adb device's
defaults and the target its ABI runs (`ro.product.cpu.abi`, asked of the adb server adb's own
client would use; device_agents/adb/discover.py).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from device_agents import TRANSPORTS, DeviceSpec, settings_type
from device_agents.adb.discover import adb_device_spec, default_server, device_abi
from device_agents.keys import InventoryEntry, describe
from orchestrator.artifacts.targets import ANDROID_ABI_TARGETS, TARGETS, target_for_abi
from orchestrator.base.cache import cache_dir
from orchestrator.base.errors import ConfigError, UsageError
from orchestrator.base.names import ADB_NAME_PREFIX, ADB_SERIAL
from orchestrator.base.yamlfile import load_yaml, shorten

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
NAME_MAX = 64
THREADS_MAX = 1024  # as JobOptions' cpu_threads (results/limits.py, a layer above this one)
CPU_MAX = 8191  # Linux's largest NR_CPUS
DESCRIPTION_MAX = 200
# Keys of every device; each transport adds its own (TransportSettings.KEYS). Unknown keys are
# errors, so typos surface.
_COMMON_KEYS = {"transport", "target", "workdir", "exec_prefix", "threads", "cpus", "runtime", "description",
                "emulated"}
# `cpus:` is taskset's cpu list: 3, 0-3, 0,2,4-7 (an integer alone is one cpu), or a cluster by name.
_CPU_LIST = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
CPU_CLUSTERS = ("big", "prime")  # resolved on the device from its own facts (orchestrator/run/device/affinity.py)


@dataclass(frozen=True)
class Inventory:
    devices: Mapping[str, DeviceSpec]
    path: Path | None

    def select(self, names: str | list[str]) -> list[DeviceSpec]:
        """Devices named in a comma-separated list, in order; unknown names are a usage error."""
        wanted = [n.strip() for n in (names.split(",") if isinstance(names, str) else names) if n.strip()]
        if not wanted:
            raise UsageError("no devices given; use --devices NAME[,NAME...] (try 'local')")
        adb = {n: adb_spec(n) for n in dict.fromkeys(wanted) if n.startswith(ADB_NAME_PREFIX) and n not in self.devices}
        unknown = [n for n in wanted if n not in self.devices and n not in adb]
        if unknown:
            where = f" in {self.path}" if self.path else " (no device inventory file; see --config)"
            raise UsageError(f"unknown device {', '.join(map(repr, unknown))}{where}; known: {', '.join(self.devices)}")
        selected = [self.devices[n] if n in self.devices else adb[n] for n in dict.fromkeys(wanted)]
        for spec in selected:  # a garbage ssh key is the user's file: exit 2 now, not a device failing later
            spec.settings.check_host_files(spec.name, spec.source)
        return selected


def adb_spec(name: str, server: tuple[str, int] | None = None) -> DeviceSpec:
    """`adb:SERIAL`: a phone the adb server (adb's default one unless given) sees, with the target its ABI runs;
    UsageError (one line) when the server does not see it ready, or no etfarm target runs that ABI."""
    serial = name[len(ADB_NAME_PREFIX):]
    if not serial:
        raise UsageError(f"--devices {name}: give the device's serial after {ADB_NAME_PREFIX} (see `adb devices`)")
    if not ADB_SERIAL.match(serial):
        raise UsageError(f"--devices {name}: not an adb serial (letters, digits, '.', '_', '-', ':'; see `adb devices`)")
    server = server or default_server()
    abi = device_abi(server, serial)
    target = target_for_abi(abi)
    if target is None:
        raise UsageError(f"--devices {name}: the device's ABI is {abi or 'unknown'} (ro.product.cpu.abi); etfarm's "
                         f"runners run on {', '.join(ANDROID_ABI_TARGETS)} only")
    return adb_device_spec(serial, target, server)


def default_config_path() -> Path | None:
    env = os.environ.get("ETFARM_CONFIG")
    if env:
        return Path(env).expanduser()
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "etfarm" / "devices.yaml"
    return xdg if xdg.is_file() else None


def load_inventory(path: str | Path | None = None) -> Inventory:
    """Read and validate the inventory; `local` is added unless the file defines it."""
    config_path = Path(path).expanduser() if path else default_config_path()
    devices: dict[str, DeviceSpec] = {}
    if config_path is not None:
        devices = _parse_file(config_path)
    if "local" not in devices:
        devices = {"local": builtin_local(), **devices}
    return Inventory(devices=devices, path=config_path)


def builtin_local() -> DeviceSpec:
    return DeviceSpec(name="local", target="host", workdir=str(cache_dir("devices") / "local"))


def _parse_file(path: Path) -> dict[str, DeviceSpec]:
    data = load_yaml(path)
    if not isinstance(data, dict) or "devices" not in data:
        raise ConfigError(path, "devices", "missing: the file must have a top-level 'devices:' mapping")
    unknown_top = set(data) - {"devices"}
    if unknown_top:
        first = shorten(str(sorted(map(str, unknown_top))[0]), 40)
        raise ConfigError(path, first, "unknown top-level key (expected only 'devices')")
    entries = data["devices"]
    if not isinstance(entries, dict) or not entries:
        raise ConfigError(path, "devices", "must be a non-empty mapping of device name to settings")
    return {str(name): _parse_device(path, str(name), entry) for name, entry in entries.items()}


def _parse_device(path: Path, name: str, entry: Any) -> DeviceSpec:
    where = f"devices.{shorten(name, 40)}"
    if not _NAME.match(name):
        raise ConfigError(path, where, "device names must be letters, digits, '.', '_' or '-'")
    if len(name) > NAME_MAX:  # a name becomes file names: locks, run directories
        raise ConfigError(path, where, f"a device name is at most {NAME_MAX} characters, this one {len(name)}")
    if not isinstance(entry, dict):
        raise ConfigError(path, where, f"expected a mapping of settings, got {describe(entry)}")
    transport = entry.get("transport")
    if not isinstance(transport, str) or transport not in TRANSPORTS:
        raise ConfigError(path, f"{where}.transport", f"expected one of {', '.join(TRANSPORTS)}, got {describe(transport)}")
    kind = settings_type(transport)
    for key in entry:
        if key not in _COMMON_KEYS and key not in kind.KEYS:
            raise ConfigError(path, f"{where}.{shorten(str(key), 40)}", f"unknown key for a {transport} device")
    target = entry.get("target", kind.DEFAULT_TARGET)
    if not isinstance(target, str) or target not in TARGETS:
        raise ConfigError(path, f"{where}.target", f"expected one of {', '.join(TARGETS)}, got {describe(target)}")
    keys = InventoryEntry(path, name, entry)
    settings = kind.parse(keys)
    threads = keys.integer("threads", 0, 0, THREADS_MAX)
    cpus = _cpus(keys)
    runtime = _runtime(keys)
    workdir = entry.get("workdir", settings.default_workdir(name))
    if not isinstance(workdir, str) or not workdir.startswith(("/", "~")) or any(ord(c) < 0x20 for c in workdir):
        raise ConfigError(path, f"{where}.workdir", f"expected an absolute path (no control characters), got "
                                                  f"{describe(workdir)}")
    return DeviceSpec(
        name=name, target=target, workdir=settings.workdir(workdir),
        exec_prefix=_exec_prefix(path, f"{where}.exec_prefix", entry.get("exec_prefix")),
        settings=settings, source=str(path), threads=threads, cpus=cpus, runtime=runtime,
        description=_description(keys), emulated=_emulated(keys),
    )


def _cpus(keys: InventoryEntry) -> str | None:
    cpus = keys.given("cpus")
    if cpus is None:
        return None
    text = str(cpus) if isinstance(cpus, int) and not isinstance(cpus, bool) else cpus
    if isinstance(text, str) and text.strip() in CPU_CLUSTERS:
        return text.strip()
    if not isinstance(text, str) or not _CPU_LIST.match(text.replace(" ", "")) \
            or any(int(n) > CPU_MAX for n in re.findall(r"\d+", text)):
        raise keys.error("cpus", f"expected a cpu list like 2, \"0-3\" or \"0,2,4-7\" (cpus 0 to {CPU_MAX}), "
                                 f"or {' or '.join(CPU_CLUSTERS)}, "
                                 f"got {describe(cpus)}")
    return text.replace(" ", "")


def _description(keys: InventoryEntry) -> str:
    text = keys.text("description") or ""
    if len(text) > DESCRIPTION_MAX or any(ord(c) < 0x20 for c in text):
        raise keys.error("description", f"expected one line of at most {DESCRIPTION_MAX} characters, got {describe(text)}")
    return text


def _emulated(keys: InventoryEntry) -> bool:
    """`emulated: true`: the device is an emulation (`etfarm devices emulate`); reports mark its timings so."""
    value = keys.given("emulated")
    if value is not None and not isinstance(value, bool):
        raise keys.error("emulated", f"expected true or false, got {describe(value)}")
    return bool(value)


def _runtime(keys: InventoryEntry) -> str | None:
    """`runtime: PATH`, an ExecuTorch CMake install prefix: `~` expanded, relative to the inventory file's folder.
    Whether it is one is checked when the runner is built (a bad prefix fails only the devices naming it)."""
    text = keys.text("runtime")
    if text is None:
        return None
    if not text.strip():
        raise keys.error("runtime", "expected the path of an ExecuTorch CMake install prefix, got an empty string")
    path = Path(text).expanduser()
    return str(path if path.is_absolute() else (keys.path.parent / path).resolve())


def _exec_prefix(path: Path, where: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        try:
            return tuple(shlex.split(value))
        except ValueError as exc:
            raise ConfigError(path, where, f"cannot split into words ({exc})") from None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ConfigError(path, where, f"expected a string or a list of strings, got {describe(value)}")
