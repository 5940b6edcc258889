"""SSH devices (boards, servers, an emulated Raspberry Pi) through paramiko.

Host keys are checked against the configured known_hosts only, with RejectPolicy: an unknown or
changed key is refused before anything is sent, and trusting a key is an explicit step (`etfarm
devices trust NAME`, trust.py). Keys only, never passwords, never the user's agent or default keys.

The agent fills the workflow's hooks from parts with one job each: connect.py (host keys, login),
link.py (the connection, every request to sshd bounded), commands.py (one command per session),
shell.py (the job's long-lived shell), sftp.py (transfers).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from device_agents.base import STALL_TIMEOUT_SEC, DeviceAgent, DeviceSpec, RawExecResult
from device_agents.ssh.commands import exec_command
from device_agents.ssh.connect import open_client
from device_agents.ssh.link import SshLink
from device_agents.ssh.settings import ssh_settings
from device_agents.ssh.sftp import SftpSession
from device_agents.ssh.shell import PersistentShell
from orchestrator.base.errors import DeviceError


@dataclass(frozen=True)
class SshConnection:
    """What a connected agent holds: the link, and the shell and SFTP session opened on it on first use."""

    link: SshLink
    shell: PersistentShell
    sftp: SftpSession


class SSHAgent(DeviceAgent):
    # One reply from sshd (opening a channel, starting a command, the SFTP version handshake):
    # paramiko would wait for it forever; bounded like a stalled transfer.
    REQUEST_TIMEOUT_SEC: ClassVar[float] = STALL_TIMEOUT_SEC
    STALL_TIMEOUT_SEC: ClassVar[float] = STALL_TIMEOUT_SEC

    def __init__(self, spec: DeviceSpec) -> None:
        super().__init__(spec)
        self.settings = ssh_settings(spec)
        self._connection: SshConnection | None = None

    def _connect(self, timeout_s: float) -> None:
        cfg = self.settings
        client = open_client(cfg, self.spec.name, self.spec.source, cfg.connect_timeout or timeout_s)
        link = SshLink(client, self.spec.name, self.log, request_timeout_s=self.REQUEST_TIMEOUT_SEC,
                       stall_timeout_s=self.STALL_TIMEOUT_SEC)
        self._connection = SshConnection(link, PersistentShell(link), SftpSession(link))
        self.log.debug("connected to %s@%s:%s (%s)", cfg.login, cfg.host, cfg.port, link.transport().local_cipher)

    def _close(self) -> None:
        # Each part on its own: the peer may be gone before paramiko's reader thread noticed, and then
        # closing a channel writes to a dead socket (EOFError). What is left still gets closed.
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.shell.drop()
            connection.sftp.close()
            connection.link.close()

    def _exec_raw(self, command: str, timeout_s: float, max_bytes: int) -> RawExecResult:
        return exec_command(self.connection().link, command, timeout_s, max_bytes)

    def _exec_persistent(self, command: str, timeout_s: float, max_bytes: int) -> RawExecResult:
        """Through the job's long-lived `/bin/sh` (shell.py): one SSH session for every process run."""
        return self.connection().shell.run(command, timeout_s, max_bytes)

    def _push(self, local: Path, remote_path: str) -> None:
        self.connection().sftp.push(local, remote_path)

    def _pull(self, remote_path: str, local: Path, max_bytes: int) -> None:
        self.connection().sftp.pull(remote_path, local, max_bytes)

    def connection(self) -> SshConnection:
        """The open connection; DeviceError before `connect` and after `close`."""
        if self._connection is None:
            raise DeviceError(self.spec.name, "not connected (ssh transport is closed)")
        return self._connection
