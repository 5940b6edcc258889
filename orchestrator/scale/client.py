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
Difference from a single-host run: a task holds one model, so the models of a device are not
interleaved with each other (each is its own device session).
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
from orchestrator.errors import Blame, DeviceError, EtfarmError, UsageError
from orchestrator.progress import Progress
from orchestrator.run.job import JobResult, build_targets, job_log, model_artifacts, write_stats
from orchestrator.run.results import DeviceResult, DeviceStatus, JobConfig, JobStatus, RunOptions
from orchestrator.run.rundir import LOG, RunDirectory, check_out
from orchestrator.run.session import DeviceOutcome
from orchestrator.scale import require_distributed, resource_name
from orchestrator.scale.blobs import BlobRef, refs_for, ship
from orchestrator.scale.task import RetryableFailure, TaskOutcome, TaskRequest, progress_topic, run_task

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
            return _Run(client, scale, progress).run(list(device_names), specs, backend, options, out, attach)
        finally:
            client.close()


class _Run:
    def __init__(self, client: Any, scale: ScaleOptions, progress: Progress) -> None:
        self.client = client
        self.scale = scale
        self.progress = progress
        self.frames: dict[tuple[str, str], Any] = {}  # (device, model) -> stats, written in job order
        self.order: list[tuple[str, str]] = []
        self.remaining: dict[str, int] = {}
        self.blob_paths: dict[str, Path] = {}

    def run(self, names: list[str], specs: Sequence[ModelSpec], backend: str, options: RunOptions,
            out: Path | None, attach_log: Any) -> JobResult:
        known = farm_devices(self.client)
        unknown = [n for n in names if n not in known]
        if unknown:
            raise UsageError(f"--devices: {', '.join(unknown)}: no worker of {self.scale.scheduler} has it in its "
                             f"inventory (known: {', '.join(sorted(known)) or 'none'})")
        devices = [known[n] for n in names]
        config = JobConfig(devices=tuple(names), models=tuple(s.text for s in specs), backend=backend, options=options)
        models = [export_model(spec, backend, log=self.progress) for spec in specs]
        artifacts = tuple(model_artifacts(m, s) for m, s in zip(models, specs, strict=False))
        self.rundir = rundir = RunDirectory.create(out, config, artifacts)
        attach_log(rundir.root / LOG)
        self.progress(f"run {rundir.run_id}: {len(devices)} device(s), {len(specs)} model(s) on {self.scale.scheduler} "
                      f"-> {rundir.root}")
        try:
            futures = self._submit(devices, models, backend, options, config)
            self._collect(futures)
        except EtfarmError:
            rundir.finish(JobStatus.FAILED)
            raise
        except KeyboardInterrupt:
            rundir.finish(JobStatus.INTERRUPTED)
            raise
        outcomes = [DeviceOutcome(rundir.job.device(n) or DeviceResult(n, "", "")) for n in names]
        stats, problem = write_stats(rundir, [DeviceOutcome(outcomes[0].result, self._frames())] if outcomes else [],
                                     self.progress)
        ok = [o.ok for o in outcomes]
        job = rundir.finish(JobStatus.OK if all(ok) else JobStatus.PARTIAL if any(ok) else JobStatus.FAILED)
        return JobResult(rundir, job, outcomes, stats, problem=problem)

    # ---- submit ------------------------------------------------------------------

    def _submit(self, devices: list[FarmDevice], models: list[Any], backend: str, options: RunOptions,
                config: JobConfig) -> dict[Any, TaskRequest]:
        builds, errors = build_targets(sorted({d.target for d in devices}), self.progress)
        model_refs: dict[str, tuple[tuple[BlobRef, ...], dict[str, str]]] = {}
        for model in models:
            roles = {role: path for role in ("pte", "etrecord", "inputs", "reference_outputs", "numerics_reference")
                     if (path := getattr(model, role)) is not None}
            named = {role: f"model/{model.name}/{Path(path).name}" for role, path in roles.items()}
            refs, by_hash = refs_for({named[role]: Path(path) for role, path in roles.items()})
            self.blob_paths.update(by_hash)
            model_refs[model.name] = (refs, named)
        runner_refs: dict[str, tuple[BlobRef, ...]] = {}
        for target, build in builds.items():
            refs, by_hash = refs_for({f"runner/{rel}": path for rel, path in build.stage_files().items()})
            self.blob_paths.update(by_hash)
            runner_refs[target] = refs
        self._ship_all({d.worker for d in devices})
        self.client.subscribe_topic(progress_topic(self.rundir.run_id), self._on_event)  # before any task starts
        futures: dict[Any, TaskRequest] = {}
        for device in devices:
            self.rundir.add_device(DeviceResult(device.name, device.transport, device.target, DeviceStatus.RUNNING))
            if device.target not in builds:
                self._fail(device.name, errors.get(device.target) or f"no runner for target {device.target}",
                           Blame.INFRASTRUCTURE)
                continue
            self.remaining[device.name] = len(models)
            for model in models:
                self.order.append((device.name, model.name))
                refs, named = model_refs[model.name]
                request = TaskRequest(run_id=self.rundir.run_id, device=device.name, model=model.name,
                                      model_spec=model.spec, backend=backend, model_key=model.key, target=device.target,
                                      runner_key=builds[device.target].key, blobs=runner_refs[device.target] + refs,
                                      roles=named, options=options, config=config)
                futures[self._send(request)] = request
        return futures

    def _send(self, request: TaskRequest, attempt: int = 0) -> Any:
        key = f"etfarm-{request.run_id}-{request.device}-{request.model}" + (f"-{attempt}" if attempt else "")
        return self.client.submit(run_task, request, key=key, pure=False, retries=self.scale.retries,
                                  resources={resource_name(request.device): 1})

    def _ship_all(self, workers: set[str]) -> None:
        for worker in sorted(workers):
            try:
                report = ship(self.client, worker, self.blob_paths)
            except (OSError, KeyError) as exc:  # gone since we asked: a task it runs later asks for what it lacks
                self.progress(f"artifacts for {worker}: not sent ({type(exc).__name__}: {exc})")
                continue
            self.progress(f"artifacts for {worker}: sent {report.sent} file(s), {report.bytes_sent / 1e6:.1f} MB "
                          f"({report.skipped} already there)")

    def _on_event(self, event: Any) -> None:
        _, message = event
        if isinstance(message, dict):
            self.progress(str(message.get("message", "")), message.get("device"))

    # ---- collect -----------------------------------------------------------------

    def _collect(self, futures: dict[Any, TaskRequest]) -> None:
        from distributed import wait

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
        merged = self.rundir.update_device(request.device, lambda d: _merge(d, outcome.device))
        if outcome.stats is not None:
            self.frames[(request.device, request.model)] = outcome.stats
            write_stats(self.rundir, [DeviceOutcome(merged, self._frames())], self.progress)
        self.remaining[request.device] -= 1
        if self.remaining[request.device] == 0 and merged.status is DeviceStatus.RUNNING:
            self.rundir.update_device(request.device, lambda d: replace(d, status=DeviceStatus.OK))
        if outcome.device.status is DeviceStatus.FAILED:
            self.progress(f"{request.model}: FAILED: {outcome.device.error}", request.device)
        else:
            self.progress(f"{request.model}: collected {len(outcome.files)} file(s) from {outcome.worker}",
                          request.device)

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
