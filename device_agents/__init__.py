"""Device agents: one per transport, all driving the workflow in base.DeviceAgent."""

from __future__ import annotations

from importlib import import_module

from device_agents.base import DeviceAgent, DeviceSpec, ExecResult, StageReport

# transport name -> "module:class"; imported only when a device of that transport is used,
# so `etfarm devices` on a local-only inventory never imports paramiko or adbutils.
TRANSPORTS: dict[str, str] = {
    "local": "device_agents.local:LocalAgent",
    "ssh": "device_agents.ssh:SSHAgent",
    "adb": "device_agents.adb:AdbAgent",
}


def create_agent(spec: DeviceSpec) -> DeviceAgent:
    module_name, _, class_name = TRANSPORTS[spec.transport].partition(":")
    agent_class = getattr(import_module(module_name), class_name)
    return agent_class(spec)


__all__ = ["DeviceAgent", "DeviceSpec", "ExecResult", "StageReport", "TRANSPORTS", "create_agent"]
