"""`etfarm devices trust NAME`: the one place a host key becomes trusted, on the user's explicit request."""

from __future__ import annotations

import logging
import socket

import paramiko

from device_agents.spec import DeviceSpec, TrustedKey
from device_agents.ssh.connect import host_key_fingerprint
from device_agents.ssh.known_hosts import load_known_hosts
from device_agents.ssh.settings import SshSettings, ssh_settings
from orchestrator.base.cache import write_text_atomic
from orchestrator.base.errors import DeviceError, DeviceRefused, said


def trust_host_key(spec: DeviceSpec) -> TrustedKey:
    """Fetch the device's host key and record it in its known_hosts (older entries for the same
    host are replaced; a key marked @revoked is never trusted)."""
    cfg = ssh_settings(spec)
    key = _fetch_host_key(spec.name, cfg)
    known_hosts = cfg.known_hosts_file
    if load_known_hosts(known_hosts, spec.name).is_revoked(key):
        raise DeviceRefused(spec.name, f"host key of {cfg.known_hosts_name} ({key.get_name()} {host_key_fingerprint(key)}) "
                                       f"is marked @revoked in {known_hosts}; not trusting it")
    lines = known_hosts.read_text().splitlines() if known_hosts.is_file() else []
    # Replace the host's plain entries; marker lines (@revoked, @cert-authority) are never dropped.
    kept = [line for line in lines if line.lstrip().startswith("@") or not _names_host(line, cfg.known_hosts_name)]
    kept.append(f"{cfg.known_hosts_name} {key.get_name()} {key.get_base64()}")
    known_hosts.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_text_atomic(known_hosts, "\n".join(kept) + "\n", mode=0o600)
    fingerprint = f"{key.get_name()} {host_key_fingerprint(key)}"
    logging.getLogger(f"etfarm.device.{spec.name}").info(
        "trusted host key of %s: %s (in %s)", cfg.known_hosts_name, fingerprint, known_hosts
    )
    return TrustedKey(fingerprint, cfg.known_hosts)


def _fetch_host_key(device: str, cfg: SshSettings) -> paramiko.PKey:
    timeout_s = cfg.connect_timeout
    try:
        sock = socket.create_connection((cfg.host, cfg.port), timeout=timeout_s)
    except OSError as exc:
        raise DeviceError(device, f"cannot connect to {cfg.host}:{cfg.port}: {exc}") from None
    transport = paramiko.Transport(sock)
    try:
        transport.start_client(timeout=timeout_s)
        return transport.get_remote_server_key()
    except (OSError, EOFError, paramiko.SSHException) as exc:
        raise DeviceError(device, f"ssh handshake with {cfg.host}:{cfg.port} failed: {said(exc)}") from None
    finally:
        transport.close()


def _names_host(line: str, hostname: str) -> bool:
    """Whether a known_hosts line is about `hostname` (plain or hashed `|1|` names)."""
    fields = line.split()
    if not fields or line.lstrip().startswith("#"):
        return False
    names = fields[1] if fields[0].startswith("@") and len(fields) > 1 else fields[0]
    for name in names.split(","):
        if name.startswith("|1|"):
            if paramiko.HostKeys.hash_host(hostname, name) == name:
                return True
        elif name == hostname:
            return True
    return False
