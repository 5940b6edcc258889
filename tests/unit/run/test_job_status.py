"""The job's status rule, ONE table of cases, through the engine with each executor (devices faked).

Each case says how every device ends (ok, wrong results, failed, or Ctrl-C while it runs) and
whether the host disk is full when stats.csv is written; the job must end with the same status
and exit code, each device's session having run once, on this host (LocalExecutor, fake device
sessions in real threads), on a fake farm (FarmExecutor, a stand-in for Dask whose tasks reply
at once), and on a real one (FarmExecutor, a real Dask scheduler and two real Dask workers in this
process, so the fake sessions run inside real tasks: submitted, placed by resource, pickled, their
replies, failures and the stop event going through Dask). Only the devices are fake: export and
builds are stubbed, the engine, the run directory, the records and stats.csv are the real ones.
"""

from __future__ import annotations

import _thread
import asyncio
import collections
import contextlib
import errno
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from device_agents import DeviceSpec
from orchestrator.artifacts.build import RunnerBuild
from orchestrator.artifacts.lowering import ExportedModel
from orchestrator.artifacts.modelspec import ModelSpec
from orchestrator.base.errors import Blame
from orchestrator.base.progress import Progress
from orchestrator.farm import resource_name
from orchestrator.farm import task as farm_task
from orchestrator.farm.blobs import ShipReport
from orchestrator.farm.dask import FarmDevice, FarmOptions
from orchestrator.farm.executor import FarmExecutor
from orchestrator.farm.task import TaskReply, TaskRequest
from orchestrator.profiles.stat_rows import ModelStats, StatRow
from orchestrator.results.model import (
    DeviceResult,
    DeviceStatus,
    JobOptions,
    JobStatus,
    ModelResult,
    ModelStatus,
    Verification,
    VerificationStatus,
    load_manifest,
)
from orchestrator.run import job_stats
from orchestrator.run.device.heartbeat import Heartbeat
from orchestrator.run.engine import job as engine
from orchestrator.run.engine import local_executor
from orchestrator.run.engine.job import JobResult, run_job_on
from orchestrator.run.engine.local_executor import LocalExecutor
from orchestrator.run.executor import JobContext
from tests.helpers.pte_programs import forward_program

# (how each device ends, host disk full at stats.csv) -> (the job's status, its exit code)
CASES = [
    (("ok",), False, JobStatus.OK, 0),
    (("ok", "ok"), False, JobStatus.OK, 0),
    (("ok", "failed"), False, JobStatus.PARTIAL, 1),
    (("failed", "failed"), False, JobStatus.FAILED, 1),
    (("ok", "wrong"), False, JobStatus.PARTIAL, 1),
    (("wrong", "failed"), False, JobStatus.FAILED, 1),
    (("ok", "interrupt"), False, JobStatus.INTERRUPTED, 130),
    (("ok", "ok"), True, JobStatus.PARTIAL, 1),
    (("failed",), True, JobStatus.FAILED, 1),
]
MODEL = "m"


def _model_result(end: str) -> ModelResult:
    check = VerificationStatus.FAIL if end == "wrong" else VerificationStatus.PASS
    return ModelResult(MODEL, ModelStatus.OK, verification=Verification(check, "max |diff| 9" if end == "wrong" else "ok"))


def _stats(device: str) -> ModelStats:
    return ModelStats(device, MODEL, (StatRow(device, MODEL, "Execute", 0, "Method::execute", 3, avg_ms=1.0, p50_ms=1.0),))


class FakeSession:
    """A device session that ends as its device's case says (Ctrl-C: it interrupts the main thread, once
    `before_interrupt` returned); `started` counts the sessions run per device."""

    ends: dict[str, str] = {}
    started: collections.Counter[str] = collections.Counter()
    before_interrupt: Callable[[], None] = staticmethod(lambda: None)

    def __init__(self, spec: DeviceSpec, context: JobContext, heartbeat: Heartbeat | None = None) -> None:
        self.name = spec.name
        self.context = context
        self.record = context.record(spec)
        self.say = context.progress.for_device(spec.name)
        self.heartbeat = heartbeat or Heartbeat()
        self.aborted = threading.Event()

    def abort(self) -> None:
        self.aborted.set()

    def run(self) -> DeviceResult:
        end = self.ends[self.name]
        self.started[self.name] += 1
        self.record.start()
        if end == "failed":
            return self.record.fail(f"[{self.name}] boom", Blame.INFRASTRUCTURE)
        if end == "interrupt":
            self.before_interrupt()
            _thread.interrupt_main()  # Ctrl-C while this device works
            assert self.aborted.wait(10)
            return self.record.interrupt()
        self.record.model(_model_result(end))
        self.context.stats.add(_stats(self.name))
        return self.record.succeed()


class FakeFarm:
    """The Dask side of a farm whose tasks reply at once; a device that interrupts makes the wait raise Ctrl-C."""

    client = None

    def __init__(self, ends: dict[str, str]) -> None:
        self.ends = ends
        self.waits = 0
        self.stopped = False

    def devices(self) -> dict[str, FarmDevice]:
        return {name: FarmDevice(name, f"tcp://w-{name}", "fake", "host") for name in self.ends}

    def offered(self) -> dict[str, list[str]]:
        return {name: [f"tcp://w-{name}"] for name in self.ends}

    def nudge(self) -> None:
        return None

    def ship(self, worker: str, by_hash: dict[str, Path]) -> ShipReport:
        return ShipReport(len(by_hash), 0, 0)

    def submit(self, request: TaskRequest, attempt: int = 0) -> tuple[str, str]:
        FakeSession.started[request.device] += 1  # the task's session, as good as run
        return request.device, request.model

    def wait(self, futures: list[tuple[str, str]], timeout_s: float) -> set[tuple[str, str]]:
        self.waits += 1
        ready = {f for f in futures if self.ends[f[0]] != "interrupt"}
        if not ready:
            raise KeyboardInterrupt
        return ready

    def outcome(self, future: tuple[str, str], request: TaskRequest) -> TaskReply:
        end = self.ends[request.device]
        if end == "failed":
            return TaskReply(DeviceResult(request.device, "fake", "host", DeviceStatus.FAILED, f"[{request.device}] boom",
                                          Blame.INFRASTRUCTURE), worker="tcp://w")
        status = DeviceStatus.WRONG_RESULTS if end == "wrong" else DeviceStatus.OK
        device = DeviceResult(request.device, "fake", "host", status, models=(_model_result(end),))
        return TaskReply(device, _stats(request.device), {}, "tcp://w")

    def cancel(self, futures: list[Any]) -> None:
        return None

    def listen(self, run_id: str, handler: Callable[[Any], None]) -> None:
        return None

    def stop(self, run_id: str) -> None:
        self.stopped = True


@pytest.fixture
def stubbed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[bool], None]:
    """Export and builds stubbed (their own tests cover them); `disk_full(True)` fills the disk for stats.csv."""
    source = tmp_path / "m.py"
    source.write_text("# a model\n")
    pte = tmp_path / "m.pte"
    pte.write_bytes(forward_program())  # the job checks the program before anything runs
    runner = tmp_path / "runner" / "bin" / "etfarm_runner"
    runner.parent.mkdir(parents=True)
    runner.write_bytes(b"runner")
    monkeypatch.setattr("orchestrator.run.engine.sweep.export_model", lambda spec, backend, recipe, log: ExportedModel(
        MODEL, spec.text, backend, "k" * 16, pte, None, None, None, cached=True))
    monkeypatch.setattr(engine, "build_runner", lambda target, log, runtime=None: RunnerBuild(
        target, "runner-key", runner.parent.parent, runner, (), cached=True))
    monkeypatch.setattr(local_executor, "DeviceSession", FakeSession)
    monkeypatch.setattr(farm_task, "DeviceSession", FakeSession)  # a real farm's tasks run in this process
    FakeSession.started = collections.Counter()

    def disk_full(full: bool) -> None:
        if full:
            def write(*args: Any, **kwargs: Any) -> None:
                raise OSError(errno.ENOSPC, "No space left on device")

            monkeypatch.setattr(job_stats, "write_stats_csv", write)

    return disk_full


def _run(executor: Any, names: list[str], out: Path) -> JobResult:
    spec = ModelSpec(f"{out.parent / 'm.py'}:build", "file", MODEL, out.parent / "m.py", "build")
    return run_job_on(executor, names, [spec], backend="portable", options=JobOptions(runs=1, untraced_runs=0),
                      out=out, progress=Progress(quiet=True))


def _check(result: JobResult, status: JobStatus, code: int, ends: dict[str, str], disk_full: bool) -> None:
    assert (result.status, result.exit_code) == (status, code)
    assert result.job.status is status and load_manifest(result.rundir.root).status is status
    assert result.interrupted == (status is JobStatus.INTERRUPTED)
    expected = {"ok": DeviceStatus.OK, "wrong": DeviceStatus.WRONG_RESULTS, "failed": DeviceStatus.FAILED,
                "interrupt": DeviceStatus.INTERRUPTED}
    assert {d.name: d.status for d in result.devices} == {name: expected[end] for name, end in ends.items()}
    measured = [name for name, end in ends.items() if end in ("ok", "wrong")]
    assert [s.device for s in result.stats] == measured  # in memory, in job order
    assert (result.rundir.root / "stats.csv").is_file() == bool(measured and not disk_full)
    assert (result.problem is not None) == bool(disk_full and measured)
    assert FakeSession.started == {name: 1 for name in ends}  # whatever the end, one session: nothing retried it


@pytest.mark.parametrize(("ends", "disk_full", "status", "code"), CASES)
def test_on_this_host(ends: tuple[str, ...], disk_full: bool, status: JobStatus, code: int, tmp_path: Path,
                      stubbed: Callable[[bool], None]) -> None:
    stubbed(disk_full)
    named = {f"d{k}": end for k, end in enumerate(ends)}
    FakeSession.ends = named
    devices = [DeviceSpec(name, "host", str(tmp_path / name)) for name in named]
    result = _run(LocalExecutor(devices), list(named), tmp_path / "run")
    _check(result, status, code, named, disk_full)


def test_a_ctrl_c_while_the_device_threads_start_stops_every_device(tmp_path: Path, stubbed: Callable[[bool], None],
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The first device's thread can interrupt the main thread before the second has started (a loaded CI runner
    once did): every device that started ends, none stays `running` in the manifest; one that never started is not
    in it (a resume runs it)."""
    stubbed(False)
    named = {"d0": "interrupt", "d1": "ok"}
    FakeSession.ends = named
    started = threading.Event()
    FakeSession.before_interrupt = staticmethod(started.set)

    class SlowStart(threading.Thread):
        def start(self) -> None:
            super().start()
            if self.name == "device-d0":  # Ctrl-C lands before d1's thread starts
                assert started.wait(10)
                time.sleep(0.2)

    monkeypatch.setattr(local_executor.threading, "Thread", SlowStart)
    try:
        result = _run(LocalExecutor([DeviceSpec(n, "host", str(tmp_path / n)) for n in named]), list(named),
                      tmp_path / "run")
    finally:
        FakeSession.before_interrupt = staticmethod(lambda: None)
    assert (result.status, result.exit_code) == (JobStatus.INTERRUPTED, 130)
    on_disk = {d.name: d.status for d in load_manifest(result.rundir.root).devices}
    assert on_disk == {"d0": DeviceStatus.INTERRUPTED}
    assert FakeSession.started == {"d0": 1}  # d1 never ran: the Ctrl-C came first


@pytest.mark.parametrize(("ends", "disk_full", "status", "code"), CASES)
def test_on_a_farm(ends: tuple[str, ...], disk_full: bool, status: JobStatus, code: int, tmp_path: Path,
                   stubbed: Callable[[bool], None]) -> None:
    stubbed(disk_full)
    named = {f"d{k}": end for k, end in enumerate(ends)}
    farm = FakeFarm(named)
    result = _run(FarmExecutor(FarmOptions("tcp://fake:8786"), farm=farm), list(named), tmp_path / "run")
    _check(result, status, code, named, disk_full)
    assert farm.stopped == (status is JobStatus.INTERRUPTED)
    assert result.job.config.scheduler == "tcp://fake:8786"


def test_an_unexpected_error_mid_job_still_ends_the_manifest_failed(tmp_path: Path, stubbed: Callable[[bool], None],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Not only etfarm's own errors: whatever escapes the engine (here the host's disk turning read-only
    under the builds), the manifest says `failed`, never `running`."""
    stubbed(False)

    def read_only(*args: Any) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(tmp_path / "cache"))

    monkeypatch.setattr(engine, "build_targets", read_only)
    with pytest.raises(OSError, match="Read-only file system"):
        _run(LocalExecutor([DeviceSpec("d0", "host", str(tmp_path / "d0"))]), ["d0"], tmp_path / "run")
    assert load_manifest(tmp_path / "run").status is JobStatus.FAILED


class InventoryStub:
    """What `etfarm worker` hangs on its Dask worker (farm/devices.py InventoryWatch), for the devices it owns."""

    def __init__(self, specs: list[DeviceSpec]) -> None:
        self.specs = {spec.name: spec for spec in specs}

    def spec(self, name: str) -> DeviceSpec | None:
        return self.specs.get(name)


@pytest.fixture(scope="module")
def real_farm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Dask scheduler and two real workers (on an event loop of their own, in this process), each
    owning one device of the cases (`d0`, `d1`) as `etfarm worker` would: its `dev-<name>` resource, its inventory.
    Yields the scheduler's address."""
    distributed = pytest.importorskip("distributed")
    workdir = tmp_path_factory.mktemp("farm-devices")
    started = threading.Event()
    state: dict[str, Any] = {}

    async def serve() -> None:
        stop = asyncio.Event()
        state["stop"] = (asyncio.get_running_loop(), stop)
        async with distributed.Scheduler(host="127.0.0.1", port=0, dashboard=False) as scheduler:
            workers = []
            for name in ("d0", "d1"):
                worker = await distributed.Worker(scheduler.address, name=f"w-{name}", host="127.0.0.1", nthreads=4,
                                                  resources={resource_name(name): 1})
                worker.etfarm_inventory = InventoryStub([DeviceSpec(name, "host", str(workdir / name))])
                workers.append(worker)
            state["address"] = scheduler.address
            started.set()
            await stop.wait()
            for worker in workers:
                await worker.close()

    thread = threading.Thread(target=lambda: asyncio.run(serve()), name="real-farm", daemon=True)
    thread.start()
    assert started.wait(60), "the Dask scheduler and workers did not start"
    yield state["address"]
    loop, stop = state["stop"]
    loop.call_soon_threadsafe(stop.set)
    thread.join(30)


def _recorded_end(out: Path, device: str) -> Callable[[], None]:
    """Wait (bounded) until the client's manifest has `device` ended: on a real farm Ctrl-C must come after it,
    as the fake farm and the local threads order it."""
    def wait() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                recorded = load_manifest(out).device(device)
                if recorded is not None and recorded.status not in (DeviceStatus.RUNNING, DeviceStatus.PENDING):
                    return
            time.sleep(0.05)
    return wait


@pytest.mark.parametrize(("ends", "disk_full", "status", "code"), CASES)
def test_on_a_real_farm(ends: tuple[str, ...], disk_full: bool, status: JobStatus, code: int, tmp_path: Path,
                        stubbed: Callable[[bool], None], real_farm: str) -> None:
    stubbed(disk_full)
    named = {f"d{k}": end for k, end in enumerate(ends)}
    FakeSession.ends = named
    out = tmp_path / "run"
    others = [name for name, end in named.items() if end != "interrupt"]
    FakeSession.before_interrupt = staticmethod(_recorded_end(out, others[0]) if others else lambda: None)
    try:
        result = _run(FarmExecutor(FarmOptions(real_farm)), list(named), out)
    finally:
        FakeSession.before_interrupt = staticmethod(lambda: None)
    _check(result, status, code, named, disk_full)
    assert result.job.config.scheduler == real_farm
