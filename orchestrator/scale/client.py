"""`etfarm run --scheduler`: the same job as run/job.py, with one Dask task per (device, model).

The client exports and builds once, ships the artifacts content-addressed (blobs.py), submits
one task per (device, model) that needs the device's resource (`pure=False`: two runs of the same
job are two measurements), prints the workers' progress events as local progress, and writes the
run directory a local run writes: each finished (device, model) lands (files, manifest, stats.csv)
as soon as its task returns, so nothing collected is lost when something later fails.

Losing a worker: Dask puts its tasks back; they run wherever the device is offered again (the same
worker restarted, or another one owning it). A task that waits longer than `device_deadline_s`
with no worker offering its device is cancelled and its device fails with that reason
(infrastructure). Infrastructure failures inside a task are retried `retries` times by Dask.
Ctrl-C or SIGTERM sets the run's stop event (the workers' sessions abort: runners killed, locks
released), cancels the waiting tasks, keeps what was collected and marks the job `interrupted`.
`resume_distributed` (`etfarm run --resume DIR`) then sends only what DIR lacks: whole (device,
model) tasks, or a model's missing process runs with its finished ones' records and files.
Difference from a single-host run: a task holds one model, so the models of a device are not
interleaved with each other (each is its own device session). Each process run a task finishes is
announced and fetched at once (streamed.py), so a worker lost mid-task loses only the run in flight.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from orchestrator.artifacts.lowering import export_model
from orchestrator.artifacts.modelspec import ModelSpec
from orchestrator.cache import write_bytes_atomic
from orchestrator.cleanup import close_quietly
from orchestrator.errors import Blame, DeviceError, EtfarmError, UsageError
from orchestrator.progress import Progress
from orchestrator.run.job import (
    JobResult,
    build_targets,
    complete_devices,
    finished_result,
    job_log,
    model_artifacts,
    recorded_stats,
    resume_models,
    terminate_as_interrupt,
    write_stats,
)
from orchestrator.run.results import (
    DeviceResult,
    DeviceStatus,
    JobConfig,
    JobStatus,
    ModelStatus,
    ProcessRun,
    RunOptions,
    load_manifest,
)
from orchestrator.run.rundir import LOG, RunDirectory, check_out
from orchestrator.run.runner_contract import ETDUMP_NAME
from orchestrator.run.session import DeviceOutcome
from orchestrator.scale import require_distributed, resource_name
from orchestrator.scale.blobs import BlobRef, refs_for, ship
from orchestrator.scale.streamed import StreamedRuns
from orchestrator.scale.task import (
    RetryableFailure,
    TaskOutcome,
    TaskRequest,
    progress_topic,
    run_task,
    stop_event_name,
)

POLL_SEC = 1.0
CONNECT_TIMEOUT_SEC = 20.0
MAX_SHIP_ATTEMPTS = 3  # deliveries of missing artifacts to a worker before its task fails


@dataclass(frozen=True)
class ScaleOptions:
    scheduler: str
    security: Any = None
    device_deadline_s: float = 600.0  # how long a task may wait with no worker offering its device
    retries: int = 2  # Dask retries of a task that failed for infrastructure reasons


@dataclass(frozen=True)
class FarmDevice:
    name: str
    worker: str
    transport: str
    target: str


def connect(scheduler: str, security: Any = None) -> Any:
    require_distributed()
    from distributed import Client

    try:
        return Client(scheduler, security=security, timeout=CONNECT_TIMEOUT_SEC)
    except (OSError, TimeoutError) as exc:
        raise UsageError(f"--scheduler {scheduler}: cannot connect: {exc}") from None
    except TypeError as exc:  # distributed's words for a tls:// address without a TLS configuration
        if "ssl_context" not in str(exc):
            raise
        raise UsageError(f"--scheduler {scheduler}: a TLS scheduler needs --tls-ca-file, --tls-cert and --tls-key "
                         "(or dask's distributed.comm.tls configuration)") from None


def farm_devices(client: Any) -> dict[str, FarmDevice]:
    """Every device some worker has in its inventory (online or not), by name."""
    found: dict[str, FarmDevice] = {}
    for address, devices in client.run(_describe_inventory, on_error="ignore").items():  # a dying worker: skipped
        for name, (transport, target) in devices.items():
            found.setdefault(name, FarmDevice(name, address, transport, target))
    return found


def _describe_inventory(dask_worker: Any) -> dict[str, tuple[str, str]]:
    watch = getattr(dask_worker, "etfarm_inventory", None)
    return {n: (s.transport, s.target) for n, s in watch.specs.items()} if watch is not None else {}


def offered(client: Any) -> dict[str, list[str]]:
    """Device name -> addresses of the workers offering it now (resource > 0)."""
    result: dict[str, list[str]] = {}
    for address, info in client.scheduler_info(n_workers=-1)["workers"].items():
        for resource, value in (info.get("resources") or {}).items():
            if resource.startswith("dev-") and value > 0:
                result.setdefault(resource[4:], []).append(address)
    return result


def nudge_unrunnable(dask_scheduler: Any) -> int:
    """Scheduler side: retry placing tasks waiting for a resource (set_resources does not)."""
    recommendations = {ts.key: "processing" for ts in list(dask_scheduler.unrunnable)}
    if recommendations:
        dask_scheduler.transitions(recommendations, stimulus_id=f"etfarm-nudge-{time.time()}")
    return len(recommendations)


def run_distributed(device_names: Sequence[str], specs: Sequence[ModelSpec], *, backend: str, options: RunOptions,
                    out: Path | None, progress: Progress, scale: ScaleOptions) -> JobResult:
    with job_log() as attach:
        check_out(out)
        client = connect(scale.scheduler, scale.security)
        try:
            run = _Run(client, scale, progress)
            devices = run.farm_devices(list(device_names))
            config = JobConfig(devices=tuple(device_names), models=tuple(s.text for s in specs), backend=backend,
                               options=options, scheduler=scale.scheduler)
            models = [export_model(spec, backend, log=progress) for spec in specs]
            artifacts = tuple(model_artifacts(m, s) for m, s in zip(models, specs, strict=False))
            rundir = RunDirectory.create(out, config, artifacts)
            attach(rundir.root / LOG)
            progress(f"run {rundir.run_id}: {len(devices)} device(s), {len(specs)} model(s) on {scale.scheduler} "
                     f"-> {rundir.root}")
            work = [Work(device, model) for device in devices for model in models]
            return run.execute(rundir, devices, models, work)
        finally:
            close_quietly(f"the connection to {scale.scheduler}", client.close)


def resume_distributed(root: Path, specs: Sequence[ModelSpec], *, progress: Progress, scale: ScaleOptions) -> JobResult:
    """Run what a recorded distributed job is missing, on the farm, into its own run directory: devices
    with every model complete are kept; a model with some process runs is sent with them (`done`, and
    their files as blobs) so its worker runs only the missing ones; the rest run whole."""
    recorded = load_manifest(root)
    with job_log(append_to=root / LOG):
        finished = finished_result(root, recorded, progress)
        if finished is not None:
            return finished
        client = connect(scale.scheduler, scale.security)
        try:
            run = _Run(client, scale, progress)
            kept = complete_devices(root, recorded)
            devices = run.farm_devices([n for n in recorded.config.devices if n not in kept])
            models = resume_models(root, recorded, specs, progress)
            rundir = RunDirectory.reopen(root)
            work: list[Work] = []
            for device in devices:
                record = rundir.job.device(device.name)
                for model in models:
                    result = record.model(model.name) if record is not None else None
                    if result is not None and result.status is ModelStatus.OK:
                        run.keep(rundir.root, device.name, model.name)
                    else:
                        work.append(Work(device, model, result.runs if result is not None else ()))
            for name in kept:
                for model in models:
                    run.keep(rundir.root, name, model.name)
            per_model = recorded.config.options.runs + recorded.config.options.untraced_runs
            runs_left = sum(per_model - len(w.done) for w in work)
            progress(f"resuming run {rundir.run_id} on {scale.scheduler}: {len(work)} (device, model) task(s) with "
                     f"{runs_left} process run(s) missing, {len(kept)} device(s) complete -> {root}")
            return run.execute(rundir, devices, models, work)
        finally:
            close_quietly(f"the connection to {scale.scheduler}", client.close)


@dataclass(frozen=True)
class Work:
    """One task to send: a model on a device, with the process runs it has already (resume)."""

    device: FarmDevice
    model: Any  # ExportedModel
    done: tuple[ProcessRun, ...] = ()


class _Run:
    def __init__(self, client: Any, scale: ScaleOptions, progress: Progress) -> None:
        self.client = client
        self.scale = scale
        self.progress = progress
        self.frames: dict[tuple[str, str], Any] = {}  # (device, model) -> stats, written in job order
        self.order: list[tuple[str, str]] = []
        self.remaining: dict[str, int] = {}
        self.blob_paths: dict[str, Path] = {}
        self.futures: dict[Any, TaskRequest] = {}
        self.streamed: StreamedRuns | None = None  # process runs announced by tasks still running

    def farm_devices(self, names: list[str]) -> list[FarmDevice]:
        known = farm_devices(self.client)
        unknown = [n for n in names if n not in known]
        if unknown:
            raise UsageError(f"--devices: {', '.join(unknown)}: no worker of {self.scale.scheduler} has it in its "
                             f"inventory (known: {', '.join(sorted(known)) or 'none'})")
        return [known[n] for n in names]

    def keep(self, root: Path, device: str, model: str) -> None:
        """A (device, model) the recorded run completed: its statistics stay in stats.csv."""
        frames = recorded_stats(root, device, model)
        if frames:
            self.frames[(device, model)] = frames[0]

    def execute(self, rundir: RunDirectory, devices: list[FarmDevice], models: list[Any], work: list[Work]) -> JobResult:
        self.rundir = rundir
        self.streamed = StreamedRuns(rundir, lambda device, rel: inside(rundir.root, device, rel))
        names = list(rundir.job.config.devices)
        self.order = [(name, model.name) for name in names for model in models]
        interrupted = False
        with terminate_as_interrupt():
            try:
                self._submit(devices, models, work, rundir.job.config)
                self._collect()
            except EtfarmError:
                rundir.finish(JobStatus.FAILED)
                raise
            except KeyboardInterrupt:
                interrupted = True
                self.progress("interrupted: stopping the tasks on the workers and keeping what finished")
                self._stop()
        self._analyse_streamed_partials()
        outcomes = [DeviceOutcome(rundir.job.device(n) or DeviceResult(n, "", "")) for n in names]
        stats, problem = write_stats(rundir, [DeviceOutcome(outcomes[0].result, self._frames())] if outcomes else [],
                                     self.progress)
        ok = [o.ok for o in outcomes]
        status = (JobStatus.INTERRUPTED if interrupted else JobStatus.OK if all(ok) and problem is None
                  else JobStatus.PARTIAL if any(ok) else JobStatus.FAILED)
        job = rundir.finish(status)
        return JobResult(rundir, job, outcomes, stats, interrupted=interrupted, problem=problem)

    def _analyse_streamed_partials(self) -> None:
        """A model left with streamed runs only (its task never returned: worker lost, deadline, Ctrl-C) is
        analysed here from the files already in DIR, as a single-host session analyses a partial model."""
        from orchestrator.profiles.analysis import device_model_stats

        for device, model in self.order:
            record = self.rundir.job.device(device)
            result = record.model(model) if record is not None else None
            if (device, model) in self.frames or result is None or not result.traced_runs:
                continue
            etdumps = [path for run in result.traced_runs
                       if (path := self.rundir.root / device / model / run.label / ETDUMP_NAME).is_file()]
            artifacts = self.rundir.job.model_artifacts(model)
            etrecord = Path(artifacts.etrecord) if artifacts and artifacts.etrecord else None
            try:
                self.frames[(device, model)] = device_model_stats(device, model, etdumps, etrecord)
            except EtfarmError as exc:  # the runs stay on disk; `etfarm analyze` can read them later
                self.progress(f"{model}: the {len(etdumps)} run(s) kept could not be analysed: {exc}", device)

    def _stop(self) -> None:
        """Ctrl-C: tell the running tasks to abort their sessions, drop the waiting ones, mark what was cut."""
        from distributed import Event

        if self.streamed is not None:  # what the workers announced before the stop
            self.streamed.collect(self.client)
        try:
            Event(stop_event_name(self.rundir.run_id), client=self.client).set()
            self.client.cancel(list(self.futures))
        except Exception as exc:  # noqa: BLE001 - a scheduler gone already has nothing left to stop
            self.progress(f"could not tell the workers to stop: {type(exc).__name__}: {exc}")
        for device in self.rundir.job.devices:
            if device.status is DeviceStatus.RUNNING:
                self.rundir.update_device(device.name, lambda d: replace(
                    d, status=DeviceStatus.INTERRUPTED, error=f"[{d.name}] interrupted", blame=None))

    # ---- submit ------------------------------------------------------------------

    def _submit(self, devices: list[FarmDevice], models: list[Any], work: list[Work], config: JobConfig) -> None:
        from distributed import Event

        builds, errors = build_targets(sorted({d.target for d in devices}), self.progress)
        model_refs: dict[str, tuple[tuple[BlobRef, ...], dict[str, str]]] = {}
        for model in models:
            roles = {role: path for role in ("pte", "etrecord", "inputs", "reference_outputs", "numerics_reference")
                     if (path := getattr(model, role)) is not None}
            named = {role: f"model/{model.name}/{Path(path).name}" for role, path in roles.items()}
            model_refs[model.name] = (self._refs({named[role]: Path(path) for role, path in roles.items()}), named)
        runner_refs = {target: self._refs({f"runner/{rel}": path for rel, path in build.stage_files().items()})
                       for target, build in builds.items()}
        for device in devices:
            status = DeviceResult(device.name, device.transport, device.target, DeviceStatus.RUNNING)
            if self.rundir.job.device(device.name) is None:
                self.rundir.add_device(status)
            else:  # resumed: its models and facts stay, it runs again
                self.rundir.update_device(device.name, lambda d: replace(d, status=DeviceStatus.RUNNING, error=None,
                                                                        blame=None))
            if device.target not in builds:
                self._fail(device.name, errors.get(device.target) or f"no runner for target {device.target}",
                           Blame.INFRASTRUCTURE)
        requests: list[TaskRequest] = []
        for item in work:
            device, model = item.device, item.model
            if device.target not in builds:
                continue
            refs, named = model_refs[model.name]
            requests.append(TaskRequest(
                run_id=self.rundir.run_id, device=device.name, model=model.name, model_spec=model.spec,
                backend=config.backend, model_key=model.key, target=device.target,
                runner_key=builds[device.target].key, blobs=runner_refs[device.target] + refs, roles=named,
                options=config.options, config=config, done=item.done,
                prior=self._prior_refs(device.name, model.name, item.done) if item.done else ()))
            self.remaining[device.name] = self.remaining.get(device.name, 0) + 1
            assert self.streamed is not None
            self.streamed.start(device.name, model.name, item.done)
        for device in devices:  # a device with nothing left to send (all its models kept) is done
            if device.name not in self.remaining and device.target in builds:
                self._succeed(device.name)
        by_worker: dict[str, set[str]] = {}
        for request in requests:
            worker = next(d.worker for d in devices if d.name == request.device)
            by_worker.setdefault(worker, set()).update(request.hashes())
        for worker, hashes in sorted(by_worker.items()):
            self._ship(worker, hashes)
        self.client.subscribe_topic(progress_topic(self.rundir.run_id), self._on_event)  # before any task starts
        Event(stop_event_name(self.rundir.run_id), client=self.client).clear()  # set by a Ctrl-C before a resume
        for request in requests:
            self.futures[self._send(request)] = request

    def _refs(self, files: dict[str, Path]) -> tuple[BlobRef, ...]:
        refs, by_hash = refs_for(files)
        self.blob_paths.update(by_hash)
        return refs

    def _prior_refs(self, device: str, model: str, done: tuple[ProcessRun, ...]) -> tuple[BlobRef, ...]:
        """The files of a model's finished runs, named relative to the run directory (the worker puts them
        at the same place in its own run directory, where the session reads them to analyse every run)."""
        files = {}
        for run in done:
            run_dir = self.rundir.root / device / model / run.label
            for path in sorted(run_dir.rglob("*")) if run_dir.is_dir() else ():
                if path.is_file() and not path.is_symlink():
                    files[path.relative_to(self.rundir.root).as_posix()] = path
        return self._refs(files)

    def _send(self, request: TaskRequest, attempt: int = 0) -> Any:
        key = f"etfarm-{request.run_id}-{request.device}-{request.model}" + (f"-{attempt}" if attempt else "")
        return self.client.submit(run_task, request, key=key, pure=False, retries=self.scale.retries,
                                  resources={resource_name(request.device): 1})

    def _ship(self, worker: str, hashes: set[str]) -> None:
        try:
            report = ship(self.client, worker, {h: self.blob_paths[h] for h in sorted(hashes)})
        except (OSError, KeyError) as exc:  # gone since we asked: a task it runs later asks for what it lacks
            self.progress(f"artifacts for {worker}: not sent ({type(exc).__name__}: {exc})")
            return
        self.progress(f"artifacts for {worker}: sent {report.sent} file(s), {report.bytes_sent / 1e6:.1f} MB "
                      f"({report.skipped} already there)")

    def _on_event(self, event: Any) -> None:
        _, message = event
        if isinstance(message, dict) and not (self.streamed is not None and self.streamed.offer(message)):
            self.progress(str(message.get("message", "")), message.get("device"))

    # ---- collect -----------------------------------------------------------------

    def _collect(self) -> None:
        from distributed import wait

        futures = self.futures
        attempts: dict[tuple[str, str], int] = {}
        unoffered_since: dict[str, float] = {}
        while futures:
            try:
                done, _ = wait(list(futures), timeout=POLL_SEC, return_when="FIRST_COMPLETED")
            except TimeoutError:
                done = set()
            for future in done:
                request = futures.pop(future)
                outcome = self._outcome(future, request)
                if outcome is not None and outcome.missing:
                    ident = (request.device, request.model)
                    attempts[ident] = attempts.get(ident, 0) + 1
                    if attempts[ident] > MAX_SHIP_ATTEMPTS:
                        self._record(request, self._failed(request, f"worker {outcome.worker} still lacks "
                                     f"{len(outcome.missing)} artifact(s) after {MAX_SHIP_ATTEMPTS} deliveries",
                                     Blame.INFRASTRUCTURE))
                        continue
                    try:
                        sent = ship(self.client, outcome.worker, {h: self.blob_paths[h] for h in outcome.missing})
                        self.progress(f"artifacts for {outcome.worker}: sent {sent.sent} file(s) it lacked, "
                                      f"{sent.bytes_sent / 1e6:.1f} MB", request.device)
                    except (OSError, KeyError) as exc:  # that worker is gone; the task goes wherever the device is
                        self.progress(f"artifacts for {outcome.worker}: not sent ({type(exc).__name__}: {exc})")
                    futures[self._send(request, attempts[ident])] = request
                elif outcome is not None:
                    self._record(request, outcome)
            if not futures:
                break
            if self.streamed is not None:  # after the finished tasks: their announcements are stale, not fetched
                self.streamed.collect(self.client)
            self.client.run_on_scheduler(nudge_unrunnable)
            now_offered = offered(self.client)
            for future, request in list(futures.items()):
                if now_offered.get(request.device):
                    unoffered_since.pop(request.device, None)
                    continue
                since = unoffered_since.setdefault(request.device, time.monotonic())
                if time.monotonic() - since > self.scale.device_deadline_s:
                    future.cancel()
                    futures.pop(future)
                    self._record(request, self._failed(request, f"no worker offered the device for "
                                 f"{self.scale.device_deadline_s:g} s (its worker is gone or the device is offline); "
                                 f"gave up on {request.model} (--device-deadline)", Blame.INFRASTRUCTURE))

    def _outcome(self, future: Any, request: TaskRequest) -> TaskOutcome | None:
        from distributed import KilledWorker

        if future.status == "finished":
            return future.result()
        if future.status == "cancelled":
            return self._failed(request, f"task for {request.model} was cancelled", Blame.INFRASTRUCTURE)
        exc = future.exception()
        if isinstance(exc, RetryableFailure):
            return exc.outcome
        if isinstance(exc, KilledWorker):
            return self._failed(request, f"{request.model}: the workers running it died too often ({exc})",
                                Blame.INFRASTRUCTURE)
        return self._failed(request, f"{request.model}: task failed: {type(exc).__name__}: {exc}", Blame.BUG)

    @staticmethod
    def _failed(request: TaskRequest, message: str, blame: Blame) -> TaskOutcome:
        return TaskOutcome(DeviceResult(request.device, "", request.target, DeviceStatus.FAILED,
                                        f"[{request.device}] {message}", blame))

    def _record(self, request: TaskRequest, outcome: TaskOutcome) -> None:
        """Write a finished (device, model) into the run directory now: files, manifest, stats.csv."""
        try:
            targets = {inside(self.rundir.root, request.device, rel): data for rel, data in outcome.files.items()}
        except DeviceError as exc:  # a worker naming paths outside its subtree: none of its files are kept
            message = str(exc).removeprefix(f"[{request.device}] ")
            outcome, targets = self._failed(request, message, Blame.INFRASTRUCTURE), {}
        for path, data in targets.items():
            write_bytes_atomic(path, data)
        if self.streamed is not None:
            self.streamed.finish(request.device, request.model)
        merged = self.rundir.update_device(request.device, lambda d: _merge(d, outcome.device))
        if outcome.stats is not None:
            self.frames[(request.device, request.model)] = outcome.stats
            write_stats(self.rundir, [DeviceOutcome(merged, self._frames())], self.progress)
        self.remaining[request.device] -= 1
        if self.remaining[request.device] == 0 and merged.status is DeviceStatus.RUNNING:
            self._succeed(request.device)
        if outcome.device.status is DeviceStatus.FAILED:
            self.progress(f"{request.model}: FAILED: {outcome.device.error}", request.device)
        else:
            self.progress(f"{request.model}: collected {len(outcome.files)} file(s) from {outcome.worker}",
                          request.device)

    def _succeed(self, device: str) -> None:
        """Every task of the device ended without failing: ok, or wrong results (as a single-host session says)."""
        current = self.rundir.job.device(device)
        wrong = current.wrong_results() if current is not None else None
        if wrong is None:
            self.rundir.update_device(device, lambda d: replace(d, status=DeviceStatus.OK))
            return
        self.progress(f"WRONG RESULTS: {wrong}", device)
        self.rundir.update_device(device, lambda d: replace(d, status=DeviceStatus.WRONG_RESULTS, blame=Blame.DATA,
                                                            error=f"[{device}] wrong results: {wrong}"))

    def _frames(self) -> list[Any]:
        return [self.frames[key] for key in self.order if key in self.frames]

    def _fail(self, device: str, message: str, blame: Blame) -> None:
        self.progress(f"FAILED: {message}", device)
        self.rundir.update_device(device, lambda d: replace(d, status=DeviceStatus.FAILED, error=message, blame=blame))


def inside(root: Path, device: str, rel: str) -> Path:
    """Where a file a worker sent goes: only under DIR/<device>/, never elsewhere (a worker is not trusted
    to name paths)."""
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts or "" in path.parts or len(path.parts) < 2 or path.parts[0] != device:
        raise DeviceError(device, f"worker sent a file outside {device}/: {rel!r}")
    return root.joinpath(*path.parts)


def _merge(current: DeviceResult, new: DeviceResult) -> DeviceResult:
    """The device's record with one more (device, model) task's result folded in."""
    merged = current
    for model in new.models:
        merged = merged.with_model(model)
    merged = replace(merged, facts=current.facts or new.facts, runner_key=new.runner_key or current.runner_key,
                     controls=current.controls or new.controls)
    if new.status is DeviceStatus.FAILED:
        merged = replace(merged, status=DeviceStatus.FAILED, error=current.error or new.error,
                         blame=current.blame or new.blame)
    return merged
