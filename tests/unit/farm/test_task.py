"""farm/task.py: a task carries how its runner starts (the runtime, the bundled loader), not only its files.

The job runs on the fake farm of tests/unit/run/test_job_status.py (tasks reply at once); what matters here is the
request the client submits, and the RunnerBuild the worker makes of it after Dask pickled it.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from orchestrator.artifacts.build import RunnerBuild
from orchestrator.farm.dask import FarmDevice, FarmOptions
from orchestrator.farm.executor import FarmExecutor
from orchestrator.farm.task import TaskRequest, task_build
from orchestrator.results.model import DeviceStatus
from tests.unit.run.test_job_status import FakeFarm, _run, stubbed  # noqa: F401 - `stubbed` is a fixture

LAUNCHER = ("./lib/ld-linux-aarch64.so.1", "--library-path", "./lib")


class RecordingFarm(FakeFarm):
    def __init__(self, ends: dict[str, str]) -> None:
        super().__init__(ends)
        self.requests: list[TaskRequest] = []

    def submit(self, request: TaskRequest, attempt: int = 0) -> tuple[str, str]:
        self.requests.append(request)
        return super().submit(request, attempt)


def test_the_task_carries_the_runtime_and_the_worker_starts_the_runner_through_its_loader(
        tmp_path: Path, stubbed: Callable[[bool], None], monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    stubbed(False)
    runner = tmp_path / "runner" / "bin" / "etfarm_runner"
    bundled = RunnerBuild("host", "runner-key", runner.parent.parent, runner, (), cached=True, runtime="bundled-glibc",
                          launcher=LAUNCHER, bundled=("ld-linux-aarch64.so.1", "libc.so.6"), executorch_dir="/et/share/cmake",
                          backends=("XnnpackBackend",))
    monkeypatch.setattr("orchestrator.run.engine.job.build_runner", lambda target, log, runtime=None: bundled)
    farm = RecordingFarm({"phone": "ok"})
    _run(FarmExecutor(FarmOptions("tcp://fake:8786"), farm=farm), ["phone"], tmp_path / "run")
    (request,) = farm.requests
    assert request.runtime == bundled.info

    shipped = pickle.loads(pickle.dumps(request))  # as Dask sends it
    on_worker = tmp_path / "worker" / "runner" / "bin" / "etfarm_runner"
    build = task_build(shipped, on_worker, (on_worker.parent.parent / "lib" / "libc.so.6",))
    assert build.info == bundled.info and build.root == on_worker.parent.parent and build.key == "runner-key"
    assert build.start_words("/data/local/tmp/etfarm") == [
        "/data/local/tmp/etfarm/lib/ld-linux-aarch64.so.1", "--library-path", "/data/local/tmp/etfarm/lib",
        "/data/local/tmp/etfarm/bin/etfarm_runner"]
    assert build.env("/data/local/tmp/etfarm") == {}, "the loader is told --library-path; no LD_LIBRARY_PATH"


class RuntimeFarm(RecordingFarm):
    def devices(self) -> dict[str, FarmDevice]:
        return {name: replace(device, runtime="/opt/et") for name, device in super().devices().items()}


def test_the_runner_is_looked_up_as_it_was_stored_by_runner_slot(
        tmp_path: Path, stubbed: Callable[[bool], None]) -> None:  # noqa: F811
    stubbed(False)
    farm = RuntimeFarm({"board": "ok"})  # a device whose runner is built against the user's runtime
    result = _run(FarmExecutor(FarmOptions("tcp://fake:8786"), farm=farm), ["board"], tmp_path / "run")
    assert result.job.device("board").status is DeviceStatus.OK  # type: ignore[union-attr]
    (request,) = farm.requests
    assert request.runner_key == "runner-key"
