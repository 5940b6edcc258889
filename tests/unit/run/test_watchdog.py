"""job.DeviceThreads: a wedged device thread is given up (the main thread never waits unboundedly)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from orchestrator.run.job import DeviceThreads, watchdog_limit_s
from orchestrator.run.results import DeviceResult, DeviceStatus, JobConfig, RunOptions
from orchestrator.run.rundir import RunDirectory
from orchestrator.run.session import DeviceOutcome


class Spec:
    def __init__(self, name: str) -> None:
        self.name = name


class FakeSession:
    """Quick, or wedged forever (a thread stuck in a transport call that never returns)."""

    def __init__(self, name: str, rundir: RunDirectory, wedged: bool) -> None:
        self.spec = Spec(name)
        self.rundir = rundir
        self.wedged = wedged
        self.abandoned = False
        self.waiting = False
        self.last_progress = time.monotonic()
        self.stats: list[Any] = []
        self.aborted = threading.Event()
        self.said: list[str] = []

    def say(self, text: str) -> None:
        self.said.append(text)

    def abort(self) -> None:
        self.aborted.set()

    def run(self) -> DeviceOutcome:
        self.rundir.add_device(DeviceResult(self.spec.name, "fake", "host", DeviceStatus.RUNNING))
        if self.wedged:
            threading.Event().wait()  # forever: only the daemon flag lets the process exit
        return DeviceOutcome(self.rundir.update_device(self.spec.name, lambda d: d.__class__(
            d.name, d.transport, d.target, DeviceStatus.OK)))


def test_a_wedged_device_is_given_up_and_the_others_finish(tmp_path: Path) -> None:
    rundir = RunDirectory.create(tmp_path / "run", JobConfig(("ok", "stuck"), ("m",), "portable"))
    sessions = [FakeSession("ok", rundir, wedged=False), FakeSession("stuck", rundir, wedged=True)]
    threads = DeviceThreads(sessions, RunOptions(), rundir)  # type: ignore[arg-type]
    threads.limit_s = 1.0  # the real limit is minutes (watchdog_limit_s); the rule is the same
    got: list[dict[str, DeviceOutcome]] = []
    waiter = threading.Thread(target=lambda: got.append(threads.wait()), daemon=True)
    waiter.start()
    waiter.join(1.0 + 3.0)
    assert got, "the main thread still waits for the wedged device"
    outcomes = got[0]
    assert outcomes["ok"].result.status is DeviceStatus.OK
    stuck = outcomes["stuck"].result
    assert stuck.status is DeviceStatus.FAILED and "watchdog" in (stuck.error or "")
    assert sessions[1].abandoned and sessions[1].aborted.wait(2)
    assert rundir.job.device("stuck").status is DeviceStatus.FAILED  # type: ignore[union-attr]


def test_the_limit_covers_a_whole_process_run_step() -> None:
    from device_agents.base import HOST_DEADLINE_GRACE_SEC
    from device_agents.step import STEP_OVERHEAD_SEC

    limit = watchdog_limit_s(RunOptions(run_timeout_s=100))
    assert limit > 100 + STEP_OVERHEAD_SEC + HOST_DEADLINE_GRACE_SEC


def test_waiting_for_another_jobs_lock_is_not_wedged(tmp_path: Path) -> None:
    rundir = RunDirectory.create(tmp_path / "run", JobConfig(("queued",), ("m",), "portable"))
    queued = FakeSession("queued", rundir, wedged=True)
    queued.waiting = True  # device_lock's on_wait said so: another job holds the device
    threads = DeviceThreads([queued], RunOptions(), rundir)  # type: ignore[list-item]
    threads.limit_s = 0.2
    waiter = threading.Thread(target=threads.wait, daemon=True)
    waiter.start()
    waiter.join(1.5)
    assert waiter.is_alive() and not queued.abandoned
