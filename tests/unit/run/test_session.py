"""run/engine/session.py: how a device session records a failure it did not expect."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from pathlib import Path

import pytest

from device_agents import DeviceSpec
from orchestrator.artifacts.build import RunnerBuild
from orchestrator.base.errors import Blame
from orchestrator.base.progress import Progress
from orchestrator.results.model import DeviceStatus, JobConfig, JobOptions
from orchestrator.run.device.lease import DeviceLease
from orchestrator.run.engine.session import DeviceSession
from orchestrator.run.executor import JobContext
from orchestrator.run.job_stats import JobStats
from orchestrator.run.plan import JobPlan
from orchestrator.run.rundir import RunDirectory


def test_the_hosts_files_refusing_a_path_fail_the_device_as_infrastructure_not_a_bug(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The run directory turned read-only under a pull, say: one line naming the path, blame infrastructure
    (it used to be `unexpected OSError`, blamed on a bug, with a traceback in the progress)."""
    rundir = RunDirectory.create(tmp_path / "run", JobConfig(("d",), (), "portable"))
    runner = tmp_path / "runner" / "bin" / "etfarm_runner"
    context = JobContext(rundir, JobPlan.fresh(("d",)), (), JobOptions(runs=1),
                         {"host": RunnerBuild("host", "key", runner.parent.parent, runner, (), cached=True)}, {},
                         JobStats(rundir.root, ("d",), []), Progress(quiet=True))
    refused = rundir.root / "d" / "m" / "run-1"

    def read_only(self: DeviceLease) -> Iterator[None]:
        raise OSError(errno.EROFS, "Read-only file system", str(refused))

    monkeypatch.setattr(DeviceLease, "hold", read_only)
    result = DeviceSession(DeviceSpec("d", "host", str(tmp_path / "wd")), context).run()
    assert result.status is DeviceStatus.FAILED and result.blame is Blame.INFRASTRUCTURE, result
    assert result.error == f"[d] {refused}: Read-only file system (on this host)"
