"""Closing a device agent after its link died never raises: the error the user sees is the fault.

Issue: a clean-clone CI went red because closing an SSH agent whose sshd had been SIGKILLed raised
EOFError from `SFTPClient.close()`: paramiko's reader thread had not yet noticed the dead peer, so the
close wrote to a dead socket. Whether it notices first is a race. These tests kill a real sshd (and
the adb test daemon) at each point of an operation, and force the race: paramiko's reader thread is
held at a gate, so the transport still believes the link is up when the agent closes it.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from device_agents import DeviceAgent, create_agent
from orchestrator.base.errors import DeviceError
from orchestrator.emulate.adbserver import AdbTestDevice
from orchestrator.emulate.sshd import SshTestHost
from tests.integration.test_transport_faults import strike_when_moving, timed

GATE_WAIT_SEC = 10.0


class _GatedSocket:
    """Stands in for the socket paramiko's packetizer reads from: `recv` waits at a gate, so the
    transport's reader thread cannot see the peer die. Everything else goes to the real socket."""

    def __init__(self, real: socket.socket) -> None:
        self._real = real
        self.gate = threading.Event()
        self.reader_held = threading.Event()

    def recv(self, n: int) -> bytes:
        self.reader_held.set()
        self.gate.wait(60)
        return self._real.recv(n)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@contextmanager
def reader_held(agent: DeviceAgent) -> Iterator[None]:
    """While the block runs, the ssh transport of `agent` reads nothing: a peer that dies stays 'alive'."""
    transport = agent.connection().link.client.get_transport()  # type: ignore[attr-defined, union-attr]
    packetizer = transport.packetizer
    gated = _GatedSocket(packetizer._Packetizer__socket)
    packetizer._Packetizer__socket = gated
    try:
        # The reader's recv in flight ends within the transport's 0.1 s poll; then it is at the gate.
        assert gated.reader_held.wait(GATE_WAIT_SEC), "paramiko's reader thread never reached the gate"
        yield
    finally:
        gated.gate.set()


def kill_and_provoke_reset(host: SshTestHost, agent: DeviceAgent) -> None:
    """SIGKILL sshd, then send one packet so the kernel answers it with RST: every later write fails."""
    host.kill_server()
    transport = agent.connection().link.client.get_transport()  # type: ignore[attr-defined, union-attr]
    try:
        transport.send_ignore()
    except (OSError, EOFError):
        pass
    deadline = threading.Event()
    deadline.wait(0.2)  # the RST is back long before this on loopback


def open_everything(agent: DeviceAgent) -> None:
    """A device shell and an sftp session open, as in a job between two steps."""
    agent.run(["true"], persistent=True)
    agent.connection().sftp.open()  # type: ignore[attr-defined]


def operation(agent: DeviceAgent, when: str, big: Path, back: Path) -> Callable[[], object]:
    return {
        "push": lambda: agent.stage({"other.bin": big}),
        "pull": lambda: agent.fetch("big.bin", back),
        "command": lambda: agent.check(["sleep", "60"], persistent=True),
    }[when]


@pytest.mark.parametrize("point", ["before", "during", "after"])
@pytest.mark.parametrize("when", ["push", "pull", "command"])
def test_close_after_sshd_killed_at_each_point_never_raises(ssh_server_factory: Callable[..., SshTestHost],
                                                            tmp_path: Path, when: str, point: str) -> None:
    host = ssh_server_factory()
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom((64 if point == "during" else 1) << 20))
    back = tmp_path / "back"
    agent = create_agent(host.spec("killed", tmp_path / "wd"))
    agent.connect()
    agent.stage({"big.bin": big})
    open_everything(agent)
    op = operation(agent, when, big, back)
    error: BaseException | None = None
    if point == "before":
        host.kill_server()
        _, error = timed(op)
    elif point == "during":
        striker = strike_when_moving(when, tmp_path / "wd", back, host.kill_server)
        try:
            _, error = timed(op)
        finally:
            striker.join()
    else:
        if when == "command":
            op = lambda: agent.check(["true"], persistent=True)  # noqa: E731 - one that ends
        _, error = timed(op)
        assert error is None, error
        host.kill_server()
    if point != "after":
        assert isinstance(error, DeviceError), error  # the fault, said as the device's error
    _, close_error = timed(agent.close)
    assert close_error is None, f"close raised {type(close_error).__name__}: {close_error}"


@pytest.mark.parametrize("held_open", ["shell", "sftp", "both"])
def test_close_racing_a_dead_link_never_raises(ssh_server_factory: Callable[..., SshTestHost], tmp_path: Path,
                                               held_open: str) -> None:
    """The race forced: the transport has not seen the peer die when the agent closes it, so every
    close message is written to a dead socket (EOFError inside paramiko)."""
    host = ssh_server_factory()
    agent = create_agent(host.spec("raced", tmp_path / "wd"))
    agent.connect()
    if held_open in ("shell", "both"):
        agent.run(["true"], persistent=True)
    if held_open in ("sftp", "both"):
        agent.connection().sftp.open()  # type: ignore[attr-defined]
    with reader_held(agent):
        kill_and_provoke_reset(host, agent)
        assert agent.connection().link.client.get_transport().is_active()  # type: ignore[attr-defined]  (the race is on)
        _, close_error = timed(agent.close)
    assert close_error is None, f"close raised {type(close_error).__name__}: {close_error}"


def test_reconnect_after_a_dead_link_reports_the_connect_failure(ssh_server_factory: Callable[..., SshTestHost],
                                                                 tmp_path: Path) -> None:
    """A retry reconnects: the dead connection's close must not hide why the new one failed."""
    host = ssh_server_factory()
    agent = create_agent(host.spec("gone", tmp_path / "wd", connect_timeout=3))
    agent.connect()
    open_everything(agent)
    with reader_held(agent):
        kill_and_provoke_reset(host, agent)
        _, error = timed(agent.reconnect)
    assert isinstance(error, DeviceError) and "cannot connect" in str(error), error
    agent.close()


@pytest.mark.parametrize("point", ["before", "after"])
def test_adb_close_after_daemon_killed_never_raises(adb_device_factory: Callable[[], AdbTestDevice], tmp_path: Path,
                                                    point: str) -> None:
    device = adb_device_factory()
    small = tmp_path / "small.bin"
    small.write_bytes(os.urandom(1 << 16))
    agent = create_agent(device.spec("dying"))
    agent.connect()
    agent.stage({"small.bin": small})
    if point == "before":
        device.kill()
        _, error = timed(lambda: agent.fetch("small.bin", tmp_path / "back"))
        assert isinstance(error, DeviceError), error
    else:
        agent.fetch("small.bin", tmp_path / "back")
        device.kill()
    _, close_error = timed(agent.close)
    assert close_error is None, close_error
