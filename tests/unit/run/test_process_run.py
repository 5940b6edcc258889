"""run/process_run.py: what happens between a process run cut off by the link and its next try."""

from __future__ import annotations

from typing import Any

import pytest

from device_agents.base import DeviceSpec, ExecResult
from orchestrator.errors import DeviceRefused
from orchestrator.run.process_run import prepare_retry


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
    from orchestrator.run.process_run import RunnerFailed, runner_refusal

    line = ("etfarm_runner: error: program '/w/m.pte' method 'forward' needs backends it does not register: "
            "XnnpackBackend (registered: QnnBackend; build the runner against a runtime that has them)")
    refusal = runner_refusal(line + "\n")
    assert refusal is not None and refusal.startswith("program '/w/m.pte'") and "XnnpackBackend" in refusal
    error = RunnerFailed("phone", "runner (m, run-1)", 1, "", refusal=refusal)
    assert str(error) == f"[phone] runner (m, run-1): {refusal}" and "\n" not in str(error)
    assert runner_refusal("Segmentation fault\n" + line) is None  # anything else keeps the output's tail
    assert runner_refusal("") is None
