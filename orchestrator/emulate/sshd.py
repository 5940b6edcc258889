"""A real OpenSSH server per test device, on 127.0.0.1 and a free port, keys in tmp dirs.

sshd runs with `-f /dev/null` (no system config), key authentication only, the
internal SFTP server, and a tag in every session's environment so teardown finds
and kills whatever the tests left running.
"""

from __future__ import annotations

import getpass
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from device_agents.base import DeviceSpec
from device_agents.ssh.settings import SshSettings

from . import (
    TAG_VAR,
    descendant_pids,
    free_port,
    kill_tagged,
    new_tag,
    pmic,
    require_tool,
    tagged_env,
    wait_port,
)

SSHD = "/usr/sbin/sshd"
START_TIMEOUT_SEC = 10.0


def keygen(path: Path) -> str:
    """Make an ed25519 key pair at `path` (no passphrase); returns the public key line."""
    tool = require_tool("ssh-keygen")
    for old in (path, path.with_name(path.name + ".pub")):
        old.unlink(missing_ok=True)  # ssh-keygen would ask before overwriting
    subprocess.run(
        [tool, "-q", "-t", "ed25519", "-N", "", "-C", "etfarm-testbed", "-f", str(path)],
        check=True, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    return path.with_name(path.name + ".pub").read_text().strip()


@dataclass
class SshTestHost:
    """A running sshd. `known_hosts` already trusts its host key; `client_key` may log in."""

    root: Path
    port: int
    host_key: Path
    host_key_line: str  # "ssh-ed25519 AAAA..." as the server presents it
    client_key: Path
    known_hosts: Path
    user: str
    tag: str
    listen: str = "127.0.0.1"
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    argv: list[str] = field(default_factory=list, repr=False)  # how it was started (start_again)

    @property
    def host_pattern(self) -> str:
        return f"[{self.listen}]:{self.port}"

    def spec(
        self,
        name: str,
        workdir: str | Path,
        *,
        target: str = "host",
        exec_prefix: Sequence[str] = (),
        known_hosts: Path | None = None,
        **settings: object,
    ) -> DeviceSpec:
        """A DeviceSpec for this server; `known_hosts` overrides the trusting one."""
        return DeviceSpec(
            name=name,
            target=target,
            workdir=str(workdir),
            exec_prefix=tuple(exec_prefix),
            settings=SshSettings(**{  # type: ignore[arg-type]
                "host": self.listen,
                "port": self.port,
                "user": self.user,
                "key": str(self.client_key),
                "known_hosts": str(known_hosts or self.known_hosts),
                "connect_timeout": 10.0,
                **settings,
            }),
            source=f"<testbed sshd {self.port}>",
        )

    @property
    def log(self) -> Path:
        return self.root / f"sshd-{self.port}.log"

    def sessions(self) -> list[str]:
        """Every session sshd started so far (a command, a shell or the sftp subsystem), from its
        VERBOSE log: "Starting session: command for root from 127.0.0.1 port 4711 id 0"."""
        if not self.log.exists():
            return []
        return [line for line in self.log.read_text(errors="replace").splitlines() if "Starting session:" in line]

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        """Kill sshd, its per-connection children and every session process."""
        if self.proc is not None:
            # Per-connection sshd processes do not carry the tag (sshd scrubs its own
            # environment), so find them through the process tree, before the listener dies.
            for pid in descendant_pids(self.proc.pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait(timeout=5)
        kill_tagged(self.tag)

    def kill_server(self) -> None:
        """SIGKILL sshd only (the listener and its per-connection processes): every connection drops,
        but what the sessions started (a runner) goes on running, as on a board whose link failed."""
        assert self.proc is not None
        for pid in descendant_pids(self.proc.pid):
            try:
                if Path(f"/proc/{pid}/comm").read_text().strip() == "sshd":
                    os.kill(pid, signal.SIGKILL)
            except (OSError, ProcessLookupError):
                pass  # ended while we looked
        self.proc.kill()
        self.proc.wait(timeout=5)

    def start_again(self) -> None:
        """Start sshd again on the same port with the same keys (an sshd restarted, a board back)."""
        assert self.argv and not self.alive()
        self.proc = subprocess.Popen(self.argv, env=tagged_env(self.tag), start_new_session=True, stdin=subprocess.DEVNULL)
        wait_port(self.port, START_TIMEOUT_SEC, alive=self.alive, host=self.listen)


DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # sshd's own default for sessions


def start_sshd(root: Path, *, sftp: str = "internal-sftp", listen: str = "127.0.0.1",
               netns: str | None = None) -> SshTestHost:
    """Generate keys under `root`, start sshd on a free port, wait until it accepts.

    `sftp`: the Subsystem command (a fault test gives one that never answers); `listen` and
    `netns`: the address to listen on inside network namespace `netns` (`ip netns exec`)."""
    require_tool(SSHD)
    root.mkdir(parents=True, exist_ok=True)
    host_key = root / "ssh_host_ed25519_key"
    host_key_line = " ".join(keygen(host_key).split()[:2])
    client_key = root / "client_ed25519"
    authorized = root / "authorized_keys"
    authorized.write_text(keygen(client_key) + "\n")
    # sshd refuses to start as root without its privilege-separation directory.
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    tag = new_tag()
    last_error = ""
    for _ in range(3):  # a free port can be taken between probing and binding
        port = free_port()
        host = SshTestHost(
            root=root,
            port=port,
            host_key=host_key,
            host_key_line=host_key_line,
            client_key=client_key,
            known_hosts=root / "known_hosts",
            user=getpass.getuser(),
            tag=tag,
            listen=listen,
        )
        host.known_hosts.write_text(f"{host.host_pattern} {host_key_line}\n")
        log = root / f"sshd-{port}.log"
        argv = [
            SSHD, "-D", "-f", "/dev/null", "-E", str(log),
            "-o", f"Port={port}",
            "-o", f"ListenAddress={listen}",
            "-o", f"HostKey={host_key}",
            "-o", f"AuthorizedKeysFile={authorized}",
            "-o", "StrictModes=no",
            "-o", "PasswordAuthentication=no",
            "-o", "KbdInteractiveAuthentication=no",
            "-o", "PermitRootLogin=prohibit-password",
            "-o", "UsePAM=no",
            "-o", "PidFile=none",
            "-o", "MaxStartups=64",
            "-o", "MaxSessions=64",
            # SHLVL=1 makes the user's bash skip ~/.bashrc for ssh commands: a test that kills a
            # session mid-.bashrc (pyenv's rehash lock, say) must not stall every later login.
            "-o", f"SetEnv={TAG_VAR}={tag} SHLVL=1 PATH={pmic.install(root / 'board-bin')}:{DEFAULT_PATH}",  # pmic.py
            "-o", f"Subsystem=sftp {sftp}",
            "-o", "LogLevel=VERBOSE",  # one "Starting session:" line per session: tests count them
        ]  # fmt: skip
        if netns is not None:
            argv = ["ip", "netns", "exec", netns, *argv]
        host.argv = argv
        host.proc = subprocess.Popen(argv, env=tagged_env(tag), start_new_session=True, stdin=subprocess.DEVNULL)
        try:
            wait_port(port, START_TIMEOUT_SEC, alive=host.alive, host=listen)
            return host
        except (RuntimeError, TimeoutError) as exc:
            host.stop()
            last_error = f"{exc}; log: {log.read_text(errors='replace')[-2000:] if log.exists() else ''}"
            time.sleep(0.1)
    raise RuntimeError(f"sshd did not start: {last_error}")
