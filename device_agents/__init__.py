"""Device agents: one per transport, all driving the workflow in base.DeviceAgent.

`TRANSPORTS` is the one place a transport's name maps to its code: its settings type (parsed from
the inventory, device_agents/spec.py) and its agent. Everything is imported only when a device of
that transport is used, so `etfarm devices` on a local-only inventory never imports paramiko or
adbutils, and reading an inventory never does (settings modules import no transport library).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from typing import Any

from device_agents.base import DeviceAgent, ExecResult, StageReport
from device_agents.spec import DeviceSpec, TransportSettings, TrustedKey
from orchestrator.base.errors import UsageError


@dataclass(frozen=True)
class Transport:
    """Where a transport's parts live, as "module:attribute", imported on first use."""

    settings: str  # its TransportSettings: no transport library (the inventory parser loads it)
    agent: str  # its DeviceAgent
    trust: str | None = None  # records a device's host key on purpose, for transports that have one


TRANSPORTS: dict[str, Transport] = {
    "local": Transport("device_agents.spec:LocalSettings", "device_agents.local:LocalAgent"),
    "ssh": Transport("device_agents.ssh.settings:SshSettings", "device_agents.ssh.agent:SSHAgent",
                     trust="device_agents.ssh.trust:trust_host_key"),
    "adb": Transport("device_agents.adb.settings:AdbSettings", "device_agents.adb.agent:AdbAgent"),
}


def _load(where: str) -> Any:
    module_name, _, name = where.partition(":")
    return getattr(import_module(module_name), name)


def settings_type(transport: str) -> type[TransportSettings]:
    """The settings type of a transport named in TRANSPORTS."""
    return _load(TRANSPORTS[transport].settings)


def create_agent(spec: DeviceSpec) -> DeviceAgent:
    return _load(TRANSPORTS[spec.transport].agent)(spec)


def trust_host_key(spec: DeviceSpec) -> TrustedKey:
    """Record the device's current host key as trusted; a UsageError for a transport without host keys."""
    trust = TRANSPORTS[spec.transport].trust
    if trust is None:
        able = " or ".join(name for name, transport in TRANSPORTS.items() if transport.trust)
        raise UsageError(f"device {spec.name!r} uses {spec.transport}; only {able} devices have host keys to trust")
    return _load(trust)(spec)


__all__ = ["DeviceAgent", "DeviceSpec", "ExecResult", "StageReport", "TRANSPORTS", "Transport", "TransportSettings",
           "TrustedKey", "create_agent", "settings_type", "trust_host_key"]
