"""One device's entry in the job's manifest, and the only way it changes (docs/architecture.md, "The job engine").

The device session (this host) and the farm executor (Dask tasks) both record through a
`DeviceRecord`: the device starts (or, resumed, starts again keeping its models and facts),
gains models, facts and failed attempts, and ends once: `succeed` (the per-device rule of
run/status.py: ok or wrong results), `fail`, or `close` (the watchdog giving a wedged device up,
Ctrl-C stopping it). After `close` nothing more is recorded: a late thread changes nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from orchestrator.errors import Blame
from orchestrator.run.results import Attempt, DeviceResult, DeviceStatus, ModelResult
from orchestrator.run.rundir import RunDirectory
from orchestrator.run.status import ended_device


class DeviceRecord:
    def __init__(self, rundir: RunDirectory, name: str, transport: str, target: str, say: Callable[[str], None]) -> None:
        self.rundir = rundir
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
        return self.rundir.job.device(self.name) or DeviceResult(self.name, self.transport, self.target)

    def start(self) -> None:
        """Running: a new device, or a recorded one running again (resumed: its models and facts stay)."""
        if self.rundir.job.device(self.name) is not None:
            self.update(lambda d: replace(d, status=DeviceStatus.RUNNING, error=None, blame=None))
        else:
            self.rundir.add_device(DeviceResult(self.name, self.transport, self.target, DeviceStatus.RUNNING))

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

    def close(self, status: DeviceStatus, message: str, blame: Blame | None) -> DeviceResult:
        """Record the device's end from outside its work (watchdog, stop); nothing is recorded after it."""
        with self._lock:
            self._closed = True
            return self.rundir.update_device(self.name, lambda d: replace(d, status=status, error=message, blame=blame))
