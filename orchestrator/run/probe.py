"""Reachability and facts of inventory devices, probed in parallel."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from device_agents import DeviceSpec, create_agent
from orchestrator.errors import EtfarmError


def address(spec: DeviceSpec) -> str:
    s = spec.settings
    if spec.transport == "ssh":
        user = f"{s['user']}@" if s.get("user") else ""
        return f"{user}{s.get('host')}:{s.get('port', 22)}"
    if spec.transport == "adb":
        return f"{s.get('serial')} via adb {s.get('adb_host', '127.0.0.1')}:{s.get('adb_port', 5037)}"
    return "this host"


def probe(spec: DeviceSpec) -> dict[str, Any]:
    """Connect, describe, close. Never raises: errors become `reachable: false` + the message."""
    entry: dict[str, Any] = {"name": spec.name, "transport": spec.transport, "target": spec.target,
                             "address": address(spec), "workdir": spec.workdir, "reachable": False,
                             "error": None, "facts": {}}
    try:
        with create_agent(spec) as agent:
            entry["facts"] = agent.describe()
            entry["reachable"] = True
    except EtfarmError as exc:
        entry["error"] = str(exc)
    except Exception as exc:  # transport libraries raise their own types; report, don't crash the listing
        entry["error"] = f"{type(exc).__name__}: {exc}"
    return entry


def probe_all(specs: list[DeviceSpec]) -> list[dict[str, Any]]:
    if not specs:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(specs))) as pool:
        return list(pool.map(probe, specs))
