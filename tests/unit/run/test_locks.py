import subprocess
import sys
import time

import pytest

from orchestrator.errors import DeviceError
from orchestrator.run.locks import device_lock

HOLDER = """
import sys, time
from orchestrator.run.locks import device_lock
with device_lock(sys.argv[1]):
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def hold_lock_in_other_process(name: str, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, name, str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_no_wait_fails_with_holder_named() -> None:
    proc = hold_lock_in_other_process("dev-a", 5)
    try:
        with pytest.raises(DeviceError, match=f"busy: locked by pid {proc.pid}"), device_lock("dev-a", wait=False):
            pass
    finally:
        proc.kill()
        proc.wait()


def test_wait_reports_and_then_gets_the_lock() -> None:
    proc = hold_lock_in_other_process("dev-b", 1.0)
    messages: list[str] = []
    started = time.monotonic()
    with device_lock("dev-b", on_wait=messages.append):
        waited = time.monotonic() - started
    proc.wait()
    assert messages and "waiting for the device lock" in messages[0]
    assert waited > 0.3


def test_lock_is_reusable_after_release() -> None:
    with device_lock("dev-c", wait=False):
        pass
    with device_lock("dev-c", wait=False):
        pass


def test_lock_timeout_gives_up_naming_the_holder_and_the_option() -> None:
    proc = hold_lock_in_other_process("dev-t", 30)
    try:
        started = time.monotonic()
        expected = f"gave up after 1 s waiting for the device lock held by pid {proc.pid} of .*@"
        with pytest.raises(DeviceError, match=expected), device_lock("dev-t", timeout_s=1.0):
            pass
        assert time.monotonic() - started < 10
    finally:
        proc.kill()
        proc.wait()


def test_one_lock_timeout_budget_for_both_locks() -> None:
    from orchestrator.run.locks import budget_left

    assert budget_left(None, 12.0) is None
    assert budget_left(10.0, 4.0) == 6.0
    assert budget_left(10.0, 11.0) == 0.0


def test_device_lock_yields_how_long_it_waited() -> None:
    with device_lock("dev-free", wait=False) as waited:
        assert 0 <= waited < 0.5
    proc = hold_lock_in_other_process("dev-w", 1.0)
    with device_lock("dev-w") as waited:
        assert waited > 0.3
    proc.wait()


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
    from orchestrator.errors import DeviceRefused
    from orchestrator.run.locks import remote_lock
    from orchestrator.run.process_run import LinkLost, RunnerFailed

    raised = {"link": LinkLost("board", "connection lost"), "runner": RunnerFailed("board", "runner", None, "", True),
              "refused": DeviceRefused("board", "lost the device lock")}[error]
    agent = _LockAgent()
    with pytest.raises(type(raised)), remote_lock(agent):  # type: ignore[arg-type]
        raise raised
    assert agent.calls == calls
