import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from orchestrator.base.errors import DeviceError
from orchestrator.run.device.locks import device_lock

HOLDER = """
import sys
from orchestrator.run.device.locks import device_lock
with device_lock(sys.argv[1]):
    print("locked", flush=True)
    sys.stdin.readline()  # held until the test says so (or ends it)
"""


def hold_lock_in_other_process(name: str) -> subprocess.Popen[str]:
    """A process holding `name`'s lock until `release` (or kill)."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, name], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def release_when_waited_on(proc: subprocess.Popen[str], messages: list[str]) -> Callable[[str], None]:
    """An on_wait that tells the holder to let go once the waiter says it waits: the wait is certain, and at least
    one poll (LOCK_POLL_SEC) long, however slow the machine."""

    def on_wait(message: str) -> None:
        messages.append(message)
        if len(messages) == 1:
            assert proc.stdin is not None
            proc.stdin.write("release\n")
            proc.stdin.flush()

    return on_wait


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def test_no_wait_fails_with_holder_named() -> None:
    proc = hold_lock_in_other_process("dev-a")
    try:
        with pytest.raises(DeviceError, match=f"busy: locked by pid {proc.pid}"), device_lock("dev-a", wait=False):
            pass
    finally:
        stop(proc)


def test_wait_reports_and_then_gets_the_lock() -> None:
    proc = hold_lock_in_other_process("dev-b")
    messages: list[str] = []
    try:
        started = time.monotonic()
        with device_lock("dev-b", on_wait=release_when_waited_on(proc, messages), timeout_s=120):
            waited = time.monotonic() - started
        assert proc.wait(timeout=60) == 0  # it let go when told, not when killed
    finally:
        stop(proc)
    assert messages and "waiting for the device lock" in messages[0]
    assert waited > 0.3


def test_lock_is_reusable_after_release() -> None:
    with device_lock("dev-c", wait=False):
        pass
    with device_lock("dev-c", wait=False):
        pass


def test_lock_timeout_gives_up_naming_the_holder_and_the_option() -> None:
    proc = hold_lock_in_other_process("dev-t")
    try:
        started = time.monotonic()
        expected = f"gave up after 1 s waiting for the device lock held by pid {proc.pid} of .*@"
        with pytest.raises(DeviceError, match=expected), device_lock("dev-t", timeout_s=1.0):
            pass
        assert time.monotonic() - started < 10
    finally:
        stop(proc)


def test_one_lock_timeout_budget_for_both_locks() -> None:
    from orchestrator.run.device.locks import budget_left

    assert budget_left(None, 12.0) is None
    assert budget_left(10.0, 4.0) == 6.0
    assert budget_left(10.0, 11.0) == 0.0


def test_device_lock_yields_how_long_it_waited() -> None:
    with device_lock("dev-free", wait=False) as waited:
        assert 0 <= waited < 0.5
    proc = hold_lock_in_other_process("dev-w")
    try:
        with device_lock("dev-w", on_wait=release_when_waited_on(proc, []), timeout_s=120) as waited:
            assert waited > 0.3  # at least one poll: the holder let go only once this waited
        assert proc.wait(timeout=60) == 0
    finally:
        stop(proc)


class _LockAgent:
    """Answers the lock's commands; records reconnects and releases (real sshd: test_device_lock.py)."""

    def __init__(self) -> None:
        from device_agents.base import DeviceSpec

        self.spec = DeviceSpec("board", "host", "/w")
        self.calls: list[str] = []

    def remote_path(self, rel: str) -> str:
        return f"/w/{rel}"

    def check(self, argv: list[str], **kwargs: object) -> object:
        from device_agents.base import ExecResult

        return ExecResult("sh", 0, "TAKEN\n", "", 0.0)

    def reconnect(self) -> None:
        self.calls.append("reconnect")

    def exec_raw(self, command: str, timeout_s: float, **kwargs: object) -> object:
        from device_agents.base import RawExecResult

        self.calls.append("release")
        return RawExecResult(command, 0, b"", b"", 0.0)


@pytest.mark.parametrize(("error", "calls"), [
    ("link", ["reconnect", "release"]),  # the link failed: a new connection first
    ("runner", ["release"]),  # the runner's own failure: the link is fine
    ("refused", ["release"]),
])
def test_release_after_a_failure_reconnects_only_when_the_link_failed(error: str, calls: list[str]) -> None:
    from orchestrator.base.errors import DeviceRefused
    from orchestrator.run.device.locks import remote_lock
    from orchestrator.run.loop.process_run import LinkLost, RunnerFailed

    raised = {"link": LinkLost("board", "connection lost"), "runner": RunnerFailed("board", "runner", None, "", True),
              "refused": DeviceRefused("board", "lost the device lock")}[error]
    agent = _LockAgent()
    with pytest.raises(type(raised)), remote_lock(agent):  # type: ignore[arg-type]
        raise raised
    assert agent.calls == calls


def test_a_wait_for_the_host_lock_says_who_holds_it_and_for_how_long_again_and_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.run.device import locks

    monkeypatch.setattr(locks, "LOCK_WAIT_REPORT_SEC", 0.2)
    monkeypatch.setattr(locks, "LOCK_POLL_SEC", 0.02)
    proc = hold_lock_in_other_process("dev-p")
    messages: list[str] = []
    try:
        with pytest.raises(DeviceError, match="gave up after 2 s"), device_lock("dev-p", on_wait=messages.append,
                                                                                timeout_s=2.0):
            pass
    finally:
        stop(proc)
    assert len(messages) >= 2, messages
    assert re.fullmatch(rf"waiting for the device lock held by pid {proc.pid} of .* for \d+ s", messages[0]), messages
    assert all(re.fullmatch(rf"still waiting \(\d+ s so far, giving up in \d+ s\) for the device lock held by "
                            rf"pid {proc.pid} of .* for \d+ s", m) for m in messages[1:]), messages


def test_a_host_lock_file_that_cannot_be_opened_fails_the_device_naming_it(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.base.errors import DeviceRefused

    monkeypatch.setenv("ETFARM_CACHE_DIR", str(tmp_path))
    (tmp_path / "locks" / "dev-d.lock").mkdir(parents=True)  # a directory where the lock file goes
    with pytest.raises(DeviceRefused, match=rf"\[dev-d\] cannot open the host lock {tmp_path}/locks/dev-d.lock: "
                                            "Is a directory"), device_lock("dev-d"):
        pass


class _AnsweringAgent(_LockAgent):
    """Answers every attempt to take the lock with `answer`."""

    def __init__(self, answer: str) -> None:
        super().__init__()
        self.answer = answer
        self.tries = 0

    def check(self, argv: list[str], **kwargs: object) -> object:
        from device_agents.base import ExecResult

        self.tries += 1
        return ExecResult("sh", 0, self.answer, "", 0.0)


def take(agent: _LockAgent, **options: Any) -> None:
    from orchestrator.run.device.locks import remote_lock

    with remote_lock(agent, **options):  # type: ignore[arg-type]
        pass


@pytest.mark.parametrize(("answer", "reason"), [
    ("FAILED mkdir: cannot create directory '/w/.etfarm-lock': Read-only file system\n", "Read-only file system"),
    ("FAILED mkdir: can't create directory '/w/.etfarm-lock': No space left on device\n", "No space left on device"),
    ("FAILED sh: 1: cannot create /w/.etfarm-lock/holder: No space left on device\n", "No space left on device"),
    ("FAILED it is a file, not a lock\n", "it is a file, not a lock"),
    ("", "unexpected answer ''"),
    ("Welcome to the board!\nHELD 3 host=x\n", "unexpected answer 'Welcome to the board! | HELD 3 host=x'"),
])
def test_a_lock_the_device_cannot_make_fails_at_once_naming_the_lock_and_why(answer: str, reason: str) -> None:
    """Not "an unknown holder (lock 0 s old)" waited for until --lock-timeout (or for ever)."""
    from orchestrator.base.errors import DeviceRefused

    agent = _AnsweringAgent(answer)
    for wait in (True, False):
        with pytest.raises(DeviceRefused, match=re.escape(f"[board] cannot take the device lock /w/.etfarm-lock: "
                                                          f"{reason}")):
            take(agent, wait=wait, timeout_s=2.0)
    assert agent.tries == 2  # one command each: no polling


def test_a_wait_for_the_device_lock_is_reported_again_and_again_until_the_timeout(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.base.errors import DeviceRefused
    from orchestrator.run.device import locks

    monkeypatch.setattr(locks, "LOCK_WAIT_REPORT_SEC", 0.2)
    monkeypatch.setattr(locks, "REMOTE_LOCK_POLL_SEC", 0.02)
    agent = _AnsweringAgent("HELD 75 host=elsewhere pid=1 user=x device=b since=t token=1\n")
    said: list[str] = []
    with pytest.raises(DeviceRefused, match="gave up after 2 s waiting for the lock in workdir /w held by x@elsewhere"):
        take(agent, on_wait=said.append, timeout_s=2.0)
    holder = "the device lock in /w held by x@elsewhere pid 1 as device b since t for 75 s"
    assert len(said) >= 2 and said[0] == f"waiting for {holder}", said
    assert all(re.fullmatch(rf"still waiting \(\d+ s so far, giving up in \d+ s\) for {re.escape(holder)}", s)
               for s in said[1:]), said


def test_a_wait_is_said_when_it_begins_when_the_holder_changes_and_every_interval(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from orchestrator.run.device import locks

    now = [1000.0]
    monkeypatch.setattr(locks.time, "monotonic", lambda: now[0])
    said: list[str] = []
    waiting = locks.LockWait(said.append, timeout_s=100.0)
    for at, holder in [(0, "a"), (10, "a"), (29, "a"), (31, "a"), (40, "a"), (41, "b"), (70, "b"), (72, "b")]:
        now[0] = 1000.0 + at
        waiting.report(holder, f"the lock held by {holder}")
    assert said == ["waiting for the lock held by a",
                    "still waiting (31 s so far, giving up in 69 s) for the lock held by a",
                    "still waiting (41 s so far, giving up in 59 s) for the lock held by b",
                    "still waiting (72 s so far, giving up in 28 s) for the lock held by b"]
    assert not waiting.expired()
    now[0] = 1100.0
    assert waiting.expired()
    unbounded = locks.LockWait(said.append, timeout_s=None)
    unbounded.report("a", "x")
    now[0] += 31
    unbounded.report("a", "x")
    assert said[-1] == "still waiting (31 s so far) for x" and not unbounded.expired()


def test_the_docs_state_how_often_a_wait_is_reported() -> None:
    from orchestrator.run.device import locks
    from tests.helpers.docs_pages import lock_wait_report_s

    assert lock_wait_report_s() == locks.LOCK_WAIT_REPORT_SEC
