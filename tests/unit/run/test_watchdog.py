"""local_executor.DeviceThreads: a wedged device thread is given up (the main thread never waits unboundedly)."""

from __future__ import annotations

import threading
from pathlib import Path

from orchestrator.results.model import DeviceResult, DeviceStatus, JobConfig, JobOptions
from orchestrator.run.device.heartbeat import Heartbeat
from orchestrator.run.device_record import DeviceRecord
from orchestrator.run.engine.local_executor import DeviceThreads, watchdog_limit_s
from orchestrator.run.rundir import RunDirectory


class FakeSession:
    """Quick, or wedged forever (a thread stuck in a transport call that never returns)."""

    def __init__(self, name: str, rundir: RunDirectory, wedged: bool) -> None:
        self.name = name
        self.said: list[str] = []
        self.record = DeviceRecord(rundir, name, "fake", "host", self.said.append)
        self.heartbeat = Heartbeat()
        self.wedged = wedged
        self.aborted = threading.Event()

    def say(self, text: str) -> None:
        self.said.append(text)

    def abort(self) -> None:
        self.aborted.set()

    def run(self) -> DeviceResult:
        self.record.start()
        if self.wedged:
            threading.Event().wait()  # forever: only the daemon flag lets the process exit
        return self.record.set(status=DeviceStatus.OK)


def test_a_wedged_device_is_given_up_and_the_others_finish(tmp_path: Path) -> None:
    rundir = RunDirectory.create(tmp_path / "run", JobConfig(("ok", "stuck"), ("m",), "portable"))
    sessions = [FakeSession("ok", rundir, wedged=False), FakeSession("stuck", rundir, wedged=True)]
    threads = DeviceThreads(sessions, limit_s=1.0)  # the real limit is minutes (watchdog_limit_s); the rule is the same
    threads.start()
    got: list[dict[str, DeviceResult]] = []
    waiter = threading.Thread(target=lambda: got.append(threads.wait()), daemon=True)
    waiter.start()
    waiter.join(1.0 + 3.0)
    assert got, "the main thread still waits for the wedged device"
    results = got[0]
    assert results["ok"].status is DeviceStatus.OK
    stuck = results["stuck"]
    assert stuck.status is DeviceStatus.FAILED and "watchdog" in (stuck.error or "")
    assert sessions[1].record.closed and sessions[1].aborted.wait(2)
    assert rundir.job.device("stuck").status is DeviceStatus.FAILED  # type: ignore[union-attr]
    sessions[1].record.set(status=DeviceStatus.OK)  # a late thread changes nothing once given up
    assert rundir.job.device("stuck").status is DeviceStatus.FAILED  # type: ignore[union-attr]


def test_the_limit_covers_a_whole_process_run_step() -> None:
    from device_agents.base import HOST_DEADLINE_GRACE_SEC
    from device_agents.step import STEP_OVERHEAD_SEC

    limit = watchdog_limit_s(JobOptions(run_timeout_s=100))
    assert limit > 100 + STEP_OVERHEAD_SEC + HOST_DEADLINE_GRACE_SEC


def test_waiting_for_another_jobs_lock_is_not_wedged(tmp_path: Path) -> None:
    rundir = RunDirectory.create(tmp_path / "run", JobConfig(("queued",), ("m",), "portable"))
    queued = FakeSession("queued", rundir, wedged=True)
    queued.heartbeat.wait_for_lock()  # device_lock's on_wait said so: another job holds the device
    threads = DeviceThreads([queued], limit_s=0.2)
    threads.start()
    waiter = threading.Thread(target=threads.wait, daemon=True)
    waiter.start()
    waiter.join(1.5)
    assert waiter.is_alive() and not queued.record.closed
