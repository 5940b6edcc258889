"""SSH devices (boards, servers, an emulated Raspberry Pi) through paramiko.

Host keys are checked against the configured known_hosts only, with RejectPolicy:
an unknown or changed key is refused before anything is sent, and trusting a key
is an explicit step (`etfarm devices trust NAME` → `trust_host_key`). Keys only,
never passwords, never the user's agent or default keys.
"""

from __future__ import annotations

import base64
import getpass
import hashlib
import logging
import shlex
import socket
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import paramiko

from device_agents.base import STALL_TIMEOUT_SEC, DeviceAgent, DeviceSpec, RawExecResult
from device_agents.known_hosts import load_known_hosts
from orchestrator.cache import write_text_atomic
from orchestrator.cleanup import close_quietly
from orchestrator.errors import DeviceError, DeviceRefused

DEFAULT_KNOWN_HOSTS = "~/.config/etfarm/known_hosts"
KEEPALIVE_SEC = 10
# Our receive window, for pulls. Not larger: paramiko's channel buffer drops read data
# with a memmove of what is left, so a 16+ MiB backlog made a 100 MB pull 5x slower.
WINDOW_BYTES = 4 << 20
# Every SFTP server must accept 32 KiB reads/writes; bigger ones only when the
# server says so (OpenSSH's limits@openssh.com). Bigger requests mean fewer
# SFTP round trips and SSH packets that are all full: the difference between
# ~0.6x and >1x scp throughput on loopback.
SFTP_SAFE_REQUEST_BYTES = 32 * 1024
SFTP_MAX_REQUEST_BYTES = 255 * 1024
LOCAL_READ_BYTES = 1 << 20
PREFETCH_REQUESTS = 64
POLL_SEC = 0.2
STDERR_KEEP_BYTES = 1 << 20
# Opening a channel, starting a command in it and the SFTP version handshake each wait for one
# reply from sshd; paramiko waits for those forever (a frozen sshd, an sftp subsystem that never
# answers). One bound for each, the same as a stalled transfer.
REQUEST_TIMEOUT_SEC = STALL_TIMEOUT_SEC
_T = TypeVar("_T")
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


def known_hosts_name(host: str, port: int) -> str:
    """How known_hosts names host:port (`[host]:port` unless the port is 22)."""
    return host if port == 22 else f"[{host}]:{port}"


class _Settings:
    """The ssh keys of a DeviceSpec, validated, with `~` expanded."""

    def __init__(self, spec: DeviceSpec) -> None:
        s = spec.settings
        where = f"device {spec.name!r} in {spec.source}"
        if not s.get("host"):
            raise DeviceRefused(spec.name, f"ssh setting 'host' is missing ({where})")
        self.host = str(s["host"])
        try:
            self.port = int(s.get("port", 22))
            self.connect_timeout = float(s["connect_timeout"]) if s.get("connect_timeout") else None
        except (TypeError, ValueError) as exc:
            raise DeviceRefused(spec.name, f"ssh setting 'port' or 'connect_timeout' is not a number ({where}): {exc}") from None
        self.user = str(s.get("user") or getpass.getuser())
        if not s.get("key"):
            raise DeviceRefused(spec.name,
                                f"ssh setting 'key' (a private key file) is missing ({where}): keys only, no passwords")
        self.key = Path(str(s["key"])).expanduser()
        self.known_hosts = Path(str(s.get("known_hosts") or DEFAULT_KNOWN_HOSTS)).expanduser()
        self.hostname = known_hosts_name(self.host, self.port)


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


def _transport_factory(sock: socket.socket, **kwargs: Any) -> paramiko.Transport:
    transport = paramiko.Transport(sock, default_window_size=WINDOW_BYTES, **kwargs)
    options = transport.get_security_options()
    available = tuple(options.ciphers)
    options.ciphers = tuple(c for c in FAST_CIPHERS if c in available) + tuple(c for c in available if c not in FAST_CIPHERS)
    return transport


class SSHAgent(DeviceAgent):
    transport = "ssh"

    def __init__(self, spec: DeviceSpec) -> None:
        super().__init__(spec)
        self._settings = _Settings(spec)
        self._client: paramiko.SSHClient | None = None
        self._sftp: paramiko.SFTPClient | None = None
        self._write_bytes = SFTP_SAFE_REQUEST_BYTES
        self._read_bytes = SFTP_SAFE_REQUEST_BYTES
        self._shell: paramiko.Channel | None = None

    # ---- hooks ------------------------------------------------------------------

    def _connect(self, timeout_s: float) -> None:
        cfg = self._settings
        timeout_s = cfg.connect_timeout or timeout_s
        if not cfg.key.is_file():
            raise DeviceRefused(self.spec.name, f"ssh key {cfg.key} does not exist (setting 'key' in {self.spec.source})")
        known = load_known_hosts(cfg.known_hosts, self.spec.name)
        client = paramiko.SSHClient()
        # Only the configured file: never ~/.ssh/known_hosts, never auto-add.
        known.install(client)
        client.set_missing_host_key_policy(_RejectUnknown())
        trust_hint = f"if this is the right device, run `etfarm devices trust {self.spec.name}`"
        try:
            client.connect(
                cfg.host,
                port=cfg.port,
                username=cfg.user,
                key_filename=str(cfg.key),
                timeout=timeout_s,
                banner_timeout=timeout_s,
                auth_timeout=timeout_s,
                channel_timeout=timeout_s,
                look_for_keys=False,
                allow_agent=False,
                transport_factory=_transport_factory,
            )
        except UnknownHostKey as exc:
            client.close()
            if known.is_revoked(exc.key):
                raise DeviceRefused(self.spec.name, f"host key of {cfg.hostname} ({exc.key.get_name()} "
                                  f"{host_key_fingerprint(exc.key)}) is marked @revoked in {cfg.known_hosts}; "
                                  "refusing to connect") from None
            raise DeviceRefused(
                self.spec.name,
                f"host key of {cfg.hostname} is unknown: it is not in {cfg.known_hosts} "
                f"(server offers {exc.key.get_name()} {host_key_fingerprint(exc.key)}); refusing to connect; {trust_hint}",
            ) from None
        except paramiko.BadHostKeyException as exc:
            client.close()
            raise DeviceRefused(
                self.spec.name,
                f"host key of {cfg.hostname} does not match the one in {cfg.known_hosts} "
                f"(server offers {exc.key.get_name()} {host_key_fingerprint(exc.key)}, expected "
                f"{host_key_fingerprint(exc.expected_key)}): possible man-in-the-middle or a re-installed device; "
                f"refusing to connect; {trust_hint}",
            ) from None
        except paramiko.AuthenticationException as exc:
            client.close()
            raise DeviceRefused(self.spec.name, f"ssh authentication as {cfg.user!r} with key {cfg.key} failed: {exc}") from None
        except (OSError, paramiko.SSHException, EOFError) as exc:
            client.close()
            where = f"{cfg.user}@{cfg.host}:{cfg.port}"
            raise DeviceError(self.spec.name, f"cannot connect to {where}: {exc or type(exc).__name__}") from None
        transport = client.get_transport()
        assert transport is not None
        transport.set_keepalive(KEEPALIVE_SEC)
        self._client = client
        self.log.debug("connected to %s@%s:%s (%s)", cfg.user, cfg.host, cfg.port, transport.local_cipher)

    def _close(self) -> None:
        # Each part on its own: the peer may be gone before paramiko's reader thread noticed, and then
        # closing a channel writes to a dead socket (EOFError). What is left still gets closed.
        self._drop_shell()
        sftp, self._sftp = self._sftp, None
        if sftp is not None:
            close_quietly("the sftp session", sftp.close, self.log)
        client, self._client = self._client, None
        if client is not None:
            close_quietly("the ssh connection", client.close, self.log)

    def _exec_raw(self, command: str, timeout_s: float, max_bytes: int) -> RawExecResult:
        # Through /bin/sh whatever the login shell is; the trailing `exit $?` keeps sh
        # from exec'ing the last command, so a signal death still arrives as an
        # exit-status (paramiko ignores exit-signal).
        remote = "/bin/sh -c " + shlex.quote(f"{command}\nexit $?")
        started = time.monotonic()
        deadline = started + timeout_s
        out, err = bytearray(), bytearray()
        try:
            channel = self._transport().open_session(timeout=min(timeout_s, REQUEST_TIMEOUT_SEC))
            channel.settimeout(POLL_SEC)
            self._bounded("starting a command", min(timeout_s, REQUEST_TIMEOUT_SEC), lambda: channel.exec_command(remote))
            channel.shutdown_write()  # no stdin: a command that reads it sees EOF, not a hang
            ended = self._drain(channel, out, err, deadline, max_bytes)
            timed_out = ended is False
            if ended is not True:
                channel.close()
                exit_code = None
                if ended is None:
                    err += f"\n[etfarm] output over the {max_bytes}-byte cap; command cut off".encode()
            else:
                channel.status_event.wait(max(0.0, deadline - time.monotonic()))
                status = channel.exit_status if channel.status_event.is_set() else -1
                channel.close()
                # -1: the channel closed without an exit status (link or sshd died).
                exit_code = None if status == -1 else status
                if exit_code is None:
                    err += b"\n[etfarm] ssh channel closed without an exit status (connection lost?)"
        except (OSError, EOFError, paramiko.SSHException) as exc:
            exit_code, timed_out = None, False
            err += f"\n[etfarm] ssh transport failed: {exc or type(exc).__name__}".encode()
        return RawExecResult(command, exit_code, bytes(out), bytes(err), time.monotonic() - started, timed_out=timed_out)

    @staticmethod
    def _drain(channel: paramiko.Channel, out: bytearray, err: bytearray, deadline: float, max_bytes: int) -> bool | None:
        """Read stdout and stderr until EOF: True; False when the host-side deadline passed
        first; None when stdout went over max_bytes."""
        while True:
            while channel.recv_stderr_ready():
                err += channel.recv_stderr(1 << 16)
                if len(err) > STDERR_KEEP_BYTES:  # keep the tail: that is where errors are
                    del err[: len(err) - STDERR_KEEP_BYTES]
            if time.monotonic() > deadline:
                return False
            try:
                data = channel.recv(1 << 16)
            except TimeoutError:
                continue
            if not data:  # EOF covers both streams; collect what stderr has left
                while channel.recv_stderr_ready():
                    err += channel.recv_stderr(1 << 16)
                return True
            out += data
            if len(out) > max_bytes:
                return None

    def _exec_persistent(self, command: str, timeout_s: float, max_bytes: int) -> RawExecResult:
        """Run `command` in the job's long-lived `/bin/sh` (one SSH session for every process run).

        A session costs two round trips (channel open, exec request) plus sshd starting the login
        shell; a line written to a shell that is already there costs none of that. The command's
        end is a line with a random marker and its exit status. A deadline, a cut stream or output
        over the cap closes the shell (the next call opens a new one) and reports no exit status.
        """
        marker = f"@@ETFARM_DONE_{uuid.uuid4().hex}".encode()
        started = time.monotonic()
        deadline = started + timeout_s
        out, err = bytearray(), bytearray()
        failure = ""
        try:
            shell = self._persistent_shell(timeout_s)
            # A subshell: an `exit` in the command ends it, not the job's shell.
            shell.sendall(f"( {command}\n) </dev/null; printf '\\n%s %s\\n' {marker.decode()} \"$?\"\n".encode())
            while True:
                while shell.recv_stderr_ready():
                    err += shell.recv_stderr(1 << 16)
                    if len(err) > STDERR_KEEP_BYTES:
                        del err[: len(err) - STDERR_KEEP_BYTES]
                end = out.rfind(b"\n" + marker + b" ", max(0, len(out) - (1 << 16) - len(marker) - 16))
                if end >= 0 and out.endswith(b"\n"):
                    code = int(out[end + len(marker) + 2:].strip() or b"-1")
                    return RawExecResult(command, code, bytes(out[:end]), bytes(err), time.monotonic() - started)
                if time.monotonic() > deadline:
                    self._drop_shell()
                    return RawExecResult(command, None, bytes(out), bytes(err), time.monotonic() - started, timed_out=True)
                if len(out) > max_bytes + len(marker) + 16:
                    failure = f"output over the {max_bytes}-byte cap; command cut off"
                    break
                try:
                    data = shell.recv(1 << 16)
                except TimeoutError:
                    continue
                if not data:
                    failure = "the device shell ended without an exit status (connection lost?)"
                    break
                out += data
        except (OSError, EOFError, paramiko.SSHException, ValueError) as exc:
            failure = f"ssh shell failed: {exc or type(exc).__name__}"
        self._drop_shell()
        err += f"\n[etfarm] {failure}".encode()
        return RawExecResult(command, None, bytes(out), bytes(err), time.monotonic() - started)

    def _persistent_shell(self, timeout_s: float) -> paramiko.Channel:
        if self._shell is None or self._shell.closed or self._shell.exit_status_ready():
            self._drop_shell()
            channel = self._transport().open_session(timeout=min(timeout_s, REQUEST_TIMEOUT_SEC))
            channel.settimeout(POLL_SEC)
            self._bounded("starting the device shell", min(timeout_s, REQUEST_TIMEOUT_SEC),
                          lambda: channel.exec_command("/bin/sh"))
            self._shell = channel
        return self._shell

    def _drop_shell(self) -> None:
        shell, self._shell = self._shell, None
        if shell is not None:  # EOF on its stdin: the shell ends after what it is running
            close_quietly("the device shell", shell.close, self.log)

    def _push(self, local: Path, remote_path: str) -> None:
        sftp = self._sftp_client()
        size = local.stat().st_size
        try:
            with open(local, "rb") as src, sftp.open(remote_path, "wb") as dst:
                dst.MAX_REQUEST_SIZE = self._write_bytes  # per file, not a class-wide patch
                dst.set_pipelined(True)
                while chunk := src.read(LOCAL_READ_BYTES):
                    dst.write(chunk)
            got = sftp.stat(remote_path).st_size
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise DeviceError(
                self.spec.name, f"sftp push of {local} to {remote_path} failed: {exc or type(exc).__name__}"
            ) from None
        if got != size:
            raise DeviceError(self.spec.name, f"sftp push of {local}: {got} of {size} bytes arrived at {remote_path}")

    def _pull(self, remote_path: str, local: Path, max_bytes: int) -> None:
        sftp = self._sftp_client()
        try:
            size = sftp.stat(remote_path).st_size or 0
            if size > max_bytes:
                raise DeviceRefused(self.spec.name, f"{remote_path} is {size} bytes, over the {max_bytes}-byte cap")
            written = 0
            with sftp.open(remote_path, "rb") as src, open(local, "wb") as dst:
                src.MAX_REQUEST_SIZE = self._read_bytes
                src.prefetch(size, max_concurrent_requests=PREFETCH_REQUESTS)
                while chunk := src.read(LOCAL_READ_BYTES):
                    written += len(chunk)
                    if written > max_bytes:  # the file grew while we read it
                        raise DeviceRefused(self.spec.name, f"{remote_path} grew over the {max_bytes}-byte cap while pulling")
                    dst.write(chunk)
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise DeviceError(self.spec.name, f"sftp pull of {remote_path} failed: {exc or type(exc).__name__}") from None

    # ---- helpers ----------------------------------------------------------------

    def _transport(self) -> paramiko.Transport:
        transport = self._client.get_transport() if self._client else None
        if transport is None or not transport.is_active():
            raise DeviceError(self.spec.name, "not connected (ssh transport is closed)")
        return transport

    def _sftp_client(self) -> paramiko.SFTPClient:
        if self._sftp is None:
            transport = self._transport()
            try:
                self._sftp = self._bounded("opening an sftp session", REQUEST_TIMEOUT_SEC, lambda: _open_sftp(transport))
                self._write_bytes, self._read_bytes = _sftp_limits(self._sftp)  # the channel's stall timeout bounds it
            except (OSError, EOFError, paramiko.SSHException) as exc:
                raise DeviceError(self.spec.name, f"cannot open an sftp session: {exc or type(exc).__name__}") from None
            self.log.debug("sftp request sizes: write %d, read %d", self._write_bytes, self._read_bytes)
        return self._sftp

    def _bounded(self, what: str, timeout_s: float, call: Callable[[], _T]) -> _T:
        """`call()` (one request to sshd that paramiko would wait for forever), given up after
        timeout_s: the connection is then closed, which also ends the waiting thread, and a
        DeviceError says what did not answer. The next device operation finds no connection."""
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["value"] = call()
            except BaseException as exc:  # handed to the caller's thread
                box["error"] = exc

        thread = threading.Thread(target=target, name=f"ssh-{self.spec.name}-{what}", daemon=True)
        thread.start()
        thread.join(timeout_s)
        if thread.is_alive():
            self._abandon()
            thread.join(5.0)
            raise DeviceError(self.spec.name, f"{what} got no answer from sshd within {timeout_s:g} s "
                                              "(device frozen, link down or a wedged ssh server); connection closed")
        if "error" in box:
            raise box["error"]
        return box["value"]

    def _abandon(self) -> None:
        """Close the connection without waiting for a device that does not answer."""
        client, self._client, self._sftp, self._shell = self._client, None, None, None
        if client is not None:
            transport = client.get_transport()
            if transport is not None:
                close_quietly("the ssh transport", transport.close, self.log)
            close_quietly("the ssh connection", client.close, self.log)


def _open_sftp(transport: paramiko.Transport) -> paramiko.SFTPClient:
    """SFTPClient.from_transport with the channel's stall timeout set before the version
    handshake (paramiko reads the server's version reply with no timeout otherwise)."""
    channel = transport.open_session(window_size=WINDOW_BYTES, timeout=REQUEST_TIMEOUT_SEC)
    channel.settimeout(STALL_TIMEOUT_SEC)  # no progress: OSError, not a hang
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
    except (OSError, EOFError, paramiko.SSHException):
        return SFTP_SAFE_REQUEST_BYTES, SFTP_SAFE_REQUEST_BYTES

    def pick(limit: int) -> int:
        return max(SFTP_SAFE_REQUEST_BYTES, min(limit, SFTP_MAX_REQUEST_BYTES)) if limit else SFTP_SAFE_REQUEST_BYTES

    return pick(write_max), pick(read_max)


def trust_host_key(spec: DeviceSpec, timeout_s: float = 15.0) -> str:
    """Fetch the device's host key and record it in its known_hosts; returns "type SHA256:…".

    This is the one place a key becomes trusted, on the user's explicit request.
    Older entries for the same host are replaced.
    """
    cfg = _Settings(spec)
    timeout_s = cfg.connect_timeout or timeout_s
    try:
        sock = socket.create_connection((cfg.host, cfg.port), timeout=timeout_s)
    except OSError as exc:
        raise DeviceError(spec.name, f"cannot connect to {cfg.host}:{cfg.port}: {exc}") from None
    transport = paramiko.Transport(sock)
    try:
        transport.start_client(timeout=timeout_s)
        key = transport.get_remote_server_key()
    except (OSError, EOFError, paramiko.SSHException) as exc:
        raise DeviceError(spec.name, f"ssh handshake with {cfg.host}:{cfg.port} failed: {exc or type(exc).__name__}") from None
    finally:
        transport.close()
    if load_known_hosts(cfg.known_hosts, spec.name).is_revoked(key):
        raise DeviceRefused(spec.name, f"host key of {cfg.hostname} ({key.get_name()} {host_key_fingerprint(key)}) is marked "
                                     f"@revoked in {cfg.known_hosts}; not trusting it")
    lines = cfg.known_hosts.read_text().splitlines() if cfg.known_hosts.is_file() else []
    # Replace the host's plain entries; marker lines (@revoked, @cert-authority) are never dropped.
    kept = [line for line in lines if line.lstrip().startswith("@") or not _names_host(line, cfg.hostname)]
    kept.append(f"{cfg.hostname} {key.get_name()} {key.get_base64()}")
    cfg.known_hosts.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_text_atomic(cfg.known_hosts, "\n".join(kept) + "\n", mode=0o600)
    fingerprint = f"{key.get_name()} {host_key_fingerprint(key)}"
    logging.getLogger(f"etfarm.device.{spec.name}").info(
        "trusted host key of %s: %s (in %s)", cfg.hostname, fingerprint, cfg.known_hosts
    )
    return fingerprint


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
