"""rundir.as_recorded: the job handed on in memory is the job its manifest.json gives back, order included."""

from __future__ import annotations

import math
from pathlib import Path

from device_agents.facts import DeviceFacts
from orchestrator.run.conditions import DeviceState
from orchestrator.run.results import (
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
