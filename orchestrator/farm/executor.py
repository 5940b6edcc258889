"""The farm's executor: the job engine's devices as Dask tasks, one per (device, model).

Given a planned job (run/executor.py), it ships the runners and models content-addressed
(blobs.py) to the workers that own the devices, submits one task per (device, model) that needs
the device's resource (`pure=False`: two runs of the same job are two measurements; a resumed
model is sent with its finished process runs and their files), prints the workers' progress events
as local progress, and writes each finished (device, model) into the run directory as soon as its
task returns (files, manifest, stats.csv), so nothing collected is lost when something later fails.
Each process run a task finishes is announced and fetched at once (streamed.py), so a worker lost
mid-task loses only the run in flight.

The engine's rules are the single host's: every change to a device's entry goes through its
DeviceRecord (a task's reply is merged, with the tries it made), a model whose task ends without a
reply is finished by run/finisher.py over the runs its worker streamed (verified, flagged,
analysed: `partial`, the reason as its error), retries are decided where the error is raised
(run/device/retry.py, in the task's session), and an interruption is nobody's fault (run/status.py).
What is Dask's alone: losing a worker (Dask puts its tasks back; they run wherever the device is
offered again; each lost try is recorded as an attempt of the step it was in, tries.py), the
device deadline (a task that waits longer than `device_deadline_s` with no worker offering its
device is cancelled, its device failed: infrastructure), a worker that lacks artifacts (shipped
again, at most MAX_SHIP_ATTEMPTS times), and the stop event (Ctrl-C: every task's session aborts,
waiting tasks are cancelled, running devices are `interrupted`). Difference from a single-host
job: a task holds one model, so the models of a device are not interleaved with each other.
See docs/architecture.md, "Many hosts (Dask)".
"""

from __future__ import annotations

import threading
import time
from pathlib import Path, PurePosixPath
from typing import Any, Self

from orchestrator.artifacts.build import RunnerBuild
from orchestrator.artifacts.lowering import ExportedModel
from orchestrator.base.cache import write_bytes_atomic
from orchestrator.base.cleanup import close_quietly
from orchestrator.base.errors import DeviceError, EtfarmError, UsageError, said
from orchestrator.farm import FarmUnreachable
from orchestrator.farm.blobs import BlobRef, JobBlobs
from orchestrator.farm.dask import DaskFarm, FarmDevice, FarmOptions, TaskLost
from orchestrator.farm.streamed import StreamedRuns
from orchestrator.farm.task import LacksArtifacts, TaskReply, TaskRequest
from orchestrator.farm.tries import Tries
from orchestrator.results.model import DeviceStatus
from orchestrator.run.device_record import DeviceRecord
from orchestrator.run.engine.session import Interrupted
from orchestrator.run.executor import JobContext
from orchestrator.run.finisher import ModelFinisher

POLL_SEC = 1.0
MAX_SHIP_ATTEMPTS = 3  # deliveries of missing artifacts to a worker before its task fails


class FarmExecutor:
    def __init__(self, options: FarmOptions, farm: Any = None) -> None:
        self.options = options
        self.scheduler: str | None = options.scheduler
        self._farm: Any = farm  # a DaskFarm (connected on entry), or a stand-in given by a test
        self._devices: dict[str, FarmDevice] = {}
        self._context: JobContext | None = None
        self._records: dict[str, DeviceRecord] = {}
        self._remaining: dict[str, int] = {}
        self._blobs = JobBlobs()
        self._futures: dict[Any, TaskRequest] = {}
        self._streamed = StreamedRuns(self._records, lambda device, rel: inside(self._root(), device, rel))
        self._tries = Tries(lambda device, attempt: self._records[device].attempt(attempt))
        self._interrupted = threading.Event()  # Ctrl-C: what it cut short is nobody's fault

    def __enter__(self) -> Self:
        if self._farm is None:
            self._farm = DaskFarm.connect(self.options)
        return self

    def __exit__(self, *exc: object) -> None:
        if isinstance(self._farm, DaskFarm):
            close_quietly(f"the connection to {self.options.scheduler}", self._farm.close)

    def devices(self, names: list[str] | tuple[str, ...]) -> list[FarmDevice]:
        known = self._farm.devices()
        unknown = [n for n in names if n not in known]
        if unknown:
            raise UsageError(f"--devices: {', '.join(unknown)}: no worker of {self.options.scheduler} has it in its "
                             f"inventory (known: {', '.join(sorted(known)) or 'none'})")
        self._devices = {n: known[n] for n in names}
        return list(self._devices.values())

    def execute(self, context: JobContext) -> None:
        self._context = context
        self._submit(context)
        self._collect(context)

    def stop(self) -> None:
        """Ctrl-C: tell the running tasks to abort their sessions, drop the waiting ones, keep what finished
        (each cut model finished with the runs streamed so far), mark the running devices interrupted."""
        context = self._context
        if context is None:  # during the builds: nothing was sent
            return
        context.progress("interrupted: stopping the tasks on the workers and keeping what finished")
        self._interrupted.set()
        self._tries.collect()
        self._streamed.collect(self._farm.client)  # what the workers announced before the stop
        try:
            self._farm.stop(context.rundir.run_id)
            self._farm.cancel(list(self._futures))
        except Exception as exc:  # noqa: BLE001 - a scheduler gone already has nothing left to stop
            context.progress(f"could not tell the workers to stop: {type(exc).__name__}: {exc}")
        for request in self._futures.values():
            self._unreplied(context, request, Interrupted(f"[{request.device}] interrupted"))
        self._futures.clear()
        for record in self._records.values():
            if record.current.status is DeviceStatus.RUNNING:
                record.say("interrupted")
                record.interrupt()

    def _root(self) -> Path:
        assert self._context is not None
        return self._context.rundir.root

    # ---- submit ------------------------------------------------------------------

    def _submit(self, context: JobContext) -> None:
        model_refs = {model.name: self._blobs.model(model) for model in context.models}
        runner_refs: dict[str, tuple[BlobRef, ...]] = {}  # by runner build key
        requests: list[TaskRequest] = []
        for device in self._devices.values():
            record = self._records[device.name] = context.record(device)
            record.start()
            try:
                build: RunnerBuild | None = context.runner(device)
            except DeviceError as exc:  # its target could not build: the device fails, as on one host
                record.fail_with(exc)
                build = None
            for model in context.models:
                if (device.name, model.name) in context.plan.complete_models:  # resumed: its statistics stay
                    context.stats.keep_recorded(device.name, model.name)
                elif build is not None:
                    if build.key not in runner_refs:
                        runner_refs[build.key] = self._blobs.runner(build)
                    requests.append(self._request(context, device, build, model, runner_refs[build.key],
                                                  model_refs[model.name]))
            if device.name not in self._remaining and build is not None:  # nothing left to send: all its models kept
                record.succeed()
        by_worker: dict[str, set[str]] = {}
        for request in requests:
            by_worker.setdefault(self._devices[request.device].worker, set()).update(request.hashes())
        for worker, hashes in sorted(by_worker.items()):
            self._ship(worker, hashes)
        self._farm.listen(context.rundir.run_id, self._on_event)  # before any task starts
        for request in requests:
            self._futures[self._farm.submit(request)] = request

    def _request(self, context: JobContext, device: FarmDevice, build: RunnerBuild, model: ExportedModel,
                 runner: tuple[BlobRef, ...], refs: tuple[tuple[BlobRef, ...], dict[str, str]]) -> TaskRequest:
        config = context.rundir.job.config
        done = context.plan.runs_done(device.name, model.name)
        self._remaining[device.name] = self._remaining.get(device.name, 0) + 1
        self._streamed.start(device.name, model.name, done)
        return TaskRequest(run_id=context.rundir.run_id, device=device.name, model=model.name, model_spec=model.spec,
                           backend=config.backend, model_key=model.key, target=device.target, runner_key=build.key,
                           runtime=build.info, blobs=runner + refs[0], roles=refs[1], options=config.options,
                           config=config, done=done, workload=model.workload,
                           prior=self._blobs.prior(context.rundir.root, device.name, model.name, done) if done else ())

    def _ship(self, worker: str, hashes: set[str] | tuple[str, ...], device: str | None = None) -> bool:
        assert self._context is not None
        lacked = device is not None
        try:
            report = self._farm.ship(worker, self._blobs.paths(hashes))
        except (OSError, KeyError) as exc:  # gone since we asked: a task it runs later asks for what it lacks
            self._context.progress(f"artifacts for {worker}: not sent ({type(exc).__name__}: {exc})")
            return False
        if lacked:
            self._context.progress(f"artifacts for {worker}: sent {report.sent} file(s) it lacked, "
                                   f"{report.bytes_sent / 1e6:.1f} MB", device)
        else:
            self._context.progress(f"artifacts for {worker}: sent {report.sent} file(s), "
                                   f"{report.bytes_sent / 1e6:.1f} MB ({report.skipped} already there)")
        return True

    def _on_event(self, event: Any) -> None:
        _, message = event
        if isinstance(message, dict) and not (self._streamed.offer(message) or self._tries.offer(message)):
            assert self._context is not None
            self._context.progress(str(message.get("message", "")), message.get("device"))

    # ---- collect -----------------------------------------------------------------

    def _collect(self, context: JobContext) -> None:
        """Every task's outcome, as it comes; a scheduler lost mid-job (killed, its host gone) fails the devices still
        running (infrastructure: their runs so far kept, never left `running`) and ends the job (exit 3)."""
        try:
            self._collect_all(context)
        except Exception as exc:
            if not isinstance(exc, FarmUnreachable) and not self._farm.lost(exc):
                raise
            why = "" if isinstance(exc, FarmUnreachable) or self._farm.lost() else f" ({said(exc)[:200]})"
            lost = FarmUnreachable(f"--scheduler {self.options.scheduler}: lost the scheduler mid-job{why}; what "
                                   f"finished is kept: `etfarm run --resume {context.rundir.root}` runs the rest")
            for request in list(self._futures.values()):
                self._unreplied(context, request, lost)
            self._futures.clear()
            raise lost from None

    def _collect_all(self, context: JobContext) -> None:
        deliveries: dict[tuple[str, str], int] = {}
        unoffered_since: dict[str, float] = {}
        while self._futures:
            finished = self._farm.wait(list(self._futures), POLL_SEC)
            self._tries.collect()  # before the replies: the tries they end are known
            for future in finished:
                request = self._futures.pop(future)
                outcome = self._farm.outcome(future, request)
                if isinstance(outcome, TaskReply):
                    self._record(context, request, outcome)
                elif isinstance(outcome, LacksArtifacts):
                    self._deliver(context, request, outcome, deliveries)
                else:
                    self._unreplied(context, request, outcome)
            if not self._futures:
                break
            self._streamed.collect(self._farm.client)  # after the finished tasks: theirs are stale, not fetched
            self._farm.nudge()
            self._enforce_deadline(context, unoffered_since)

    def _deliver(self, context: JobContext, request: TaskRequest, lacks: LacksArtifacts,
                 deliveries: dict[tuple[str, str], int]) -> None:
        """Ship what the task's worker lacks and submit it again (it goes wherever the device is now)."""
        ident = (request.device, request.model)
        deliveries[ident] = deliveries.get(ident, 0) + 1
        if deliveries[ident] > MAX_SHIP_ATTEMPTS:
            self._unreplied(context, request, DeviceError(request.device, f"worker {lacks.worker} still lacks "
                            f"{len(lacks.hashes)} artifact(s) after {MAX_SHIP_ATTEMPTS} deliveries"))
            return
        self._ship(lacks.worker, lacks.hashes, request.device)
        self._futures[self._farm.submit(request, deliveries[ident])] = request

    def _enforce_deadline(self, context: JobContext, unoffered_since: dict[str, float]) -> None:
        """Cancel the tasks of a device no worker has offered for `device_deadline_s`; fail them (infrastructure)."""
        now_offered = self._farm.offered()
        deadline_s = self.options.device_deadline_s
        for future, request in list(self._futures.items()):
            if now_offered.get(request.device):
                unoffered_since.pop(request.device, None)
                continue
            since = unoffered_since.setdefault(request.device, time.monotonic())
            if time.monotonic() - since > deadline_s:
                future.cancel()
                self._futures.pop(future)
                self._unreplied(context, request, TaskLost(request.device, f"no worker offered the device for "
                                f"{deadline_s:g} s (its worker is gone or the device is offline); "
                                f"gave up on {request.model} (--device-deadline)"))

    def _record(self, context: JobContext, request: TaskRequest, reply: TaskReply) -> None:
        """Write a finished (device, model) into the run directory now: files, manifest, stats.csv."""
        self._tries.replied(request.device, request.model, reply.token)
        try:
            for path, data in {inside(context.rundir.root, request.device, rel): data
                               for rel, data in reply.files.items()}.items():
                write_bytes_atomic(path, data)
        except DeviceError as exc:  # a worker naming paths outside its subtree: its reply is not kept
            self._unreplied(context, request, exc)
            return
        self._streamed.finish(request.device, request.model)
        record = self._records[request.device]
        merged = record.merge(reply.device)
        if reply.stats is not None and not record.closed:
            context.stats.add(reply.stats)
            context.stats.write(context.progress)
        self._task_ended(request.device, merged.status)
        if reply.device.status is DeviceStatus.FAILED:
            context.progress(f"{request.model}: FAILED: {reply.device.error}", request.device)
        else:
            context.progress(f"{request.model}: collected {len(reply.files)} file(s) from {reply.worker}",
                             request.device)

    def _unreplied(self, context: JobContext, request: TaskRequest, failure: BaseException) -> None:
        """A task that ended without a reply (lost, cancelled, given up, stopped, raised): its lost tries are
        recorded, its model finished over the runs its worker streamed (run/finisher.py: partial, `failure`
        as its error), and the device failed with `failure` (unless interrupted: `stop` marks it)."""
        self._tries.ended(request.device, request.model, str(failure) if isinstance(failure, TaskLost) else None)
        order = self._streamed.finish(request.device, request.model)
        record = self._records[request.device]
        model = next(m for m in context.models if m.name == request.model)
        finisher = ModelFinisher([model], context.options, context.rundir, record, context.stats, self._interrupted)
        try:
            finisher.finish(order, failure)
        except EtfarmError as exc:  # the runs stay on disk; `etfarm analyze` can read them later
            context.progress(f"{request.model}: the {len(order)} run(s) kept could not be analysed: {exc}",
                             request.device)
        if self._interrupted.is_set():
            return
        if order:
            context.stats.write(context.progress)
        self._task_ended(request.device, record.fail_with(failure).status)

    def _task_ended(self, device: str, status: DeviceStatus) -> None:
        """One task of `device` less; its last one ends the device, unless something failed it already."""
        self._remaining[device] -= 1
        if self._remaining[device] == 0 and status is DeviceStatus.RUNNING:
            self._records[device].succeed()


def inside(root: Path, device: str, rel: str) -> Path:
    """Where a file a worker sent goes: only under DIR/<device>/, never elsewhere (a worker is not trusted
    to name paths)."""
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts or "" in path.parts or len(path.parts) < 2 or path.parts[0] != device:
        raise DeviceError(device, f"worker sent a file outside {device}/: {rel!r}")
    return root.joinpath(*path.parts)
