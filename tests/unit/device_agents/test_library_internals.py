"""The private paramiko and adbutils internals etfarm relies on are still there, as we use them.

pyproject.toml bounds both libraries to the releases these checks passed on. Raising a bound
(docs/how-to/boards.md, "Upgrading paramiko and adbutils") starts here: each check names the internal, the version
installed and the etfarm code that depends on it, so a release that moved one fails loudly here
instead of quietly undoing a fix (adbutils starting an adb server on the default port, paramiko
waiting forever for the SFTP version, a 5x slower push).
"""

from __future__ import annotations

import inspect
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import version
from typing import Any

import pytest


@dataclass(frozen=True)
class Internal:
    library: str
    name: str
    used_by: str
    check: Callable[[], None]  # raises AssertionError saying what changed


def _parameters(function: Callable[..., Any]) -> list[str]:
    return list(inspect.signature(function).parameters)


def _require(condition: bool, detail: str) -> None:
    if not condition:
        raise AssertionError(detail)


def _calls(function: Callable[..., Any], name: str) -> bool:
    return f"{name}(" in inspect.getsource(function)


# ---- paramiko ------------------------------------------------------------------------------


def _sftp_write_all() -> None:
    import paramiko

    _require(_parameters(paramiko.SFTPClient._write_all) == ["self", "out"], "signature is not (self, out)")
    _require(_calls(paramiko.sftp.BaseSFTP._send_packet, "self._write_all"), "_send_packet no longer writes through it")
    _require(hasattr(paramiko.sftp.BaseSFTP(), "sock"), "BaseSFTP has no `sock` (the channel it writes to)")


def _sftp_request() -> None:
    import paramiko

    _require(_parameters(paramiko.SFTPClient._request) == ["self", "t", "args"], "signature is not (self, t, *args)")
    _require(paramiko.sftp.CMD_EXTENDED == 200 and paramiko.sftp.CMD_EXTENDED_REPLY == 201,
             "paramiko.sftp.CMD_EXTENDED / CMD_EXTENDED_REPLY moved")


def _sftp_file_request_size() -> None:
    import paramiko

    _require(isinstance(paramiko.SFTPFile.MAX_REQUEST_SIZE, int), "SFTPFile.MAX_REQUEST_SIZE is gone")
    for method in (paramiko.SFTPFile._write, paramiko.SFTPFile.prefetch):
        _require("self.MAX_REQUEST_SIZE" in inspect.getsource(method), f"{method.__name__} no longer reads it per file")
    _require("max_concurrent_requests" in _parameters(paramiko.SFTPFile.prefetch), "prefetch lost max_concurrent_requests")
    _require(callable(paramiko.SFTPFile.set_pipelined), "set_pipelined is gone")


def _channel_status_event() -> None:
    import paramiko

    channel = paramiko.Channel(0)
    _require(isinstance(channel.status_event, threading.Event), "Channel.status_event is not a threading.Event")
    _require(channel.exit_status == -1 and channel.closed is False, "Channel.exit_status / closed changed")


def _client_connect_options() -> None:
    import paramiko

    options = _parameters(paramiko.SSHClient.connect)
    for option in ("transport_factory", "channel_timeout", "banner_timeout", "auth_timeout"):
        _require(option in options, f"SSHClient.connect lost `{option}`")


def _transport_options() -> None:
    import paramiko

    _require("default_window_size" in _parameters(paramiko.Transport.__init__), "Transport lost default_window_size")
    _require({"window_size", "timeout"} <= set(_parameters(paramiko.Transport.open_session)),
             "Transport.open_session lost window_size or timeout")
    ours, theirs = socket.socketpair()
    try:
        transport = paramiko.Transport(ours)
        options = transport.get_security_options()
        first = ("aes128-gcm@openssh.com",)
        options.ciphers = first + tuple(c for c in options.ciphers if c not in first)
        _require(options.ciphers[0] == first[0], "the cipher order can no longer be set")
    finally:
        ours.close()
        theirs.close()


def _reject_policy() -> None:
    import paramiko

    _require(_parameters(paramiko.RejectPolicy.missing_host_key) == ["self", "client", "hostname", "key"],
             "missing_host_key is not (self, client, hostname, key)")


def _host_key_entries() -> None:
    import paramiko

    line = "host ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
    entry = paramiko.hostkeys.HostKeyEntry.from_line(line, 1)
    _require(entry is not None and entry.hostnames == ["host"] and entry.key.get_name() == "ssh-ed25519",
             "HostKeyEntry.from_line(line, lineno) changed")
    _require(issubclass(paramiko.hostkeys.InvalidHostKey, Exception), "hostkeys.InvalidHostKey is gone")
    hashed = paramiko.HostKeys.hash_host("host")
    _require(paramiko.HostKeys.hash_host("host", hashed) == hashed, "HostKeys.hash_host(hostname, salt) changed")


def _packetizer_socket() -> None:
    import paramiko

    ours, theirs = socket.socketpair()
    try:
        _require(paramiko.packet.Packetizer(ours)._Packetizer__socket is ours,  # type: ignore[attr-defined]
                 "Packetizer no longer keeps its socket as __socket")
    finally:
        ours.close()
        theirs.close()


# ---- adbutils ------------------------------------------------------------------------------


def _adb_connection() -> None:
    from adbutils._adb import AdbConnection

    _require(_parameters(AdbConnection.__init__) == ["self", "host", "port"], "__init__ is not (self, host, port)")
    ours, theirs = socket.socketpair()

    class Probe(AdbConnection):
        def _safe_connect(self) -> socket.socket:
            return ours

    try:
        connection = Probe("127.0.0.1", 1)
        _require(connection.conn is ours, "__init__ no longer gets its socket from _safe_connect")
        for method in ("send_command", "check_okay", "close"):
            _require(callable(getattr(connection, method, None)), f"AdbConnection.{method} is gone")
    finally:
        ours.close()
        theirs.close()


def _adb_client_connections() -> None:
    import adbutils
    from adbutils._adb import BaseClient

    _require({"host", "port", "socket_timeout"} <= set(_parameters(adbutils.AdbClient.__init__)),
             "AdbClient(host, port, socket_timeout) changed")
    _require(_parameters(adbutils.AdbClient.make_connection) == ["self", "timeout"], "make_connection is not (self, timeout)")
    for method in (BaseClient.server_version, BaseClient.connect):
        _require(_calls(method, "self.make_connection"), f"{method.__name__} no longer connects through make_connection")
    client = adbutils.AdbClient(host="127.0.0.1", port=1, socket_timeout=1)
    _require((client.host, client.port) == ("127.0.0.1", 1), "AdbClient.host / port changed")


def _adb_device_transport() -> None:
    import adbutils
    from adbutils._device_base import BaseDevice
    from adbutils.sync import Sync

    _require(_parameters(adbutils.AdbDevice.open_transport) == ["self", "command", "timeout"],
             "open_transport is not (self, command, timeout)")
    _require(_parameters(adbutils.AdbDevice.open_shell) == ["self", "cmdargs"], "open_shell is not (self, cmdargs)")
    for method in (BaseDevice._get_with_command, BaseDevice.open_shell, Sync._prepare_sync):
        _require(_calls(method, "open_transport"), f"{method.__qualname__} no longer opens through open_transport")
    _require(_calls(BaseDevice.open_transport, "self._client.make_connection"), "open_transport no longer uses _client")
    device = adbutils.AdbDevice(adbutils.AdbClient(host="127.0.0.1", port=1), serial="s")
    _require(device._serial == "s" and isinstance(device._client, adbutils.AdbClient), "AdbDevice._serial / _client moved")
    _require({"mode", "check"} <= set(_parameters(Sync.push)) and callable(Sync.iter_content),
             "Sync.push(..., mode, check) / iter_content changed")


def _adb_errors() -> None:
    import adbutils
    from adbutils.errors import AdbConnectionError, AdbTimeout

    _require(issubclass(AdbConnectionError, adbutils.AdbError) and issubclass(AdbTimeout, adbutils.AdbError),
             "adbutils.errors.AdbConnectionError / AdbTimeout are no longer AdbErrors")


INTERNALS = [
    Internal("paramiko", "SFTPClient._write_all", "device_agents/ssh/sftp.py (_SFTPClient: pushes without copies)",
             _sftp_write_all),
    Internal("paramiko", "SFTPClient._request + sftp.CMD_EXTENDED", "device_agents/ssh/sftp.py (limits@openssh.com)",
             _sftp_request),
    Internal("paramiko", "SFTPFile.MAX_REQUEST_SIZE", "device_agents/ssh/sftp.py (255 KiB requests per file)",
             _sftp_file_request_size),
    Internal("paramiko", "Channel.status_event", "device_agents/ssh/commands.py (exit status within the deadline)",
             _channel_status_event),
    Internal("paramiko", "SSHClient.connect(transport_factory, channel_timeout)", "device_agents/ssh/connect.py",
             _client_connect_options),
    Internal("paramiko", "Transport(default_window_size) + security options", "device_agents/ssh/connect.py (AES-GCM first)",
             _transport_options),
    Internal("paramiko", "RejectPolicy.missing_host_key", "device_agents/ssh/connect.py (the offered key's fingerprint)",
             _reject_policy),
    Internal("paramiko", "hostkeys.HostKeyEntry.from_line + HostKeys.hash_host", "device_agents/ssh/known_hosts.py, trust.py",
             _host_key_entries),
    Internal("paramiko", "packet.Packetizer.__socket", "tests/integration/test_close_after_fault.py (forcing the close race)",
             _packetizer_socket),
    Internal("adbutils", "adbutils._adb.AdbConnection._safe_connect", "device_agents/adb/client.py (never start a server)",
             _adb_connection),
    Internal("adbutils", "AdbClient.make_connection", "device_agents/adb/client.py (stall timeout on every connection)",
             _adb_client_connections),
    Internal("adbutils", "AdbDevice.open_transport / _client / _serial", "device_agents/adb/client.py (no leaked sockets)",
             _adb_device_transport),
    Internal("adbutils", "adbutils.errors", "device_agents/adb/client.py, agent.py", _adb_errors),
]


@pytest.mark.parametrize("internal", INTERNALS, ids=[i.name for i in INTERNALS])
def test_internal_is_where_we_use_it(internal: Internal) -> None:
    try:
        internal.check()
    except (AssertionError, AttributeError, ImportError, TypeError, ValueError) as exc:
        pytest.fail(f"{internal.library} {version(internal.library)}: the internal {internal.name} moved or changed "
                    f"({type(exc).__name__}: {exc}); {internal.used_by} relies on it. "
                    "See docs/how-to/boards.md, 'Upgrading paramiko and adbutils'.", pytrace=False)


def test_installed_versions_are_inside_the_bounds_of_pyproject() -> None:
    """The bounds and the checks above go together: an install outside them was not checked."""
    import tomllib
    from pathlib import Path

    from packaging.requirements import Requirement

    pyproject = tomllib.loads((Path(__file__).resolve().parents[3] / "pyproject.toml").read_text())
    bounded = {req.name: req for req in map(Requirement, pyproject["project"]["dependencies"])}
    for library in ("paramiko", "adbutils"):
        assert bounded[library].specifier, f"{library} has no version bounds in pyproject.toml"
        assert bounded[library].specifier.contains(version(library)), (library, version(library), str(bounded[library]))
