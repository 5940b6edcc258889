"""The tries of each farm task, and the ones lost with their worker, recorded as a single host records a lost link.

A device session on one host retries a step when the link fails under it, and records the failed
try as an `Attempt` named after the step (run/device/retry.py: `connect`, `stage`, `run MODEL run-K`).
On a farm the same loss is the worker dying mid-step; Dask then runs the task again elsewhere
(farm/dask.py). So that a farm's manifest lists what a single host's lists, each start of a task on
a worker (a try, with its own token) announces itself and every retried step it starts, as a Dask
event on the run's progress topic (`step_event`; the session's Heartbeat hands the steps over).
The client keeps the step each try is in (`Tries`). A try that did not reply was lost when another
try of the same task starts or replies, or when the task ends without a reply (the device
deadline, Dask giving up after too many losses): each becomes an `Attempt` of the step it was in,
recorded in the device's record.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from orchestrator.results.model import Attempt
from orchestrator.run.device.retry import now_iso

STEP_EVENT = "step"  # the `kind` of a try's announcement on the progress topic
FIRST_STEP = "start"  # a try's step before its first retried one (waiting for the device's host lock, ...)


def step_event(device: str, model: str, token: str, worker: str, step: str) -> dict[str, Any]:
    """Worker side: try `token` of the (device, model) task, on `worker`, starts `step`."""
    return {"kind": STEP_EVENT, "device": device, "model": model, "token": token, "worker": worker, "step": step}


@dataclass(frozen=True)
class _Try:
    worker: str
    step: str


class Tries:
    """Client side: each task's tries seen so far, in the order they started, each at its latest step.
    Announcements arrive on the client's event thread (`offer`); losses are recorded from the collect
    loop, through `record_lost(device, attempt)`."""

    def __init__(self, record_lost: Callable[[str, Attempt], None]) -> None:
        self.record_lost = record_lost
        self._lock = threading.Lock()
        self._tries: dict[tuple[str, str], dict[str, _Try]] = {}  # (device, model) -> token -> where it is
        self._ended: set[tuple[str, str]] = set()

    def offer(self, message: dict[str, Any]) -> bool:
        """From the event handler: True when `message` was a try's announcement (kept)."""
        if message.get("kind") != STEP_EVENT:
            return False
        key = (str(message["device"]), str(message["model"]))
        with self._lock:
            if key not in self._ended:
                self._tries.setdefault(key, {})[str(message["token"])] = _Try(str(message["worker"]),
                                                                             str(message["step"]))
        return True

    def collect(self) -> None:
        """Every try of a task that a later try followed was lost: record them."""
        with self._lock:
            lost = {key: [tries.pop(token) for token in list(tries)[:-1]] for key, tries in self._tries.items()}
        for (device, _), gone in lost.items():
            self._record(device, gone)

    def replied(self, device: str, model: str, token: str) -> None:
        """Try `token` replied: the task's other tries were lost."""
        gone = self._end((device, model))
        self._record(device, [t for tok, t in gone.items() if tok != token])

    def ended(self, device: str, model: str, error: str | None) -> None:
        """The task ended without a reply: its earlier tries were lost; the last one too, with `error`'s
        words, when given (an infrastructure end: the deadline, Dask giving up), else not (a stop, a bug)."""
        gone = list(self._end((device, model)).values())
        self._record(device, gone[:-1])
        if gone and error is not None:
            self.record_lost(device, Attempt(step=gone[-1].step, error=error, at=now_iso()))

    def _end(self, key: tuple[str, str]) -> dict[str, _Try]:
        with self._lock:
            self._ended.add(key)
            return self._tries.pop(key, {})

    def _record(self, device: str, gone: list[_Try]) -> None:
        for lost in gone:
            self.record_lost(device, Attempt(step=lost.step, at=now_iso(),
                                             error=f"[{device}] worker {lost.worker} was lost during this step; "
                                                   "Dask put the task back"))
