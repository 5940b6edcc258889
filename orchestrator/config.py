"""The device inventory (DESIGN.md §3): load, validate, and name the file and key on error.

`local` (the host itself) always exists unless the file defines its own `local`.
The file comes from --config, else $ETFARM_CONFIG, else
$XDG_CONFIG_HOME/etfarm/devices.yaml when present; with none, only `local` exists.
"""

from __future__ import annotations

import getpass
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from device_agents.base import DeviceSpec
from orchestrator.artifacts.targets import TARGETS
from orchestrator.cache import cache_dir
from orchestrator.errors import ConfigError, UsageError
from orchestrator.yamlfile import load_yaml, shorten

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

# Per transport: key -> (type, required, default). Unknown keys are errors, so typos surface.
_COMMON_KEYS = {"transport", "target", "workdir", "exec_prefix", "threads", "cpus", "description"}
# `cpus:` is taskset's cpu list: 3, 0-3, 0,2,4-7 (an integer alone is one cpu).
_CPU_LIST = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
_TRANSPORT_KEYS: dict[str, dict[str, tuple[type, bool, Any]]] = {
    "local": {},
    "ssh": {
        "host": (str, True, None),
        "port": (int, False, 22),
        "user": (str, False, None),
        "key": (str, True, None),
        "known_hosts": (str, False, "~/.config/etfarm/known_hosts"),
        "connect_timeout": (float, False, 15.0),
    },
    "adb": {
        "serial": (str, True, None),
        "adb_host": (str, False, "127.0.0.1"),
        "adb_port": (int, False, 5037),
    },
}
# Per device and per user (ssh): two users or two inventory names never share a workdir by default.
_DEFAULT_WORKDIR = {"ssh": "/tmp/etfarm-{user}/{device}", "adb": "/data/local/tmp/etfarm"}


@dataclass(frozen=True)
class Inventory:
    devices: Mapping[str, DeviceSpec]
    path: Path | None

    def select(self, names: str | list[str]) -> list[DeviceSpec]:
        """Devices named in a comma-separated list, in order; unknown names are a usage error."""
        wanted = [n.strip() for n in (names.split(",") if isinstance(names, str) else names) if n.strip()]
        if not wanted:
            raise UsageError("no devices given; use --devices NAME[,NAME...] (try 'local')")
        unknown = [n for n in wanted if n not in self.devices]
        if unknown:
            where = f" in {self.path}" if self.path else " (no device inventory file; see --config)"
            raise UsageError(f"unknown device {', '.join(map(repr, unknown))}{where}; known: {', '.join(self.devices)}")
        return [self.devices[n] for n in dict.fromkeys(wanted)]


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
    return DeviceSpec(name="local", transport="local", target="host", workdir=str(cache_dir("devices") / "local"))


def _parse_file(path: Path) -> dict[str, DeviceSpec]:
    if not path.is_file():
        raise ConfigError(path, None, "no such file")
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
    if not isinstance(entry, dict):
        raise ConfigError(path, where, f"expected a mapping of settings, got {_describe(entry)}")
    transport = entry.get("transport")
    if transport not in _TRANSPORT_KEYS:
        raise ConfigError(path, f"{where}.transport", f"expected one of {', '.join(_TRANSPORT_KEYS)}, got {_describe(transport)}")
    allowed = _TRANSPORT_KEYS[transport]
    for key in entry:
        if key not in _COMMON_KEYS and key not in allowed:
            raise ConfigError(path, f"{where}.{shorten(str(key), 40)}", f"unknown key for a {transport} device")
    target = entry.get("target", "host" if transport == "local" else None)
    if target not in TARGETS:
        raise ConfigError(path, f"{where}.target", f"expected one of {', '.join(TARGETS)}, got {_describe(target)}")
    settings = {key: _typed(path, f"{where}.{key}", entry, key, *spec) for key, spec in allowed.items()}
    for key in ("connect_timeout",):  # a deadline of 0 or less would never let a device answer
        if key in settings and settings[key] is not None and settings[key] <= 0:
            raise ConfigError(path, f"{where}.{key}", f"expected a number of seconds > 0, got {_describe(entry.get(key))}")
    if "threads" in entry:
        settings["threads"] = _typed(path, f"{where}.threads", entry, "threads", int, False, 0)
    if entry.get("cpus") is not None:
        cpus = entry["cpus"]
        text = str(cpus) if isinstance(cpus, int) and not isinstance(cpus, bool) else cpus
        if not isinstance(text, str) or not _CPU_LIST.match(text.replace(" ", "")):
            raise ConfigError(path, f"{where}.cpus", f"expected a cpu list like 2, \"0-3\" or \"0,2,4-7\", got {_describe(cpus)}")
        settings["cpus"] = text.replace(" ", "")
    default = _DEFAULT_WORKDIR.get(transport, "").format(user=settings.get("user") or getpass.getuser(), device=name)
    workdir = entry.get("workdir", default or str(cache_dir("devices") / name))
    if not isinstance(workdir, str) or not workdir.startswith(("/", "~")):
        raise ConfigError(path, f"{where}.workdir", f"expected an absolute path, got {_describe(workdir)}")
    if transport == "local":
        workdir = str(Path(workdir).expanduser())
    return DeviceSpec(
        name=name, transport=transport, target=target, workdir=workdir,
        exec_prefix=_exec_prefix(path, f"{where}.exec_prefix", entry.get("exec_prefix")),
        settings=settings, source=str(path),
    )


def _typed(path: Path, where: str, entry: dict[str, Any], key: str, kind: type, required: bool, default: Any) -> Any:
    if key not in entry or entry[key] is None:
        if required:
            raise ConfigError(path, where, "missing (required)")
        return default
    value = entry[key]
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ConfigError(
            path,
            where,
            f"expected {'an integer' if kind is int else 'a number' if kind is float else 'a string'}, got {_describe(value)}",
        )
    if key.endswith("port") and not 0 < value < 65536:
        raise ConfigError(path, where, f"port out of range: {value}")
    return value


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
    raise ConfigError(path, where, f"expected a string or a list of strings, got {_describe(value)}")


def _describe(value: Any) -> str:
    return "nothing" if value is None else f"{type(value).__name__} {shorten(repr(value))}"
