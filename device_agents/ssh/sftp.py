"""File transfers over SFTP: large pipelined requests where the server allows them, never a hang.

Every SFTP server must accept 32 KiB reads and writes; bigger ones only when the server says so
(OpenSSH's `limits@openssh.com`). Bigger requests mean fewer SFTP round trips and SSH packets that
are all full: the difference between ~0.6x and >1x scp throughput on loopback. The session's
channel has the link's stall timeout, so a transfer that stops making progress is an error, not a
hang; opening the session (subsystem request and version handshake) is bounded by the link.
"""

from __future__ import annotations

from pathlib import Path

import paramiko

from device_agents.ssh.connect import WINDOW_BYTES
from device_agents.ssh.link import SshLink
from orchestrator.base.cleanup import close_quietly
from orchestrator.base.errors import DeviceError, DeviceRefused, said

SFTP_SAFE_REQUEST_BYTES = 32 * 1024
SFTP_MAX_REQUEST_BYTES = 255 * 1024
LOCAL_READ_BYTES = 1 << 20
PREFETCH_REQUESTS = 64
_FAULTS = (OSError, EOFError, paramiko.SSHException)


class _SFTPClient(paramiko.SFTPClient):
    """paramiko's SFTP client, minus a copy: a big write request is handed to the channel
    packet by packet through a memoryview instead of re-slicing the bytes each time
    (quadratic copying that costs ~15% of push CPU with 255 KiB requests)."""

    def _write_all(self, out: bytes) -> None:
        view = memoryview(out)
        while view:
            sent = self.sock.send(view)
            if sent <= 0:
                raise EOFError()
            view = view[sent:]


class SftpSession:
    """One SFTP session on `link`, opened on first use."""

    def __init__(self, link: SshLink) -> None:
        self.link = link
        self.device = link.device
        self._sftp: paramiko.SFTPClient | None = None
        self._write_bytes = self._read_bytes = SFTP_SAFE_REQUEST_BYTES

    def open(self) -> paramiko.SFTPClient:
        if self._sftp is None or self.link.closed:
            self._sftp = None
            transport = self.link.transport()
            what = "opening an sftp session"
            try:
                sftp = self.link.bounded(what, self.link.request_timeout_s, lambda: _open_sftp(transport, self.link))
                self._write_bytes, self._read_bytes = _sftp_limits(sftp)  # the channel's stall timeout bounds it
            except TimeoutError:  # the version handshake's own stall timeout fired before the bound above
                self.link.abandon()
                raise self.link.no_answer(what, self.link.stall_timeout_s) from None
            except _FAULTS as exc:
                raise DeviceError(self.device, f"cannot open an sftp session: {said(exc)}") from None
            self._sftp = sftp
            self.link.log.debug("sftp request sizes: write %d, read %d", self._write_bytes, self._read_bytes)
        return self._sftp

    def push(self, local: Path, remote_path: str) -> None:
        sftp = self.open()
        size = local.stat().st_size
        try:
            with open(local, "rb") as src, sftp.open(remote_path, "wb") as dst:
                dst.MAX_REQUEST_SIZE = self._write_bytes  # per file, not a class-wide patch
                dst.set_pipelined(True)
                while chunk := src.read(LOCAL_READ_BYTES):
                    dst.write(chunk)
            got = sftp.stat(remote_path).st_size
        except _FAULTS as exc:
            raise DeviceError(self.device, f"sftp push of {local} to {remote_path} failed: {said(exc)}") from None
        if got != size:
            raise DeviceError(self.device, f"sftp push of {local}: {got} of {size} bytes arrived at {remote_path}")

    def pull(self, remote_path: str, local: Path, max_bytes: int) -> None:
        sftp = self.open()
        try:
            size = sftp.stat(remote_path).st_size or 0
            if size > max_bytes:
                raise DeviceRefused(self.device, f"{remote_path} is {size} bytes, over the {max_bytes}-byte cap")
            written = 0
            with sftp.open(remote_path, "rb") as src, open(local, "wb") as dst:
                src.MAX_REQUEST_SIZE = self._read_bytes
                src.prefetch(size, max_concurrent_requests=PREFETCH_REQUESTS)
                while chunk := src.read(LOCAL_READ_BYTES):
                    written += len(chunk)
                    if written > max_bytes:  # the file grew while we read it
                        raise DeviceRefused(self.device, f"{remote_path} grew over the {max_bytes}-byte cap while pulling")
                    dst.write(chunk)
        except _FAULTS as exc:
            raise DeviceError(self.device, f"sftp pull of {remote_path} failed: {said(exc)}") from None

    def close(self) -> None:
        sftp, self._sftp = self._sftp, None
        if sftp is not None:
            close_quietly("the sftp session", sftp.close, self.link.log)


def _open_sftp(transport: paramiko.Transport, link: SshLink) -> paramiko.SFTPClient:
    """SFTPClient.from_transport with the channel's stall timeout set before the version
    handshake (paramiko reads the server's version reply with no timeout otherwise)."""
    channel = transport.open_session(window_size=WINDOW_BYTES, timeout=link.request_timeout_s)
    channel.settimeout(link.stall_timeout_s)  # no progress: OSError, not a hang
    channel.invoke_subsystem("sftp")
    return _SFTPClient(channel)


def _sftp_limits(sftp: paramiko.SFTPClient) -> tuple[int, int]:
    """(write, read) request sizes the server accepts; 32 KiB unless it tells us more."""
    try:
        # limits@openssh.com (OpenSSH >= 8.7): u64 packet, read, write, open-handles.
        kind, msg = sftp._request(paramiko.sftp.CMD_EXTENDED, "limits@openssh.com")
        if kind != paramiko.sftp.CMD_EXTENDED_REPLY:
            return SFTP_SAFE_REQUEST_BYTES, SFTP_SAFE_REQUEST_BYTES
        msg.get_int64()
        read_max, write_max = msg.get_int64(), msg.get_int64()
    except _FAULTS:
        return SFTP_SAFE_REQUEST_BYTES, SFTP_SAFE_REQUEST_BYTES

    def pick(limit: int) -> int:
        return max(SFTP_SAFE_REQUEST_BYTES, min(limit, SFTP_MAX_REQUEST_BYTES)) if limit else SFTP_SAFE_REQUEST_BYTES

    return pick(write_max), pick(read_max)
