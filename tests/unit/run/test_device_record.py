"""run/device_record.py: the one writer of a device's entry, for a device session and for the farm's client."""

from __future__ import annotations

import errno
from pathlib import Path

from device_agents.facts import DeviceFacts
from orchestrator.base.errors import Blame, DeviceError
from orchestrator.results.model import (
    Attempt,
    DeviceResult,
    DeviceStatus,
    JobConfig,
    ModelResult,
    ModelStatus,
    load_manifest,
)
from orchestrator.run.device_record import DeviceRecord
from orchestrator.run.rundir import RunDirectory


def _record(tmp_path: Path, said: list[str] | None = None) -> DeviceRecord:
    rundir = RunDirectory.create(tmp_path / "run", JobConfig(("d",), ("m1.py", "m2.py"), "portable"))
    record = DeviceRecord(rundir, "d", "ssh", "host", (said if said is not None else []).append)
    record.start()
    return record


def test_farm_tasks_of_one_device_fold_into_its_record_with_every_attempt(tmp_path: Path) -> None:
    record = _record(tmp_path)
    record.attempt(Attempt("run m1 run-1", "[d] worker tcp://w1 was lost during this step", "t0"))  # the client's
    first = DeviceResult("d", "ssh", "host", DeviceStatus.OK, facts=DeviceFacts.from_json({"abi": "x"}), runner_key="k",
                         models=(ModelResult("m1", ModelStatus.OK),), attempts=(Attempt("connect", "[d] reset", "t1"),))
    second = DeviceResult("d", "ssh", "host", DeviceStatus.FAILED, error="[d] boom", blame=Blame.INFRASTRUCTURE,
                          facts=DeviceFacts.from_json({"abi": "y"}), models=(ModelResult("m2", ModelStatus.PARTIAL),),
                          attempts=(Attempt("run m2 run-2", "[d] runner exited 7", "t2"),))
    assert record.merge(first).status is DeviceStatus.RUNNING  # ok only once every model is in
    record.merge(second)
    record.merge(DeviceResult("d", "ssh", "host", DeviceStatus.FAILED, error="[d] later", blame=Blame.DATA))
    merged = load_manifest(record.rundir.root).device("d")
    assert merged is not None
    assert [m.name for m in merged.models] == ["m1", "m2"]
    assert merged.facts.to_json() == {"abi": "x"} and merged.runner_key == "k"
    assert [a.step for a in merged.attempts] == ["run m1 run-1", "connect", "run m2 run-2"]  # none lost on the way
    assert (merged.status, merged.error, merged.blame) == (DeviceStatus.FAILED, "[d] boom", Blame.INFRASTRUCTURE)


def test_an_interruption_is_nobody_s_fault_and_the_watchdog_s_end_stays(tmp_path: Path) -> None:
    record = _record(tmp_path)
    ended = record.interrupt()
    assert (ended.status, ended.error, ended.blame) == (DeviceStatus.INTERRUPTED, "[d] interrupted", None)
    assert record.closed and record.set(status=DeviceStatus.OK).status is DeviceStatus.INTERRUPTED

    given_up = _record(tmp_path / "second")
    given_up.close(DeviceStatus.FAILED, "[d] watchdog: no progress", Blame.INFRASTRUCTURE)
    given_up.interrupt()  # the session the watchdog aborted ends `cancelled`: what it records changes nothing
    assert given_up.current.status is DeviceStatus.FAILED and given_up.current.error == "[d] watchdog: no progress"


def test_a_failure_is_recorded_in_one_line_with_its_blame(tmp_path: Path) -> None:
    said: list[str] = []
    record = _record(tmp_path, said)
    assert record.fail_with(DeviceError("d", "link down")).error == "[d] link down"
    full = OSError(errno.ENOSPC, "No space left on device", "/out/stats.csv")
    assert (record.fail_with(full).error, record.current.blame) == ("[d] host disk full: /out/stats.csv",
                                                                    Blame.INFRASTRUCTURE)
    bug = record.fail_with(KeyError("x"))
    assert (bug.error, bug.blame) == ("[d] unexpected KeyError: 'x'", Blame.BUG)
    assert any("Traceback" in line or "KeyError" in line for line in said)  # a bug's traceback is said, to file it
