"""Opening an SSH connection: the configured known_hosts only, RejectPolicy, keys only.

An unknown, changed or revoked host key is refused (DeviceRefused, never retried) before anything
is sent, with the offered key's fingerprint and the command that trusts it on purpose; a failed
login is refused too; a connection that cannot be made is a DeviceError (infrastructure,
retried). Never the user's agent, default keys or ~/.ssh/known_hosts.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import socket
from typing import Any, NoReturn

import paramiko

from device_agents.ssh.keyfile import load_key
from device_agents.ssh.known_hosts import KnownHosts, load_known_hosts
from device_agents.ssh.settings import SshSettings
from orchestrator.base.errors import DeviceError, DeviceRefused, one_line

# paramiko logs its transport thread's failures (a server that never sends its banner: a traceback of
# 60 lines) at ERROR; Python's last-resort handler, or a root handler some library set up (torch's
# import does), would print them on stderr whatever -q says. etfarm says what failed in its own line.
_PARAMIKO_LOG = logging.getLogger("paramiko")
_PARAMIKO_LOG.addHandler(logging.NullHandler())
_PARAMIKO_LOG.propagate = False
# How paramiko says that the server sent no banner (first try; later tries find the session gone).
_NO_BANNER = re.compile(r"protocol banner|No existing session")

KEEPALIVE_SEC = 10
# Our receive window, for pulls. Not larger: paramiko's channel buffer drops read data
# with a memmove of what is left, so a 16+ MiB backlog made a 100 MB pull 5x slower.
WINDOW_BYTES = 4 << 20
# AES-GCM first: no separate MAC pass in paramiko's Python packetizer (~2x faster).
FAST_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")


class UnknownHostKey(paramiko.SSHException):
    def __init__(self, hostname: str, key: paramiko.PKey) -> None:
        super().__init__(f"host key of {hostname} is not in known_hosts")
        self.hostname = hostname
        self.key = key


class _RejectUnknown(paramiko.RejectPolicy):
    """RejectPolicy that keeps the offered key, so the error can show its fingerprint."""

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        raise UnknownHostKey(hostname, key)


def host_key_fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH-style `SHA256:…` fingerprint (what `ssh-keygen -lf` prints)."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def _transport_factory(sock: socket.socket, **kwargs: Any) -> paramiko.Transport:
    transport = paramiko.Transport(sock, default_window_size=WINDOW_BYTES, **kwargs)
    options = transport.get_security_options()
    available = tuple(options.ciphers)
    options.ciphers = tuple(c for c in FAST_CIPHERS if c in available) + tuple(c for c in available if c not in FAST_CIPHERS)
    return transport


def open_client(cfg: SshSettings, device: str, source: str, timeout_s: float) -> paramiko.SSHClient:
    """A logged-in client for the device, its host key verified; `source`: the inventory, for errors."""
    try:
        key = load_key(cfg.key_file)
    except ValueError as exc:
        raise DeviceRefused(device, f"ssh key: {exc} (setting 'key' in {source})") from None
    known = load_known_hosts(cfg.known_hosts_file, device)
    client = paramiko.SSHClient()
    known.install(client)  # only the configured file: never ~/.ssh/known_hosts, never auto-add
    client.set_missing_host_key_policy(_RejectUnknown())
    try:
        client.connect(
            cfg.host,
            port=cfg.port,
            username=cfg.login,
            pkey=key,
            timeout=timeout_s,
            banner_timeout=timeout_s,
            auth_timeout=timeout_s,
            channel_timeout=timeout_s,
            look_for_keys=False,
            allow_agent=False,
            transport_factory=_transport_factory,
        )
    except Exception as exc:
        client.close()
        _refuse(exc, cfg, device, known)
    transport = client.get_transport()
    assert transport is not None
    transport.set_keepalive(KEEPALIVE_SEC)
    return client


def _refuse(exc: Exception, cfg: SshSettings, device: str, known: KnownHosts) -> NoReturn:
    """The error a failed `SSHClient.connect` becomes: refusals for keys and logins, else a fault."""
    trust_hint = f"if this is the right device, run `etfarm devices trust {device}`"
    where = cfg.known_hosts_file
    if isinstance(exc, UnknownHostKey):
        offered = f"{exc.key.get_name()} {host_key_fingerprint(exc.key)}"
        if known.is_revoked(exc.key):
            raise DeviceRefused(device, f"host key of {cfg.known_hosts_name} ({offered}) is marked @revoked in "
                                        f"{where}; refusing to connect") from None
        raise DeviceRefused(device, f"host key of {cfg.known_hosts_name} is unknown: it is not in {where} "
                                    f"(server offers {offered}); refusing to connect; {trust_hint}") from None
    if isinstance(exc, paramiko.BadHostKeyException):
        raise DeviceRefused(
            device,
            f"host key of {cfg.known_hosts_name} does not match the one in {where} "
            f"(server offers {exc.key.get_name()} {host_key_fingerprint(exc.key)}, expected "
            f"{host_key_fingerprint(exc.expected_key)}): possible man-in-the-middle or a re-installed device; "
            f"refusing to connect; {trust_hint}",
        ) from None
    if isinstance(exc, paramiko.AuthenticationException):
        raise DeviceRefused(device, f"ssh authentication as {cfg.login!r} with key {cfg.key_file} failed: {exc}") from None
    if isinstance(exc, paramiko.SSHException) and _NO_BANNER.search(str(exc)):
        raise DeviceError(device, f"cannot connect to {cfg.login}@{cfg.host}:{cfg.port}: the server accepted the "
                                  "connection but sent no SSH banner in time (a stopped or wedged sshd, or not an SSH "
                                  "server)") from None
    if isinstance(exc, OSError | paramiko.SSHException | EOFError):
        raise DeviceError(device, f"cannot connect to {cfg.login}@{cfg.host}:{cfg.port}: "
                                  f"{one_line(str(exc)) or type(exc).__name__}") from None
    raise exc
