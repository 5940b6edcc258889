"""Retries: transport faults only, within the attempts and the budget, every failure recorded."""

from __future__ import annotations

import pytest

from orchestrator.base.errors import CommandFailed, DataError, DeviceError, DeviceRefused
from orchestrator.results.model import Attempt, DeviceResult, DeviceStatus
from orchestrator.run.device.retry import RetryPolicy, retryable, with_retries

FAST = RetryPolicy(attempts=3, budget_s=10.0, first_wait_s=0.01, max_wait_s=0.02)


def flaky(failures: list[BaseException]) -> tuple[list[int], object]:
    calls: list[int] = []

    def call() -> str:
        calls.append(1)
        if failures:
            raise failures.pop(0)
        return "answer"

    return calls, call


def test_transport_faults_are_retried_and_recorded() -> None:
    recorded: list[Attempt] = []
    reconnects: list[int] = []
    calls, call = flaky([DeviceError("d", "connection reset"), CommandFailed("d", "sh", None, "", False)])
    assert with_retries("stage", call, record=recorded.append, before_retry=lambda: reconnects.append(1),
                        policy=FAST) == "answer"  # type: ignore[arg-type]
    assert len(calls) == 3 and len(reconnects) == 2
    assert [a.step for a in recorded] == ["stage", "stage"] and "connection reset" in recorded[0].error
    assert [a.retried for a in recorded] == [True, True]


def test_a_failure_that_is_not_retried_is_recorded_as_tried_once() -> None:
    """Issue 31: the report said a failed run 'was tried again' when it was tried once."""
    recorded: list[Attempt] = []
    calls, call = flaky([CommandFailed("d", "runner", 1, "crashed", False)])
    with pytest.raises(CommandFailed):
        with_retries("run m run-1", call, record=recorded.append, policy=FAST)  # type: ignore[arg-type]
    assert len(calls) == 1 and [(a.step, a.retried) for a in recorded] == [("run m run-1", False)]


@pytest.mark.parametrize("error", [DeviceRefused("d", "host key unknown"), CommandFailed("d", "sh", 1, "no", False),
                                   DataError("garbage"), ValueError("bug")])
def test_answers_and_non_transport_errors_are_not_retried(error: BaseException) -> None:
    calls, call = flaky([error])
    with pytest.raises(type(error)):
        with_retries("connect", call, record=lambda a: None, policy=FAST)  # type: ignore[arg-type]
    assert len(calls) == 1
    assert not retryable(error)


def test_gives_up_after_the_attempts_with_the_last_error() -> None:
    recorded: list[Attempt] = []
    calls, call = flaky([DeviceError("d", f"reset {i}") for i in range(5)])
    with pytest.raises(DeviceError, match="reset 2"):
        with_retries("connect", call, record=recorded.append, policy=FAST)  # type: ignore[arg-type]
    assert len(calls) == 3 and [a.retried for a in recorded] == [True, True, False]  # the last try ended it


def test_attempts_round_trip_through_the_manifest_dict() -> None:
    device = DeviceResult("b", "ssh", "host", DeviceStatus.OK, attempts=(Attempt("connect", "reset", "2026-01-01T00:00:00+00:00"),))
    again = DeviceResult.from_dict("b", device.to_dict())
    assert again.attempts == device.attempts
    assert DeviceResult.from_dict("b", {"status": "ok"}).attempts == ()  # manifests written before the field


def test_a_model_fault_is_never_retried_a_lost_link_is() -> None:
    from orchestrator.run.loop.process_run import LinkLost, RunnerFailed, RunnerOutputMissing

    crash = RunnerFailed("d", "runner (m, run-2)", 139, "segfault")
    own_deadline = RunnerFailed("d", "runner (m, run-2)", None, "", timed_out=True)  # the runner's --timeout
    for error in (crash, own_deadline, RunnerOutputMissing("d", "runner did not write etdump.etdp")):
        calls, call = flaky([error])
        with pytest.raises(type(error)):
            with_retries("run m run-2", call, record=lambda a: None, policy=FAST)  # type: ignore[arg-type]
        assert len(calls) == 1 and not retryable(error)
    calls, call = flaky([LinkLost("d", "the link failed before the runner's exit status came back")])
    assert with_retries("run m run-2", call, record=lambda a: None, policy=FAST) == "answer"  # type: ignore[arg-type]
    assert len(calls) == 2


def test_the_budget_counts_from_the_first_failure_not_from_the_first_try() -> None:
    """A process run may take longer than the whole budget before its link drops; it still gets its retry."""
    import time

    policy = RetryPolicy(attempts=3, budget_s=0.2, first_wait_s=0.01, max_wait_s=0.02)
    calls: list[int] = []

    def long_then_lost() -> str:
        calls.append(1)
        if len(calls) == 1:
            time.sleep(0.4)  # longer than the budget, then the link fails
            raise DeviceError("d", "connection lost")
        return "answer"

    assert with_retries("run", long_then_lost, record=lambda a: None, policy=policy) == "answer"
    assert len(calls) == 2
    # ...and once the budget after the first failure is spent, no new try starts.
    calls.clear()

    def slow_failures() -> str:
        calls.append(1)
        time.sleep(0.25)
        raise DeviceError("d", "connection lost")

    with pytest.raises(DeviceError):
        with_retries("run", slow_failures, record=lambda a: None, policy=policy)
    assert len(calls) == 2  # the second failure came 0.25 s after the first: over the 0.2 s budget
