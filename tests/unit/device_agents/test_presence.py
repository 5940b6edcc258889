"""device_agents/presence.py: each transport's settings say whether its device is there (real sockets)."""

from __future__ import annotations

import socket

from device_agents.spec import LocalSettings
from device_agents.ssh.settings import SshSettings
from tests.helpers.fake_adb import serve_once


def test_an_ssh_device_is_there_when_its_server_speaks_the_banner_and_a_failed_check_never_raises() -> None:
    port = serve_once(b"SSH-2.0-OpenSSH_9.2\r\n", request_first=False)
    assert SshSettings("127.0.0.1", key="k", port=port).presence.present() is True
    port = serve_once(b"HTTP/1.1 400\r\n", request_first=False)
    assert SshSettings("127.0.0.1", key="k", port=port).presence.present() is False
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        closed = free.getsockname()[1]
    assert SshSettings("127.0.0.1", key="k", port=closed).presence.present() is False
    assert LocalSettings().presence.present() is True
