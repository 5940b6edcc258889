"""farm/tries.py: a try of a task lost with its worker becomes an attempt of the step it was in."""

from __future__ import annotations

from orchestrator.farm.tries import FIRST_STEP, Tries, step_event
from orchestrator.results.model import Attempt


def _tries() -> tuple[Tries, list[tuple[str, Attempt]]]:
    lost: list[tuple[str, Attempt]] = []
    return Tries(lambda device, attempt: lost.append((device, attempt))), lost


def _steps(tries: Tries, token: str, worker: str, *steps: str) -> None:
    for step in (FIRST_STEP, *steps):
        assert tries.offer(step_event("d", "m", token, worker, step))


def test_a_try_followed_by_another_was_lost_at_its_last_step() -> None:
    tries, lost = _tries()
    assert not tries.offer({"device": "d", "message": "a progress line"})
    _steps(tries, "t1", "tcp://wa", "connect", "stage", "run m run-1")
    tries.collect()
    assert lost == []  # running: nothing is lost yet
    _steps(tries, "t2", "tcp://wb", "connect")  # Dask put the task back, on another worker
    tries.collect()
    assert [(device, a.step) for device, a in lost] == [("d", "run m run-1")]
    assert "worker tcp://wa was lost" in lost[0][1].error and lost[0][1].at
    tries.replied("d", "m", "t2")
    tries.offer(step_event("d", "m", "t2", "tcp://wb", "run m run-2"))  # late: the task has ended
    tries.collect()
    assert len(lost) == 1


def test_a_reply_from_a_later_try_and_an_end_without_one() -> None:
    tries, lost = _tries()
    _steps(tries, "t1", "tcp://wa", "stage")
    tries.replied("d", "m", "t2")  # t2's own announcements never came before its reply: t1 was lost all the same
    assert [a.step for _, a in lost] == ["stage"]

    tries, lost = _tries()
    _steps(tries, "t1", "tcp://wa", "run m run-1")
    _steps(tries, "t2", "tcp://wb", "run m run-2")
    tries.ended("d", "m", "[d] no worker offered the device for 3 s")  # the deadline: t2 was lost too
    assert [(a.step, a.error) for _, a in lost] == [
        ("run m run-1", "[d] worker tcp://wa was lost during this step; Dask put the task back"),
        ("run m run-2", "[d] no worker offered the device for 3 s")]

    tries, lost = _tries()
    _steps(tries, "t1", "tcp://wa", "run m run-1")
    tries.ended("d", "m", None)  # stopped by Ctrl-C, or the task raised: its last try was not lost
    assert lost == []
