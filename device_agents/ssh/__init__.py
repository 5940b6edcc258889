"""The ssh transport: settings (no paramiko), the agent and its parts, trusting a host key.

Names are imported on first use (orchestrator/base/lazy.py), so reading an inventory with ssh devices
never imports paramiko; `from device_agents.ssh import SSHAgent` does.
"""

from orchestrator.base.lazy import lazy_api

_API = {
    "SSHAgent": "agent",
    "SshConnection": "agent",
    "SshSettings": "settings",
    "known_hosts_name": "settings",
    "host_key_fingerprint": "connect",
    "trust_host_key": "trust",
}
__all__ = sorted(_API)
__getattr__ = lazy_api(__name__, _API)
