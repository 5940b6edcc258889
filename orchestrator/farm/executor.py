"""The farm's executor: the job engine's devices as Dask tasks, one per (device, model).

Given a planned job (run/executor.py), it ships the runners and models content-addressed
(blobs.py) to the workers that own the devices, submits one task per (device, model) that needs
the device's resource (`pure=False`: two runs of the same job are two measurements; a resumed
model is sent with its finished process runs and their files), prints the workers' progress events
as local progress, and writes each finished (device, model) into the run directory as soon as its
task returns (files, manifest, stats.csv), so nothing collected is lost when something later fails.
Each process run a task finishes is announced and fetched at once (streamed.py), so a worker lost
mid-task loses only the run in flight; a model left with streamed runs only is analysed here.

What is Dask's alone: losing a worker (Dask puts its tasks back; they run wherever the device is
offered again), the device deadline (a task that waits longer than `device_deadline_s` with no
worker offering its device is cancelled, its device failed: infrastructure), a worker that lacks
artifacts (shipped again, at most MAX_SHIP_ATTEMPTS times), and the stop event (Ctrl-C: every
task's session aborts, waiting tasks are cancelled, running devices are `interrupted`).
Difference from a single-host job: a task holds one model, so the models of a device are not
interleaved with each other. See docs/architecture.md, "Many hosts (Dask)".
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any, Self

from orchestrator.artifacts.lowering import ExportedModel
from orchestrator.cache import write_bytes_atomic
from orchestrator.cleanup import close_quietly
from orchestrator.errors import Blame, DeviceError, EtfarmError, UsageError
from orchestrator.farm.blobs import BlobRef, refs_for
from orchestrator.farm.client import DaskFarm, FarmDevice, FarmOptions, failed_reply
from orchestrator.farm.streamed import StreamedRuns
from orchestrator.farm.task import TaskReply, TaskRequest
from orchestrator.run.device_record import DeviceRecord
from orchestrator.run.executor import JobContext
from orchestrator.run.results import DeviceResult, DeviceStatus, ProcessRun
from orchestrator.run.runner_contract import ETDUMP_NAME

POLL_SEC = 1.0
MAX_SHIP_ATTEMPTS = 3  # deliveries of missing artifacts to a worker before its task fails
MODEL_ROLES = ("pte", "etrecord", "inputs", "reference_outputs", "numerics_reference", "llm_reference")


class FarmExecutor:
    def __init__(self, options: FarmOptions, farm: Any = None) -> None:
        self.options = options
        self.scheduler: str | None = options.scheduler
        self._farm: Any = farm  # a DaskFarm (connected on entry), or a stand-in given by a test
        self._devices: dict[str, FarmDevice] = {}
        self._context: JobContext | None = None
        self._records: dict[str, DeviceRecord] = {}
        self._remaining: dict[str, int] = {}
        self._blob_paths: dict[str, Path] = {}
        self._futures: dict[Any, TaskRequest] = {}
        self._streamed: StreamedRuns | None = None  # process runs announced by tasks still running

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
        self._streamed = StreamedRuns(context.rundir, lambda device, rel: inside(context.rundir.root, device, rel))
        self._submit(context)
        self._collect(context)
        self._analyse_streamed_partials(context)

    def stop(self) -> None:
        """Ctrl-C: tell the running tasks to abort their sessions, drop the waiting ones, mark what was cut."""
        context = self._context
        if context is None:  # during the builds: nothing was sent
            return
        context.progress("interrupted: stopping the tasks on the workers and keeping what finished")
        if self._streamed is not None:  # what the workers announced before the stop
            self._streamed.collect(self._farm.client)
        try:
            self._farm.stop(context.rundir.run_id)
            self._farm.cancel(list(self._futures))
        except Exception as exc:  # noqa: BLE001 - a scheduler gone already has nothing left to stop
            context.progress(f"could not tell the workers to stop: {type(exc).__name__}: {exc}")
        for name, record in self._records.items():
            if record.current.status is DeviceStatus.RUNNING:
                record.close(DeviceStatus.INTERRUPTED, f"[{name}] interrupted", None)
        self._analyse_streamed_partials(context)

    # ---- submit ------------------------------------------------------------------

    def _submit(self, context: JobContext) -> None:
        model_refs = {model.name: self._model_refs(model) for model in context.models}
        runner_refs = {target: self._refs({f"runner/{rel}": path for rel, path in build.stage_files().items()})
                       for target, build in context.builds.items()}
        requests: list[TaskRequest] = []
        for device in self._devices.values():
            record = self._records[device.name] = context.record(device)
            record.start()
            unbuilt = context.no_runner(device.target)
            if unbuilt:
                record.fail(unbuilt, Blame.INFRASTRUCTURE)
            for model in context.models:
                if (device.name, model.name) in context.plan.complete_models:  # resumed: its statistics stay
                    context.stats.keep_recorded(device.name, model.name)
                elif not unbuilt:
                    done = context.plan.runs_done(device.name, model.name)
                    requests.append(self._request(context, device, model, runner_refs[device.target],
                                                  model_refs[model.name], done))
        for device in self._devices.values():  # a device with nothing left to send (all its models kept) is done
            if device.name not in self._remaining and device.target in context.builds:
                self._records[device.name].succeed()
        by_worker: dict[str, set[str]] = {}
        for request in requests:
            by_worker.setdefault(self._devices[request.device].worker, set()).update(request.hashes())
        for worker, hashes in sorted(by_worker.items()):
            self._ship(worker, hashes)
        self._farm.listen(context.rundir.run_id, self._on_event)  # before any task starts
        for request in requests:
            self._futures[self._farm.submit(request)] = request

    def _request(self, context: JobContext, device: FarmDevice, model: ExportedModel, runner: tuple[BlobRef, ...],
                 refs: tuple[tuple[BlobRef, ...], dict[str, str]], done: tuple[ProcessRun, ...]) -> TaskRequest:
        config = context.rundir.job.config
        self._remaining[device.name] = self._remaining.get(device.name, 0) + 1
        assert self._streamed is not None
        self._streamed.start(device.name, model.name, done)
        return TaskRequest(run_id=context.rundir.run_id, device=device.name, model=model.name, model_spec=model.spec,
                           backend=config.backend, model_key=model.key, target=device.target,
                           runner_key=context.builds[device.target].key, runtime=context.builds[device.target].info,
                           blobs=runner + refs[0], roles=refs[1],
                           options=config.options, config=config, done=done, workload=model.workload,
                           prior=self._prior_refs(context, device.name, model.name, done) if done else ())

    def _model_refs(self, model: ExportedModel) -> tuple[tuple[BlobRef, ...], dict[str, str]]:
        roles = {role: path for role in MODEL_ROLES if (path := getattr(model, role)) is not None}
        named = {role: f"model/{model.name}/{Path(path).name}" for role, path in roles.items()}
        return self._refs({named[role]: Path(path) for role, path in roles.items()}), named

    def _refs(self, files: dict[str, Path]) -> tuple[BlobRef, ...]:
        refs, by_hash = refs_for(files)
        self._blob_paths.update(by_hash)
        return refs

    def _prior_refs(self, context: JobContext, device: str, model: str, done: tuple[ProcessRun, ...]) -> tuple[BlobRef, ...]:
        """The files of a model's finished runs, named relative to the run directory (the worker puts them
        at the same place in its own run directory, where the session reads them to analyse every run)."""
        root = context.rundir.root
        files = {}
        for run in done:
            run_dir = root / device / model / run.label
            for path in sorted(run_dir.rglob("*")) if run_dir.is_dir() else ():
                if path.is_file() and not path.is_symlink():
                    files[path.relative_to(root).as_posix()] = path
        return self._refs(files)

    def _ship(self, worker: str, hashes: set[str] | tuple[str, ...], device: str | None = None) -> bool:
        assert self._context is not None
        lacked = device is not None
        try:
            report = self._farm.ship(worker, {h: self._blob_paths[h] for h in sorted(hashes)})
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
        if isinstance(message, dict) and not (self._streamed is not None and self._streamed.offer(message)):
            assert self._context is not None
            self._context.progress(str(message.get("message", "")), message.get("device"))

    # ---- collect -----------------------------------------------------------------

    def _collect(self, context: JobContext) -> None:
        futures = self._futures
        attempts: dict[tuple[str, str], int] = {}
        unoffered_since: dict[str, float] = {}
        while futures:
            for future in self._farm.wait(list(futures), POLL_SEC):
                request = futures.pop(future)
                reply = self._farm.reply(future, request)
                if not reply.missing:
                    self._record(context, request, reply)
                    continue
                ident = (request.device, request.model)
                attempts[ident] = attempts.get(ident, 0) + 1
                if attempts[ident] > MAX_SHIP_ATTEMPTS:
                    self._record(context, request, failed_reply(request, f"worker {reply.worker} still lacks "
                                 f"{len(reply.missing)} artifact(s) after {MAX_SHIP_ATTEMPTS} deliveries",
                                 Blame.INFRASTRUCTURE))
                    continue
                self._ship(reply.worker, reply.missing, request.device)  # gone: the task goes wherever the device is
                futures[self._farm.submit(request, attempts[ident])] = request
            if not futures:
                break
            if self._streamed is not None:  # after the finished tasks: their announcements are stale, not fetched
                self._streamed.collect(self._farm.client)
            self._farm.nudge()
            self._enforce_deadline(context, unoffered_since)

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
                self._record(context, request, failed_reply(request, f"no worker offered the device for "
                             f"{deadline_s:g} s (its worker is gone or the device is offline); "
                             f"gave up on {request.model} (--device-deadline)", Blame.INFRASTRUCTURE))

    def _record(self, context: JobContext, request: TaskRequest, reply: TaskReply) -> None:
        """Write a finished (device, model) into the run directory now: files, manifest, stats.csv."""
        try:
            targets = {inside(context.rundir.root, request.device, rel): data for rel, data in reply.files.items()}
        except DeviceError as exc:  # a worker naming paths outside its subtree: none of its files are kept
            message = str(exc).removeprefix(f"[{request.device}] ")
            reply, targets = failed_reply(request, message, Blame.INFRASTRUCTURE), {}
        for path, data in targets.items():
            write_bytes_atomic(path, data)
        if self._streamed is not None:
            self._streamed.finish(request.device, request.model)
        record = self._records[request.device]
        merged = record.update(lambda d: merge(d, reply.device))
        if reply.stats is not None:
            context.stats.add(reply.stats)
            context.stats.write(context.progress)
        self._remaining[request.device] -= 1
        if self._remaining[request.device] == 0 and merged.status is DeviceStatus.RUNNING:
            record.succeed()
        if reply.device.status is DeviceStatus.FAILED:
            context.progress(f"{request.model}: FAILED: {reply.device.error}", request.device)
        else:
            context.progress(f"{request.model}: collected {len(reply.files)} file(s) from {reply.worker}",
                             request.device)

    def _analyse_streamed_partials(self, context: JobContext) -> None:
        """A model left with streamed runs only (its task never returned: worker lost, deadline, Ctrl-C) is
        analysed here from the files already in DIR, as a single-host session analyses a partial model."""
        from orchestrator.profiles.stat_rows import model_stats

        rundir = context.rundir
        for device in rundir.job.config.devices:
            for model in (m.name for m in context.models):
                record = rundir.job.device(device)
                result = record.model(model) if record is not None else None
                if context.stats.has(device, model) or result is None or not result.traced_runs:
                    continue
                etdumps = [path for run in result.traced_runs
                           if (path := rundir.root / device / model / run.label / ETDUMP_NAME).is_file()]
                artifacts = rundir.job.model_artifacts(model)
                etrecord = Path(artifacts.etrecord) if artifacts and artifacts.etrecord else None
                pte = Path(artifacts.pte) if artifacts and artifacts.pte else None
                try:
                    context.stats.add(model_stats(device, model, etdumps, etrecord, pte))
                except EtfarmError as exc:  # the runs stay on disk; `etfarm analyze` can read them later
                    context.progress(f"{model}: the {len(etdumps)} run(s) kept could not be analysed: {exc}", device)


def inside(root: Path, device: str, rel: str) -> Path:
    """Where a file a worker sent goes: only under DIR/<device>/, never elsewhere (a worker is not trusted
    to name paths)."""
    path = PurePosixPath(rel)
    if path.is_absolute() or ".." in path.parts or "" in path.parts or len(path.parts) < 2 or path.parts[0] != device:
        raise DeviceError(device, f"worker sent a file outside {device}/: {rel!r}")
    return root.joinpath(*path.parts)


def merge(current: DeviceResult, new: DeviceResult) -> DeviceResult:
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
