"""run/rundir.py: the job handed on in memory is the job its manifest.json gives back, order included; the
room held back so that a full disk still records how the job ended."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from device_agents.facts import DeviceFacts
from orchestrator.results.conditions import DeviceState
from orchestrator.results.model import (
    DeviceResult,
    DeviceStatus,
    JobConfig,
    ModelArtifacts,
    ModelResult,
    ModelStatus,
    ProcessRun,
    load_manifest,
)
from orchestrator.run.rundir import RunDirectory, as_recorded


def test_the_job_in_memory_reads_as_its_manifest(tmp_path: Path) -> None:
    artifacts = (ModelArtifacts("zz", "zz.py:f", "xnnpack", "k1", "/x/zz.pte"),
                 ModelArtifacts("aa", "aa.py:f", "xnnpack", "k2", "/x/aa.pte"))
    rundir = RunDirectory.create(tmp_path / "run", JobConfig(("zeta", "alpha"), ("zz.py:f", "aa.py:f"), "xnnpack"),
                                 artifacts)
    run = ProcessRun("run-1", True, (1.0, 2.0), slowdown=math.nan, device_state=DeviceState.from_json({"z": 1, "a": 2}))
    for name in ("zeta", "alpha"):  # threads add devices in whatever order they start
        rundir.add_device(DeviceResult(name, "local", "host", DeviceStatus.RUNNING, facts=DeviceFacts.from_json({"z": 1, "a": 2})))
        for model in ("zz", "aa"):
            rundir.update_device(name, lambda d, model=model: d.with_model(ModelResult(model, ModelStatus.OK, (run,))))
    job = rundir.job
    assert [d.name for d in job.devices] == ["zeta", "alpha"]
    recorded, loaded = as_recorded(job), load_manifest(rundir.root)
    assert recorded == loaded
    assert [d.name for d in recorded.devices] == ["alpha", "zeta"] and [m.name for m in recorded.models] == ["aa", "zz"]
    assert [m.name for m in recorded.devices[0].models] == ["aa", "zz"] and list(recorded.devices[0].facts.to_json()) == ["a", "z"]



def test_room_is_held_back_while_the_job_runs_and_given_back_at_its_end(tmp_path: Path) -> None:
    from orchestrator.results.model import JobStatus
    from orchestrator.run.rundir import RESERVE, RESERVE_MIN_BYTES

    rundir = RunDirectory.create(tmp_path / "run", JobConfig(("local",), ("m.py:f",), "xnnpack"))
    reserve = rundir.root / RESERVE
    assert reserve.stat().st_size >= max(RESERVE_MIN_BYTES, 2 * (rundir.root / "manifest.json").stat().st_size)
    rundir.finish(JobStatus.OK)
    assert not reserve.exists() and load_manifest(rundir.root).status is JobStatus.OK


def test_a_disk_that_filled_mid_run_still_gets_the_jobs_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    """While the disk is full (here: while the reserve takes its last bytes) the manifest stays in memory,
    said once; the last write uses the room given back, so the manifest never stays `running`."""
    import errno

    from orchestrator.results.model import JobStatus
    from orchestrator.run import rundir as module

    rundir = RunDirectory.create(tmp_path / "run", JobConfig(("local",), ("m.py:f",), "xnnpack"))
    reserve = rundir.root / module.RESERVE
    real_write = module.write_json_atomic

    def full_while_held_back(path: Path, data: object) -> Path:
        if reserve.exists():
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(path, data)

    monkeypatch.setattr(module, "write_json_atomic", full_while_held_back)
    rundir.add_device(DeviceResult("local", "local", "host", DeviceStatus.RUNNING))
    rundir.update_device("local", lambda d: d)
    assert load_manifest(rundir.root).devices == ()  # not written, kept in memory
    assert len([r for r in caplog.records if "not updated" in r.getMessage()]) == 1  # said once
    rundir.finish(JobStatus.FAILED)
    recorded = load_manifest(rundir.root)
    assert recorded.status is JobStatus.FAILED and [d.name for d in recorded.devices] == ["local"]
