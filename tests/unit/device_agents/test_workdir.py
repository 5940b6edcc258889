"""device_agents/workdir.py: the workdir check's refusals are one line with the device's own reason, never
the internal script (the host's /bin/sh plays the device; real read-only workdirs: tests/integration/
test_workdir_faults.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from device_agents.base import DeviceSpec, ExecResult
from device_agents.workdir import check_workdir, device_reason
from orchestrator.base.errors import DeviceError, DeviceRefused
from tests.unit.device_agents.test_base_agent import FakeAgent


def agent_for(workdir: Path) -> FakeAgent:
    return FakeAgent(DeviceSpec("board", "host", str(workdir)))


def test_a_workdir_that_cannot_be_made_is_one_line_with_the_devices_reason(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    workdir = tmp_path / "a-file" / "wd"
    with pytest.raises(DeviceRefused) as refused:
        check_workdir(agent_for(workdir))
    assert str(refused.value) == f"[board] cannot create workdir {workdir}: Not a directory"  # was: the script, a newline


def test_a_good_workdir_is_made_private_and_passes(tmp_path: Path) -> None:
    workdir = tmp_path / "new" / "wd"
    check_workdir(agent_for(workdir))
    assert workdir.is_dir() and workdir.stat().st_mode & 0o777 == 0o700
    assert list(workdir.iterdir()) == []  # the write probe leaves nothing


class AnsweringAgent(FakeAgent):
    """A device whose workdir check answers `answer` (what a read-only or full device says)."""

    def __init__(self, answer: str) -> None:
        super().__init__(DeviceSpec("board", "host", "/data/wd"))
        self.answer = answer

    def _exec(self, command: str, timeout_s: float) -> ExecResult:
        return ExecResult(command, 0, self.answer, "", 0.0)


@pytest.mark.parametrize(("answer", "message"), [
    ("MODES 0 700 0 755 0\nUNWRITABLE mkdir: cannot create directory '/data/wd/.etfarm-probe-7': Read-only file system\n",
     "[board] workdir /data/wd cannot be written (Read-only file system)"),
    ("MODES 2000 700 0 755 2000\nUNWRITABLE mkdir: '/data/wd/.etfarm-probe-7': No space left on device\n",
     "[board] workdir /data/wd cannot be written (No space left on device)"),
    ("CANNOT-CREATE mkdir: can't create directory '/data/wd': Permission denied\n",
     "[board] cannot create workdir /data/wd: Permission denied"),
    ("LINK\n", "[board] workdir /data/wd is a symbolic link"),
    ("MODES 1000 700 0 755 0\nUNWRITABLE mkdir: x: Read-only file system\n", "is owned by uid 1000"),  # owner first
])
def test_each_answer_of_the_device_is_its_own_refusal(answer: str, message: str) -> None:
    with pytest.raises(DeviceRefused) as refused:
        check_workdir(AnsweringAgent(answer))
    assert message in str(refused.value), str(refused.value)
    assert "\n" not in str(refused.value)


def test_an_answer_it_cannot_read_is_a_device_error_in_one_line() -> None:
    with pytest.raises(DeviceError, match=r"could not read the owner and mode of workdir /data/wd: 'motd \| x'"):
        check_workdir(AnsweringAgent("motd\nx\n"))


@pytest.mark.parametrize(("words", "reason"), [
    ("mkdir: cannot create directory ‘/w/x’: Read-only file system", "Read-only file system"),  # coreutils
    ("mkdir: can't create directory '/w/x': No space left on device", "No space left on device"),  # busybox
    ("mkdir: '/w/x': Permission denied\nsecond line", "Permission denied"),  # toybox
    ("sh: 1: cannot create /w/x/holder: No space left on device", "No space left on device"),  # dash
    ("it is a file, not a lock", "it is a file, not a lock"),
    ("\n  \n", "no reason given"),
])
def test_device_reason_is_the_systems_words_after_the_path(words: str, reason: str) -> None:
    assert device_reason(words) == reason
