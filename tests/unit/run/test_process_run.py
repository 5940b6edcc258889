"""run/loop/process_run.py: what happens between a process run cut off by the link and its next try."""

from __future__ import annotations

from typing import Any

import pytest

from device_agents.base import DeviceSpec, ExecResult
from orchestrator.base.errors import DeviceRefused
from orchestrator.run.loop.process_run import prepare_retry


class FakeAgent:
    """Records the calls prepare_retry makes, in order (the real peers are in test_faults.py)."""

    def __init__(self, calls: list[str]) -> None:
        self.spec = DeviceSpec("board", "host", "/w")
        self.calls = calls

    def reconnect(self) -> None:
        self.calls.append("reconnect")

    def remote_path(self, rel: str) -> str:
        return f"/w/{rel}"

    def run(self, argv: list[str], **kwargs: Any) -> ExecResult:
        self.calls.append(f"kill {argv[-1]}")
        return ExecResult(" ".join(argv), 0, "", "", 0.0)


class FakeLock:
    def __init__(self, calls: list[str], lost: bool = False, retaken: bool = False) -> None:
        self.calls, self.lost, self.retaken = calls, lost, retaken

    def revalidate(self) -> bool:
        self.calls.append("revalidate")
        if self.lost:
            raise DeviceRefused("board", "lost the device lock")
        return self.retaken


def test_reconnect_then_the_lock_then_the_left_over_runner() -> None:
    calls: list[str] = []
    prepare_retry(FakeAgent(calls), FakeLock(calls), "out/m/run-2", say=lambda s: None)  # type: ignore[arg-type]
    assert calls == ["reconnect", "revalidate", "kill /w/out/m/run-2.pid"]


def test_a_device_someone_else_now_holds_is_not_touched() -> None:
    calls: list[str] = []
    with pytest.raises(DeviceRefused):
        prepare_retry(FakeAgent(calls), FakeLock(calls, lost=True), "out/m/run-2", say=lambda s: None)  # type: ignore[arg-type]
    assert calls == ["reconnect", "revalidate"]  # no kill: the runner there may be the other job's


def test_a_device_that_lost_its_lock_and_workdir_is_staged_again_first() -> None:
    calls: list[str] = []
    prepare_retry(FakeAgent(calls), FakeLock(calls, retaken=True), "out/m/run-2", say=lambda s: None,  # type: ignore[arg-type]
                  restage=lambda: calls.append("stage"))
    assert calls == ["reconnect", "revalidate", "stage", "kill /w/out/m/run-2.pid"]


def test_the_runners_own_refusal_is_the_whole_error() -> None:
    from orchestrator.run.loop.process_run import RunnerFailed, runner_failure

    line = ("etfarm_runner: error: program '/w/m.pte' method 'forward' needs backends it does not register: "
            "XnnpackBackend (registered: QnnBackend; build the runner against a runtime that has them)")
    reason = runner_failure(line + "\n", 1, False, "d/m/run-1/runner.log")
    assert reason.startswith("program '/w/m.pte'") and reason.endswith("that has them)")
    error = RunnerFailed("phone", "runner (m, run-1)", 1, "tail", reason=reason)
    assert str(error) == f"[phone] runner (m, run-1): {reason}" and "\n" not in str(error)


RUNTIME_LOG = ('ETFARM_BACKENDS ["XnnpackBackend"]\n'
               + "I 00:00:00.020806 executorch:cpuinfo_utils.cpp:71] Reading file /sys/devices/soc0/image_version\n" * 8)


def test_a_failure_line_is_the_runners_last_error_line_not_its_log() -> None:
    """Issue 31: the device's error was ~1 KB of runtime log ending in the runner's own line."""
    from orchestrator.run.loop.process_run import runner_failure

    log = "d/m/run-1/runner.log"
    said = "input 0: inputs file '/w/in.etft' has shape [4, 64] but the method expects [1, 3, 64, 64]"
    assert runner_failure(RUNTIME_LOG + f"etfarm_runner: error: {said}\n", 1, False, log) == said
    assert runner_failure(RUNTIME_LOG + "Segmentation fault\n", 139, False, log) == (
        "exited 139: Segmentation fault (its log: d/m/run-1/runner.log)")
    assert runner_failure(RUNTIME_LOG + f"etfarm_runner: error: {said}\nAborted\n", 134, False, log) == (
        f"exited 134: {said} (its log: d/m/run-1/runner.log)")
    assert runner_failure("", None, True, log) == "timed out (its log: d/m/run-1/runner.log)"


