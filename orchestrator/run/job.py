"""`etfarm run`: export (cached), build per target (cached), a thread per device, one run directory.

Faults end devices, not the job: every device runs in a daemon thread watched by the main thread
(DeviceThreads: a wedged one is given up after `watchdog_limit_s`). Ctrl-C and SIGTERM stop
every runner (on the devices and the host's process groups), write statistics for everything
finished and mark the job `interrupted` (exit 130). `resume_job` runs only what a recorded job
is missing, with its recorded settings, into the same directory and run id.
"""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
import signal
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from device_agents import DeviceSpec
from orchestrator import procs
from orchestrator.artifacts.lowering import ExportedModel, export_model
from orchestrator.artifacts.modelspec import ModelSpec
from orchestrator.artifacts.provenance import model_provenance
from orchestrator.cache import write_text_atomic
from orchestrator.errors import (
    DISK_FULL_ERRNOS,
    EXIT_DEVICE_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    Blame,
    EtfarmError,
    UsageError,
)
from orchestrator.progress import Progress
from orchestrator.run.results import (
    DeviceStatus,
    Job,
    JobConfig,
    JobStatus,
    ModelArtifacts,
    ProcessRun,
    RunOptions,
    load_manifest,
)
from orchestrator.run.rundir import LOG, STATS, RunDirectory, check_out
from orchestrator.run.session import DeviceOutcome, DeviceSession

JOB_LOGGER = "etfarm"  # the whole hierarchy: etfarm.progress.*, etfarm.device.<name>, ...
LOG_FORMAT = "%(asctime)s.%(msecs)03d %(threadName)s %(name)s %(levelname)s %(message)s"
_EARLY_RECORDS = 100_000  # records kept before the run directory exists (export progress)
WAIT_POLL_SEC = 0.5  # the main thread's longest sleep while devices run (Ctrl-C and the watchdog act within it)
WATCHDOG_GRACE_SEC = 30.0  # on top of a step's own deadlines before a silent device thread is given up
STOP_WAIT_SEC = 15.0  # Ctrl-C: how long device threads get to record what finished once their runners are killed


@dataclass(frozen=True)
class JobResult:
    rundir: RunDirectory
    job: Job
    outcomes: list[DeviceOutcome]
    stats: Any  # pandas DataFrame, possibly empty
    interrupted: bool = False  # Ctrl-C or SIGTERM: what finished is recorded, the job is `interrupted`
    problem: str | None = None  # a job-level failure after the devices ran (host disk full writing stats)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return EXIT_INTERRUPTED
        return EXIT_OK if all(o.ok for o in self.outcomes) and self.problem is None else EXIT_DEVICE_FAILED


def run_job(devices: Sequence[DeviceSpec], specs: Sequence[ModelSpec], *, backend: str, options: RunOptions,
            out: Path | None, progress: Progress, config_file: Path | None = None) -> JobResult:
    """Run the job; its full DEBUG log (progress lines, device commands) goes to DIR/etfarm.log."""
    with _job_log() as attach:
        return _run_job(devices, specs, backend, options, out, progress, config_file, attach)


@contextlib.contextmanager
def _job_log(append_to: Path | None = None) -> Iterator[Any]:
    """Capture the `etfarm` loggers at DEBUG; `attach(path)` starts the file with what came before it
    (`append_to`: the run directory's log exists already, as when resuming: log there from the start)."""
    logger = logging.getLogger(JOB_LOGGER)
    early = logging.handlers.MemoryHandler(_EARLY_RECORDS, flushLevel=logging.CRITICAL + 1)
    handlers: list[logging.Handler] = [early]
    previous = (logger.level, logger.propagate)
    logger.setLevel(logging.DEBUG)
    # Not to the root logger: a library (executorch) may have configured it, and the job's DEBUG
    # records belong in the file (and on stderr only with -v, through the `etfarm` logger's own handler).
    logger.propagate = False
    logger.addHandler(early)

    def attach(path: Path) -> None:
        file_handler = logging.FileHandler(path, encoding="utf-8")
        file_handler.setFormatter(logging.Formatter(LOG_FORMAT, "%Y-%m-%dT%H:%M:%S"))
        early.setTarget(file_handler)
        early.flush()
        logger.removeHandler(early)
        logger.addHandler(file_handler)
        handlers.append(file_handler)

    if append_to is not None:
        attach(append_to)
    try:
        yield attach
    finally:
        for handler in handlers:
            logger.removeHandler(handler)
            handler.close()
        logger.setLevel(previous[0])
        logger.propagate = previous[1]


def _run_job(devices: Sequence[DeviceSpec], specs: Sequence[ModelSpec], backend: str, options: RunOptions,
             out: Path | None, progress: Progress, config_file: Path | None, attach_log: Any) -> JobResult:
    config = JobConfig(devices=tuple(d.name for d in devices), models=tuple(s.text for s in specs), backend=backend,
                       options=options, config_file=str(config_file) if config_file else None)
    check_out(out)
    # Export before the run directory exists: a bad model is a usage error and leaves nothing behind.
    models = [export_model(spec, backend, log=progress) for spec in specs]
    rundir = RunDirectory.create(out, config, tuple(_artifacts(m, s) for m, s in zip(models, specs, strict=False)))
    attach_log(rundir.root / LOG)
    progress(f"run {rundir.run_id}: {len(devices)} device(s), {len(specs)} model(s) -> {rundir.root}")
    return _run_devices(rundir, devices, models, options, progress, {}, {})


def _run_devices(rundir: RunDirectory, devices: Sequence[DeviceSpec], models: list[ExportedModel],
                 options: RunOptions, progress: Progress, done: Mapping[str, Mapping[str, tuple[ProcessRun, ...]]],
                 kept: Mapping[str, DeviceOutcome]) -> JobResult:
    """Build, run every device not in `kept` in its own thread, write stats; Ctrl-C/SIGTERM stop it all."""
    interrupted = False
    outcomes: list[DeviceOutcome] = []
    with _terminate_as_interrupt():
        try:
            builds, build_errors = _build_targets(sorted({d.target for d in devices if d.name not in kept}), progress)
            sessions = [
                DeviceSession(d, builds.get(d.target), models, options, rundir, progress.for_device(d.name),
                              build_error=build_errors.get(d.target), done=done.get(d.name))
                for d in devices if d.name not in kept
            ]
            fresh = DeviceThreads(sessions, options, rundir)
            try:
                by_name = fresh.wait()
            except KeyboardInterrupt:
                interrupted = True
                progress("interrupted: stopping the runners and keeping what finished")
                by_name = fresh.stop()
            outcomes = [kept[d.name] if d.name in kept else by_name[d.name] for d in devices]
        except EtfarmError:
            rundir.finish(JobStatus.FAILED)
            raise
        except KeyboardInterrupt:  # during the builds: nothing ran yet
            interrupted = True
            procs.kill_running()
            outcomes = [kept[d.name] for d in devices if d.name in kept]
    stats, problem = _write_stats(rundir, outcomes, progress)
    ok = [o.ok for o in outcomes]
    status = (JobStatus.INTERRUPTED if interrupted else JobStatus.OK if all(ok) and ok and problem is None
              else JobStatus.PARTIAL if any(ok) else JobStatus.FAILED)
    job = rundir.finish(status)
    return JobResult(rundir, job, outcomes, stats, interrupted=interrupted, problem=problem)


def resume_job(root: Path, devices: Sequence[DeviceSpec], specs: Sequence[ModelSpec], *, progress: Progress) -> JobResult:
    """Run what a recorded job is missing, with its recorded settings, in its own run directory."""
    recorded = load_manifest(root)
    with _job_log(append_to=root / LOG):
        finished = finished_result(root, recorded, progress)
        if finished is not None:
            return finished
        kept = complete_devices(root, recorded)
        models = resume_models(root, recorded, specs, progress)
        rundir = RunDirectory.reopen(root)
        done = {d.name: {m.name: m.runs for m in d.models} for d in recorded.devices if d.name not in kept}
        missing = sum(1 for d in devices if d.name not in kept)
        progress(f"resuming run {rundir.run_id}: {missing} device(s) with runs missing, {len(kept)} complete -> {root}")
        return _run_devices(rundir, devices, models, recorded.config.options, progress, done, kept)


def complete_devices(root: Path, recorded: Job) -> dict[str, DeviceOutcome]:
    """The recorded job's devices with nothing left to run, with their statistics from stats.csv."""
    names = [a.name for a in recorded.models]
    return {d.name: DeviceOutcome(d, recorded_stats(root, d.name))
            for d in recorded.devices if d.complete(names) and d.name in recorded.config.devices}


def finished_result(root: Path, recorded: Job, progress: Progress) -> JobResult | None:
    """A resume with nothing left to run: the recorded job as it is (a job that stopped after its last
    device ended is marked finished now); None when something is left to run."""
    kept = complete_devices(root, recorded)
    if not all(name in kept for name in recorded.config.devices):
        return None
    progress(f"run {recorded.run_id} is complete: nothing to resume")
    outcomes = [kept[name] for name in recorded.config.devices]
    rundir, job = RunDirectory(root.resolve(), recorded), recorded
    if recorded.status in (JobStatus.RUNNING, JobStatus.INTERRUPTED):
        rundir = RunDirectory.reopen(root)
        job = rundir.finish(JobStatus.OK if all(o.ok for o in outcomes) else JobStatus.PARTIAL)
    return JobResult(rundir, job, outcomes, _concat(o.stats for o in outcomes))


def resume_models(root: Path, recorded: Job, specs: Sequence[ModelSpec], progress: Progress) -> list[ExportedModel]:
    """The recorded job's models exported again (a cache hit when unchanged); a changed model is refused,
    because runs of two different programs under one run id would be one meaningless table."""
    models = [export_model(spec, recorded.config.backend, log=progress) for spec in specs]
    for model in models:
        artifacts = recorded.model_artifacts(model.name)
        if artifacts is None or artifacts.key != model.key:
            raise UsageError(f"--resume {root}: model {model.name} changed since the run started "
                             f"(export key {model.key[:12]}, recorded {artifacts.key[:12] if artifacts else 'none'}); "
                             "start a new run")
    return models


def recorded_stats(root: Path, device: str, model: str | None = None) -> list[Any]:
    """The rows of DIR/stats.csv for `device` (and `model`), as a one-frame list (empty when none)."""
    import pandas as pd

    path = root / STATS
    if not path.is_file():
        return []
    stats = pd.read_csv(path)
    if "device" not in stats:
        return []
    keep = stats["device"].astype(str) == device
    if model is not None and "model" in stats:
        keep &= stats["model"].astype(str) == model
    rows = stats[keep]
    return [rows.reset_index(drop=True)] if not rows.empty else []



@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM ends the job like Ctrl-C: statistics of what finished, job marked interrupted."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _artifacts(model: ExportedModel, spec: ModelSpec) -> ModelArtifacts:
    def text(path: Path | None) -> str | None:
        return str(path) if path else None

    origin = model_provenance(spec.source)
    return ModelArtifacts(name=model.name, spec=model.spec, backend=model.backend, key=model.key, pte=str(model.pte),
                          etrecord=text(model.etrecord), inputs=text(model.inputs),
                          reference_outputs=text(model.reference_outputs), content_hash=origin.content_hash,
                          git_commit=origin.git_commit, numerics_reference=text(model.numerics_reference))


def _build_targets(targets: list[str], progress: Progress) -> tuple[dict[str, Any], dict[str, str]]:
    """Build (or find cached) runners; a target that cannot build fails only its devices."""
    from orchestrator.artifacts.build import build_runner

    builds: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for target in targets:
        try:
            build = build_runner(target, log=progress)
        except EtfarmError as exc:
            errors[target] = str(exc)
            progress(f"runner for {target} unavailable: {exc}")
            continue
        builds[target] = build
        progress(f"runner for {target}: {'cached, not rebuilt' if build.cached else 'built'} ({build.root})")
    return builds, errors


class DeviceThreads:
    """A daemon thread per device session, waited for by the main thread with a bound (the watchdog).

    The main thread never blocks unboundedly, so Ctrl-C and SIGTERM reach it at once. A session that
    shows no progress for longer than any one of its steps may take (the run deadline plus the
    step's housekeeping and the host grace, WATCHDOG_GRACE_SEC on top) is given up: its runner is
    killed, the device is marked failed, and the thread (a daemon) cannot keep the process alive."""

    def __init__(self, sessions: Sequence[DeviceSession], options: RunOptions, rundir: RunDirectory) -> None:
        self.sessions = list(sessions)
        self.rundir = rundir
        self.limit_s = watchdog_limit_s(options)
        self.outcomes: dict[str, DeviceOutcome] = {}
        self.threads = {s.spec.name: threading.Thread(target=self._work, args=(s,), name=f"device-{s.spec.name}",
                                                      daemon=True) for s in self.sessions}
        for thread in self.threads.values():
            thread.start()

    def _work(self, session: DeviceSession) -> None:
        self.outcomes[session.spec.name] = session.run()

    def wait(self) -> dict[str, DeviceOutcome]:
        while True:
            alive = [s for s in self.sessions if self.threads[s.spec.name].is_alive() and s.spec.name not in self.outcomes]
            if not alive:
                return self.outcomes
            now = time.monotonic()
            for session in alive:
                if not session.abandoned and not session.waiting and now - session.last_progress > self.limit_s:
                    self._give_up(session, f"[{session.spec.name}] watchdog: no progress for {self.limit_s:.0f} s; "
                                           "the device thread is wedged and was given up")
            self.threads[alive[0].spec.name].join(WAIT_POLL_SEC)

    def stop(self) -> dict[str, DeviceOutcome]:
        """Ctrl-C: kill every runner (devices, then host process groups), wait a bounded time, record the rest."""
        aborts = [threading.Thread(target=s.abort, daemon=True) for s in self.sessions]
        for thread in aborts:
            thread.start()
        deadline = time.monotonic() + STOP_WAIT_SEC
        for thread in aborts:
            thread.join(max(0.0, deadline - time.monotonic()))
        procs.kill_running()
        for session in self.sessions:
            self.threads[session.spec.name].join(max(0.0, deadline - time.monotonic()))
        for session in self.sessions:
            if session.spec.name not in self.outcomes:
                self._give_up(session, f"[{session.spec.name}] interrupted", DeviceStatus.INTERRUPTED)
        return self.outcomes

    def _give_up(self, session: DeviceSession, message: str, status: DeviceStatus = DeviceStatus.FAILED) -> None:
        session.say(message)
        threading.Thread(target=session.abort, daemon=True).start()
        session.abandoned = True
        blame = None if status is DeviceStatus.INTERRUPTED else Blame.INFRASTRUCTURE
        result = self.rundir.update_device(session.spec.name, lambda d: replace(d, status=status, error=message,
                                                                                 blame=blame))
        self.outcomes[session.spec.name] = DeviceOutcome(result, list(session.stats))


def watchdog_limit_s(options: RunOptions) -> float:
    """The longest a device session may go without progress: one process run's whole step, plus grace."""
    from device_agents.base import HOST_DEADLINE_GRACE_SEC, STALL_TIMEOUT_SEC
    from device_agents.step import STEP_OVERHEAD_SEC

    step = max(options.run_timeout_s + STEP_OVERHEAD_SEC, STALL_TIMEOUT_SEC)
    return step + HOST_DEADLINE_GRACE_SEC + WATCHDOG_GRACE_SEC


def _concat(frame_lists: Iterable[list[Any]]) -> Any:
    import pandas as pd

    frames = [frame for frames in frame_lists for frame in frames]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _write_stats(rundir: RunDirectory, outcomes: list[DeviceOutcome], progress: Progress) -> tuple[Any, str | None]:
    """stats.csv of every device's finished models; a full disk is said, not raised (the rest is on disk)."""
    stats = _concat(o.stats for o in outcomes)
    if not stats.empty:
        try:
            write_text_atomic(rundir.root / STATS, stats.to_csv(index=False))
        except OSError as exc:
            if exc.errno not in DISK_FULL_ERRNOS:
                raise
            problem = f"host disk full: {rundir.root / STATS}"
            progress(f"{problem}: statistics not written (the raw artifacts are kept; `etfarm analyze` them later)")
            return stats, problem
    return stats, None


# Shared with the distributed client (orchestrator/scale/client.py), which runs the same job on Dask.
job_log = _job_log
terminate_as_interrupt = _terminate_as_interrupt
model_artifacts = _artifacts
build_targets = _build_targets
write_stats = _write_stats
