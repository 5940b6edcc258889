"""Reachability, health and facts of inventory devices, probed in parallel.

Health: `ok` (answered at once), `degraded` (answered, but only after retries of transport
faults or slower than DEGRADED_AFTER_SEC), `offline` (no answer within the retry budget, or a
refusal such as an unknown host key). The probe connects and describes with the same retries
as a job (run/device/retry.py).

Beside the inventory's devices, the adb devices that an adb server sees (adb's default server and
every server the inventory names) and the inventory does not name are listed as `adb:SERIAL`, the
name `--devices` takes for them (`in_inventory: false`), probed alike when they are ready.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from device_agents import DeviceSpec, create_agent
from device_agents.adb.discover import adb_device_spec
from device_agents.facts import DeviceFacts
from orchestrator.base.errors import EtfarmError
from orchestrator.base.names import ADB_NAME_PREFIX
from orchestrator.config import adb_spec
from orchestrator.results.model import Attempt
from orchestrator.run.device.retry import DEFAULT_POLICY, RetryPolicy, with_retries

if TYPE_CHECKING:
    from device_agents.adb.discover import SeenDevice

# A healthy board answers connect + describe in well under this.
DEGRADED_AFTER_SEC = 5.0


def listing(spec: DeviceSpec, *, checked: bool = False) -> dict[str, Any]:
    """The device as `etfarm devices` lists it before any answer: not contacted (`--no-check`), or
    about to be (`checked`: offline until it answers)."""
    entry: dict[str, Any] = {"name": spec.name, "transport": spec.transport, "target": spec.target or None,
                             "address": spec.settings.address, "workdir": spec.workdir,
                             "description": spec.description,
                             "in_inventory": not spec.name.startswith(ADB_NAME_PREFIX),
                             "reachable": False if checked else None, "health": "offline" if checked else None,
                             "error": None, "attempts": []}
    if checked:
        entry["elapsed_s"] = None
    entry["facts"] = DeviceFacts()
    return entry


def entry_json(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry as `--json` prints it: the facts in their JSON form, in the order the device told them."""
    return {**entry, "facts": entry["facts"].to_json(sort_keys=False)}


def _describe(spec: DeviceSpec) -> DeviceFacts:
    with create_agent(spec) as agent:
        return agent.describe()


def health(reachable: bool, attempts: int, elapsed_s: float) -> str:
    if not reachable:
        return "offline"
    return "degraded" if attempts or elapsed_s > DEGRADED_AFTER_SEC else "ok"


def probe(spec: DeviceSpec, policy: RetryPolicy = DEFAULT_POLICY) -> dict[str, Any]:
    """Connect, describe, close, with retries. Never raises: errors become `reachable: false`,
    `health: offline` and the message; every failed try is listed under `attempts`."""
    entry = listing(spec, checked=True)
    attempts: list[Attempt] = []
    started = time.monotonic()
    try:
        entry["facts"] = with_retries("connect and describe", lambda: _describe(spec), record=attempts.append,
                                      policy=policy)
        entry["reachable"] = True
    except EtfarmError as exc:
        entry["error"] = str(exc)
    except Exception as exc:  # transport libraries raise their own types; report, don't crash the listing
        entry["error"] = f"{type(exc).__name__}: {exc}"
    elapsed = time.monotonic() - started
    failures = len(attempts) - (0 if entry["reachable"] else 1)
    entry.update(health=health(entry["reachable"], failures, elapsed), elapsed_s=round(elapsed, 2),
                 attempts=[a.to_dict() for a in attempts])
    return entry


def probe_all(specs: list[DeviceSpec], policy: RetryPolicy = DEFAULT_POLICY) -> list[dict[str, Any]]:
    if not specs:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(specs))) as pool:
        return list(pool.map(lambda spec: probe(spec, policy), specs))


def unnamed_entry(seen: SeenDevice, checked: bool, policy: RetryPolicy = DEFAULT_POLICY) -> dict[str, Any]:
    """An adb device the inventory does not name, as `etfarm devices` lists it: `adb:SERIAL`, its target from its
    ABI, probed like an inventory device when it is ready and `checked`."""
    spec = adb_device_spec(seen.serial, "", seen.server)
    if seen.state != "device":
        entry = listing(spec, checked=True)
        entry["error"] = f"adb state {seen.state}"
        return entry
    if not checked:
        return listing(spec)
    try:
        spec = adb_spec(seen.name, seen.server)
    except EtfarmError as exc:
        entry = listing(spec, checked=True)
        entry["error"] = str(exc)
        return entry
    return probe(spec, policy)
