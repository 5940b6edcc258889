"""One device's entry in the job's manifest, and the only way it changes (docs/architecture.md, "The job engine").

The device session (this host, and a farm task on its worker) and the farm executor (the client)
all record through a `DeviceRecord`: the device starts (or, resumed, starts again keeping its
models and facts), gains models, facts and failed attempts, and ends once: `succeed` (the
per-device rule of run/status.py: ok or wrong results), `fail` (`fail_with`: an error in one
line, with its blame), or, from outside its work, `close` (the watchdog giving a wedged device
up) or `interrupt` (Ctrl-C). After those two nothing more is recorded: a late thread changes
nothing. On a farm, each task's reply (the worker's record of this device for one model) is
folded in by `merge`, its failed attempts after the ones already recorded.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from orchestrator.base.errors import Blame, EtfarmError, blame_of, disk_full, environment_problem
from orchestrator.results.model import Attempt, DeviceResult, DeviceStatus, ModelResult
from orchestrator.run.rundir import RunDirectory
from orchestrator.run.status import ended_device, interrupted_device

log = logging.getLogger(__name__)


class DeviceRecord:
    def __init__(self, rundir: RunDirectory, name: str, transport: str, target: str, say: Callable[[str], None],
                 emulated: bool = False) -> None:
        self.rundir = rundir
        self.emulated = emulated
        self.name = name
        self.transport = transport
        self.target = target
        self.say = say
        self._closed = False
        self._lock = threading.Lock()  # a change and `close` never interleave

    @property
    def closed(self) -> bool:
        """The device's end is recorded by someone else (the watchdog, a stop): later changes are dropped."""
        return self._closed

    @property
    def current(self) -> DeviceResult:
        return self.rundir.job.device(self.name) or DeviceResult(self.name, self.transport, self.target,
                                                                 emulated=self.emulated)

    def start(self) -> None:
        """Running: a new device, or a recorded one running again (resumed: its models and facts stay)."""
        if self.rundir.job.device(self.name) is not None:
            self.update(lambda d: replace(d, status=DeviceStatus.RUNNING, error=None, blame=None))
        else:
            self.rundir.add_device(DeviceResult(self.name, self.transport, self.target, DeviceStatus.RUNNING,
                                                emulated=self.emulated))

    def update(self, change: Callable[[DeviceResult], DeviceResult]) -> DeviceResult:
        with self._lock:
            if self._closed:
                return self.current
            return self.rundir.update_device(self.name, change)

    def set(self, **changes: Any) -> DeviceResult:
        return self.update(lambda d: replace(d, **changes))

    def model(self, result: ModelResult) -> None:
        self.update(lambda d: d.with_model(result))

    def attempt(self, attempt: Attempt) -> None:
        self.update(lambda d: replace(d, attempts=(*d.attempts, attempt)))

    def succeed(self) -> DeviceResult:
        """The device's work ended without a failure: ok, or wrong results (said)."""
        ended = self.update(ended_device)
        if ended.status is DeviceStatus.WRONG_RESULTS and not self._closed:
            self.say(f"WRONG RESULTS: {ended.wrong_results()}")
        return ended

    def fail(self, message: str, blame: Blame | None) -> DeviceResult:
        self.say(f"FAILED: {message}")
        return self.set(status=DeviceStatus.FAILED, error=message, blame=blame)

    def fail_with(self, exc: BaseException) -> DeviceResult:
        """The device failed with `exc`, said in one line: the host disk full or a host path refused
        (read-only, no permission: infrastructure, the environment, never a bug), an etfarm error (its own
        blame), anything else a bug (its traceback said, so it can be filed)."""
        full = disk_full(exc)
        if full is not None:
            return self.fail(f"[{self.name}] host disk full: {full or self.rundir.root}", Blame.INFRASTRUCTURE)
        if isinstance(exc, EtfarmError):
            return self.fail(str(exc), blame_of(exc))
        problem = environment_problem(exc)
        if problem is not None:
            return self.fail(f"[{self.name}] {problem}", Blame.INFRASTRUCTURE)
        log.debug("unexpected error on %s", self.name, exc_info=exc)
        self.say("".join(traceback.format_exception(exc)))
        return self.fail(f"[{self.name}] unexpected {type(exc).__name__}: {exc}", Blame.BUG)

    def merge(self, task: DeviceResult) -> DeviceResult:
        """A farm task's record of this device (one model) folded in: its model, the first facts and controls,
        its runner, its failed attempts after the recorded ones; a failed task fails the device (the first
        failure is the one kept). The device ends (`succeed`) when its last task is in."""
        return self.update(lambda d: folded(d, task))

    def close(self, status: DeviceStatus, message: str, blame: Blame | None) -> DeviceResult:
        """Record the device's end from outside its work (the watchdog); nothing is recorded after it."""
        return self._close(lambda d: replace(d, status=status, error=message, blame=blame))

    def interrupt(self) -> DeviceResult:
        """Ctrl-C or SIGTERM stopped the device (run/status.py: no blame); nothing is recorded after it."""
        return self._close(interrupted_device)

    def _close(self, change: Callable[[DeviceResult], DeviceResult]) -> DeviceResult:
        with self._lock:
            if self._closed:  # the first end recorded from outside stays (the watchdog's, then its abort's)
                return self.current
            self._closed = True
            return self.rundir.update_device(self.name, change)


def folded(current: DeviceResult, task: DeviceResult) -> DeviceResult:
    """`current` with one farm task's result of the same device folded in (DeviceRecord.merge)."""
    merged = current
    for model in task.models:
        merged = merged.with_model(model)
    merged = replace(merged, facts=current.facts or task.facts, runner_key=task.runner_key or current.runner_key,
                     controls=current.controls or task.controls, attempts=(*current.attempts, *task.attempts))
    if task.status is DeviceStatus.FAILED and current.status is not DeviceStatus.FAILED:
        merged = replace(merged, status=DeviceStatus.FAILED, error=task.error, blame=task.blame)
    return merged
