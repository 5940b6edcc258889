"""The real adb server on a test port, and device daemons attached to it with `adb connect`."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from device_agents.adb.settings import AdbSettings
from device_agents.base import DeviceSpec

from . import free_port, kill_tagged, new_tag, require_tool, tagged_env

DAEMON_SCRIPT = Path(__file__).with_name("adb_daemon.py")
START_TIMEOUT_SEC = 15.0


@dataclass
class AdbTestServer:
    """`adb -P <port> start-server`, with HOME and TMPDIR (keys, log) inside `root`."""

    adb: str
    port: int
    root: Path
    tag: str

    def env(self) -> dict[str, str]:
        return tagged_env(self.tag, HOME=str(self.root), TMPDIR=str(self.root), ANDROID_ADB_SERVER_PORT=str(self.port))

    def cmd(self, *args: str, timeout_s: float = 20.0) -> subprocess.CompletedProcess[str]:
        """Run the adb client against this server."""
        return subprocess.run(
            [self.adb, "-P", str(self.port), *args],
            env=self.env(), capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    def stop(self) -> None:
        try:
            self.cmd("kill-server", timeout_s=10)
        except subprocess.TimeoutExpired:
            pass
        kill_tagged(self.tag)


def start_adb_server(root: Path) -> AdbTestServer:
    adb = require_tool("adb")
    root.mkdir(parents=True, exist_ok=True)
    last = ""
    for _ in range(3):
        server = AdbTestServer(adb=adb, port=free_port(), root=root, tag=new_tag())
        try:
            result = server.cmd("start-server", timeout_s=START_TIMEOUT_SEC)
            if result.returncode == 0 and server.cmd("version").returncode == 0:
                return server
            last = result.stdout + result.stderr
        except subprocess.TimeoutExpired as exc:
            last = str(exc)
        server.stop()
    raise RuntimeError(f"adb server did not start: {last}")


@dataclass
class AdbTestDevice:
    """A device daemon (its shell runs on this host, cwd `root`) attached to `server`."""

    server: AdbTestServer
    root: Path
    port: int
    tag: str
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    launch: tuple[str, ...] = ()  # the daemon's argv without --port (see start_adb_device)

    @property
    def serial(self) -> str:
        return f"127.0.0.1:{self.port}"

    def spec(
        self,
        name: str,
        workdir: str | Path | None = None,
        *,
        target: str = "host",
        exec_prefix: Sequence[str] = (),
        **settings: object,
    ) -> DeviceSpec:
        """A DeviceSpec for this device; the workdir defaults to `root/etfarm`."""
        return DeviceSpec(
            name=name,
            target=target,
            workdir=str(workdir if workdir is not None else self.root / "etfarm"),
            exec_prefix=tuple(exec_prefix),
            settings=AdbSettings(**{"serial": self.serial, "adb_host": "127.0.0.1", "adb_port": self.server.port,  # type: ignore[arg-type]
                                    **settings}),
            source=f"<testbed adb device {self.serial}>",
        )

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        """The device dies: SIGKILL the daemon and every command it started."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=5)
        if self.proc is not None and self.proc.stdout is not None:
            self.proc.stdout.close()
        kill_tagged(self.tag)

    def restart(self) -> None:
        """The daemon dies (with every command it started) and comes back on the same port and
        folder, as adbd restarting on a board; the adb server is told to connect to it again."""
        self.kill()
        self.proc = subprocess.Popen(
            [*self.launch, "--port", str(self.port)],
            stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=tagged_env(self.tag), start_new_session=True,
        )  # fmt: skip
        _read_port(self.proc, START_TIMEOUT_SEC)
        deadline = time.monotonic() + START_TIMEOUT_SEC
        while self.server.cmd("-s", self.serial, "get-state").stdout.strip() != "device":
            if time.monotonic() > deadline or not self.alive():
                raise RuntimeError(f"{self.serial} never came back to state 'device'")
            self.server.cmd("connect", self.serial)
            time.sleep(0.1)

    def stop(self) -> None:
        self.kill()
        try:
            self.server.cmd("disconnect", self.serial, timeout_s=10)
        except subprocess.TimeoutExpired:
            pass


def start_adb_device(server: AdbTestServer, root: Path, *, wrapper: Sequence[str] = (),
                     daemon_args: Sequence[str] = ()) -> AdbTestDevice:
    """Start a daemon on a free port, `adb connect` it, wait until its state is `device`.

    `wrapper`: argv words the daemon runs under (e.g. `unshare --mount`); `daemon_args`: its extra flags."""
    root.mkdir(parents=True, exist_ok=True)
    tag = new_tag()
    launch = (*wrapper, sys.executable, str(DAEMON_SCRIPT), "--root", str(root), *daemon_args)
    proc = subprocess.Popen(
        launch, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=tagged_env(tag), start_new_session=True,
    )  # fmt: skip
    device = AdbTestDevice(server=server, root=root, port=0, tag=tag, proc=proc, launch=launch)
    try:
        device.port = _read_port(proc, START_TIMEOUT_SEC)
        result = server.cmd("connect", device.serial)
        if "connected to" not in result.stdout:
            raise RuntimeError(f"adb connect {device.serial}: {result.stdout}{result.stderr}")
        deadline = time.monotonic() + START_TIMEOUT_SEC
        while server.cmd("-s", device.serial, "get-state").stdout.strip() != "device":
            if time.monotonic() > deadline or not device.alive():
                raise RuntimeError(f"{device.serial} never reached state 'device'")
            time.sleep(0.05)
    except BaseException:
        device.stop()
        raise
    return device


def _read_port(proc: subprocess.Popen[bytes], timeout_s: float) -> int:
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout_s
    line = b""
    while not line.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            raise TimeoutError("adb device daemon did not report its port")
        chunk = os.read(fd, 64)
        if not chunk:
            raise RuntimeError(f"adb device daemon exited ({proc.wait()}) before listening")
        line += chunk
    words = line.split()
    if len(words) != 2 or words[0] != b"PORT":
        raise RuntimeError(f"unexpected daemon output {line!r}")
    return int(words[1])
