"""Retries of idempotent device steps, for infrastructure errors only.

A device farm drops links, reboots boards and restarts adbd; one refused or reset connection
must not fail a night's job. So the idempotent steps of a session (connect, stage) are tried
again with exponential backoff inside a time budget (tenacity). Retried: a `DeviceError` that
is a transport fault (connection refused/reset/lost, a deadline, a device gone offline, a
command that ended without an exit status). Never retried: a `DeviceRefused` (host key, login,
workdir, another host's lock), a command that answered with an exit code (the device said no),
a runner that failed, wrong results, usage and data errors. Every failed try is handed to
`record` as an `Attempt`, so the manifest shows what happened and `etfarm devices` can say
"degraded". A process run is retried the same way when the transport failed under it (the link
dropped, sshd or adbd restarted, a stalled link met its host deadline); what the runner did
itself (`ModelFault`: it crashed, exited non-zero, met its device-side `--timeout`, wrote no
ETDump) is the model's business and never retried.

The budget counts from the first failure, not from the first try: a process run may take
minutes before the link drops, and that must not leave its retry no time at all.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar

from tenacity import RetryCallState, Retrying, retry_if_exception, wait_exponential

from orchestrator.base.errors import CommandFailed, DeviceError, DeviceRefused, one_line
from orchestrator.results.model import Attempt

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """At most `attempts` tries, none started `budget_s` after the first failure; waits 1, 2, 4… s
    capped at `max_wait_s`."""

    attempts: int = 3
    budget_s: float = 60.0
    first_wait_s: float = 1.0
    max_wait_s: float = 10.0


DEFAULT_POLICY = RetryPolicy()


class ModelFault:
    """Mixed into an error that the model or its runner caused (a crash, an exit code, the runner's
    own deadline, missing outputs): another try would meet it again, so it is never retried."""


def retryable(exc: BaseException) -> bool:
    """Whether `exc` is a transport fault that another try may not meet."""
    if isinstance(exc, (DeviceRefused, ModelFault)) or not isinstance(exc, DeviceError):
        return False
    if isinstance(exc, CommandFailed):
        # An exit code is the device's answer; none (or a deadline) means the link or device failed.
        return exc.returncode is None
    return True


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def with_retries(step: str, call: Callable[[], T], *, record: Callable[[Attempt], None],
                 before_retry: Callable[[], None] = lambda: None, say: Callable[[str], None] = lambda s: None,
                 policy: RetryPolicy = DEFAULT_POLICY) -> T:
    """`call()`, tried again after a retryable failure (`before_retry()` first, e.g. reconnect).

    Every failure is recorded, saying whether it was tried again; the last one is raised when the
    attempts or the budget (from the first failure) run out, or at once when it is not retryable."""
    first_failure: list[float] = []

    def failed(exc: BaseException) -> bool:
        if not first_failure:
            first_failure.append(time.monotonic())
        return retryable(exc)

    def note(exc: BaseException | None, retried: bool) -> None:
        if isinstance(exc, DeviceError):
            record(Attempt(step=step, error=one_line(str(exc))[:500], at=now_iso(), retried=retried))

    def retrying_now(state: RetryCallState) -> None:  # tenacity calls it only when another try follows
        exc = state.outcome.exception() if state.outcome else None
        note(exc, retried=True)
        say(f"{step} failed (try {state.attempt_number}/{policy.attempts}), retrying: {one_line(str(exc))[:200]}")

    def stop(state: RetryCallState) -> bool:
        spent = time.monotonic() - first_failure[0] if first_failure else 0.0
        return state.attempt_number >= policy.attempts or spent >= policy.budget_s

    retrying = Retrying(
        stop=stop,
        wait=wait_exponential(multiplier=policy.first_wait_s, min=policy.first_wait_s, max=policy.max_wait_s),
        retry=retry_if_exception(failed),
        before_sleep=retrying_now,
        reraise=True,
    )
    try:
        for attempt in retrying:
            with attempt:
                if attempt.retry_state.attempt_number > 1:
                    before_retry()
                return call()
    except DeviceError as exc:  # the failure that ends the step: not tried again
        note(exc, retried=False)
        raise
    raise AssertionError("unreachable: tenacity reraises the last error")  # pragma: no cover
