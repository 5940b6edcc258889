"""Opening an SFTP session that sshd never answers says so, whichever of its two timers fires first."""

from __future__ import annotations

import logging

import paramiko
import pytest

from device_agents.ssh import sftp as sftp_module
from device_agents.ssh.link import SshLink
from orchestrator.base.errors import DeviceError, said


class OpenLink(SshLink):
    """A link whose transport is there and whose abandonment is recorded, with no server behind it."""

    def __init__(self) -> None:
        super().__init__(paramiko.SSHClient(), "board", logging.getLogger("test"), request_timeout_s=5.0,
                         stall_timeout_s=3.0)
        self.abandoned = False

    def transport(self) -> paramiko.Transport:
        return object()  # type: ignore[return-value]

    def abandon(self) -> None:
        self.abandoned = True


def test_the_version_handshake_timing_out_first_is_no_answer_not_an_empty_error(monkeypatch: pytest.MonkeyPatch) -> None:
    # The channel's stall timeout (3 s) can fire before the request bound (5 s) on a loaded host; paramiko
    # then raises socket.timeout with no message, which read "cannot open an sftp session: " (nothing).
    def silent_server(transport: object, link: SshLink) -> paramiko.SFTPClient:
        raise TimeoutError()

    monkeypatch.setattr(sftp_module, "_open_sftp", silent_server)
    link = OpenLink()
    with pytest.raises(DeviceError) as err:
        sftp_module.SftpSession(link).open()
    assert "opening an sftp session got no answer from sshd within 3 s" in str(err.value)
    assert link.abandoned


@pytest.mark.parametrize(("exc", "words"), [(TimeoutError(), "timed out"), (EOFError(), "EOFError"),
                                            (OSError("reset\nby peer"), "reset | by peer")])
def test_an_error_always_says_something(exc: BaseException, words: str) -> None:
    assert said(exc) == words
