"""The worker side of one (device, model) task: a DeviceSession into a temporary run subtree.

The task carries only names, hashes and options (`TaskRequest`); the files come from the worker's
blob store (blobs.py). It carries how the runner starts too (`runtime`: a bundled-glibc runner is
started through its own loader on an Android phone), since the runner's files alone do not say it.
The client builds every runner: a worker's device that names its own `runtime:` prefix is refused.
A resumed run's task also carries the model's finished process runs (`done`) and their files
(`prior`, by hash too): the session runs only the missing ones and analyses them all, as a resumed
single-host session does. The session is the single-host one (run/engine/session.py): it takes the
device lock on this worker, stages, runs, pulls and analyses, writing `<device>/<model>/...` into a
private RunDirectory. The task returns that subtree's files and the typed results (`TaskReply`:
the session's DeviceRecord of the device, with the tries it made); the client merges them into
the job's run directory. Whatever failed was retried, or not, where it was raised (run/device/retry.py),
as on a single host: the task never asks Dask to run it again. A task that cannot start a
session (the device left this worker's inventory, a `runtime:` prefix) raises an etfarm error,
which the client records with its blame. Each try announces its steps (tries.py), so a try lost
with its worker is recorded at the step it was in. Ctrl-C on the client sets the run's stop
event (a Dask `Event`); a watcher thread beside the session aborts it, so the device's runner is
killed and its lock released, as on a single host.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import shutil
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from orchestrator.artifacts.build import RunnerBuild
from orchestrator.artifacts.generation import Workload
from orchestrator.artifacts.lowering import ExportedModel
from orchestrator.artifacts.runner_info import RuntimeInfo, runner_slot
from orchestrator.base.cache import cache_dir
from orchestrator.base.errors import InfrastructureError, UsageError
from orchestrator.base.progress import Progress
from orchestrator.farm.blobs import MODEL_ROLES, BlobRef, materialize, missing
from orchestrator.farm.streamed import AnnouncingRunDirectory, run_event
from orchestrator.farm.tries import FIRST_STEP, step_event
from orchestrator.profiles.stat_rows import ModelStats
from orchestrator.results.model import DeviceResult, JobConfig, JobOptions, ProcessRun
from orchestrator.run.device.heartbeat import Heartbeat
from orchestrator.run.engine.session import DeviceSession
from orchestrator.run.executor import JobContext
from orchestrator.run.job_stats import JobStats
from orchestrator.run.plan import JobPlan
from orchestrator.run.runner_contract import RUNNER_REL

RUNNER_DIR = "runner"
MODEL_DIR = "model"
STOP_POLL_SEC = 1.0  # how often a task's watcher asks whether the client stopped the run

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TaskRequest:
    run_id: str
    device: str
    model: str  # the model's name
    model_spec: str
    backend: str
    model_key: str
    target: str
    runner_key: str
    blobs: tuple[BlobRef, ...]
    roles: dict[str, str]  # pte / etrecord / inputs / ... / llm_reference (blobs.MODEL_ROLES) -> blob name
    options: JobOptions
    config: JobConfig
    done: tuple[ProcessRun, ...] = ()  # resumed: the model's process runs already finished
    prior: tuple[BlobRef, ...] = ()  # resumed: their files, named relative to the run directory
    runtime: RuntimeInfo = field(default_factory=RuntimeInfo)  # the runner's runtime and how it starts (its launcher)
    workload: Workload = Workload()  # the model's sweep point: threads, and for an LLM what to generate

    @property
    def topic(self) -> str:
        return progress_topic(self.run_id)

    def hashes(self) -> list[str]:
        return [ref.sha256 for ref in (*self.blobs, *self.prior)]


@dataclass(frozen=True)
class TaskReply:
    """What a task sends back: the session's record of the device for this one model (a DeviceResult, with
    the tries it made), its statistics with the samples they came from (so the client reads no ETDump
    again), the files, who ran it, and which try of the task it was (tries.py)."""

    device: DeviceResult
    stats: ModelStats | None = None  # None when the model has no analysed runs
    files: dict[str, bytes] = field(default_factory=dict)  # relative to the run directory
    worker: str = ""
    token: str = ""


@dataclass(frozen=True)
class LacksArtifacts:
    """The worker lacks some of the task's blobs (a restarted worker, a lost cache): the client ships them and
    submits the task again."""

    worker: str
    hashes: tuple[str, ...]


def progress_topic(run_id: str) -> str:
    return f"etfarm-progress-{run_id}"


def stop_event_name(run_id: str) -> str:
    """The Dask Event the client sets when the run is interrupted (Ctrl-C, SIGTERM)."""
    return f"etfarm-stop-{run_id}"


class EventProgress(Progress):
    """Progress lines printed on the worker and sent to the client as Dask events."""

    def __init__(self, worker: Any, topic: str) -> None:
        super().__init__()
        self._worker = worker
        self._topic = topic

    def __call__(self, message: str, device: str | None = None) -> None:
        super().__call__(message, device)
        self._worker.log_event(self._topic, {"device": device, "message": message})


def run_task(request: TaskRequest) -> TaskReply | LacksArtifacts:
    """Run on a worker (Dask task body). Failures are the session's to record; what keeps it from
    starting is raised (an etfarm error: the client records it, with its blame)."""
    from distributed import get_worker

    worker = get_worker()
    absent = tuple(missing(request.hashes()))
    if absent:
        return LacksArtifacts(worker.address, absent)
    watch = getattr(worker, "etfarm_inventory", None)
    spec = watch.spec(request.device) if watch is not None else None
    if spec is None:
        raise InfrastructureError(f"[{request.device}] worker {worker.name} no longer has this device in its inventory")
    if spec.runtime:  # the client built the runner against its own runtime: not this prefix of the worker's host
        raise UsageError(f"[{request.device}] runtime: {spec.runtime} in worker {worker.name}'s inventory: on a farm "
                         "the client builds the runner, against etfarm's runtime; drop the key, or run this device "
                         "from its own host")
    token = secrets.token_hex(4)

    def announce(step: str) -> None:
        worker.log_event(request.topic, step_event(request.device, request.model, token, worker.address, step))

    announce(FIRST_STEP)
    scratch = cache_dir("farm-work") / f"{request.run_id}-{request.device}-{request.model}-{token}"
    try:
        return _session(request, spec, scratch, EventProgress(worker, request.topic), worker, Heartbeat(announce),
                        token)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _session(request: TaskRequest, spec: Any, scratch: Path, progress: Progress, worker: Any, heartbeat: Heartbeat,
             token: str) -> TaskReply:
    paths = materialize(request.blobs, scratch / "artifacts")
    libs = tuple(sorted(p for name, p in paths.items() if name.startswith(f"{RUNNER_DIR}/lib/")))
    runner = paths.get(f"{RUNNER_DIR}/{RUNNER_REL}")
    build = None
    if runner is not None:
        build = task_build(request, runner, libs)

    def role(name: str) -> Path | None:
        blob = request.roles.get(name)
        return paths[blob] if blob else None

    pte = role("pte")
    if pte is None:
        raise InfrastructureError(f"[{request.device}] task for {request.model} carries no .pte")
    files = {name: role(name) for name in MODEL_ROLES}
    model = ExportedModel(**{**files, "pte": pte}, name=request.model, spec=request.model_spec, backend=request.backend,
                          key=request.model_key, cached=True, workload=request.workload)
    rundir = AnnouncingRunDirectory.create(scratch / "run", request.config)
    materialize(request.prior, rundir.root)
    rundir.quiet_labels = frozenset(run.label for run in request.done)  # the client has these
    rundir.announce = lambda name, run: worker.log_event(  # type: ignore[method-assign]
        request.topic, run_event(request.device, name, run, rundir.root, worker.address))
    plan = JobPlan((request.device,), done={request.device: {request.model: request.done}} if request.done else {})
    slot = runner_slot(spec.target, spec.runtime)  # as JobContext.runner looks it up
    context = JobContext(rundir, plan, (model,), request.options, {slot: build} if build else {},
                         {slot: f"no runner shipped for target {request.target}"},
                         JobStats(rundir.root, [request.device], [request.model]), progress)
    session = DeviceSession(spec, context, heartbeat)
    with _stopped_by_client(request.run_id, session):
        result = session.run()
    device_root = rundir.root / request.device
    sent_to_us = {ref.name for ref in request.prior}  # the client has these already
    files = {rel: p.read_bytes() for p in sorted(device_root.rglob("*"))
             if p.is_file() and (rel := p.relative_to(rundir.root).as_posix()) not in sent_to_us} \
        if device_root.is_dir() else {}
    stats = context.stats.all()
    return TaskReply(result, stats[0] if stats else None, files, worker.address, token)


def task_build(request: TaskRequest, runner: Path, libs: tuple[Path, ...]) -> RunnerBuild:
    """The client's runner build as the worker has it: the shipped files, and its runtime as the request carries it."""
    return RunnerBuild(request.target, request.runner_key, runner.parent.parent, runner, libs, cached=True,
                       **asdict(request.runtime))


@contextlib.contextmanager
def _stopped_by_client(run_id: str, session: DeviceSession) -> Iterator[None]:
    """While the session runs, a daemon thread waits on the run's stop event and aborts the session."""
    from distributed import Event, get_client

    # The client is looked up here, in the task's thread: the watcher thread has no worker context.
    event = Event(stop_event_name(run_id), client=get_client())
    finished = threading.Event()

    def watch() -> None:
        while not finished.is_set():
            try:
                stopped = event.wait(STOP_POLL_SEC)
            except Exception as exc:  # noqa: BLE001 - scheduler unreachable: the task's own deadlines still hold
                log.debug("stop event unavailable: %s", exc)
                finished.wait(STOP_POLL_SEC)
                continue
            if stopped and not finished.is_set():
                session.say("interrupted by the client: stopping the runner")
                session.abort()
                return

    threading.Thread(target=watch, name=f"stop-watch-{session.name}", daemon=True).start()
    try:
        yield
    finally:
        finished.set()
