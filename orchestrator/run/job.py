"""`etfarm run`: export (cached), build per target (cached), a thread per device, one run directory."""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from device_agents import DeviceSpec
from orchestrator.artifacts.lowering import ExportedModel, export_model
from orchestrator.artifacts.modelspec import ModelSpec
from orchestrator.artifacts.provenance import model_provenance
from orchestrator.cache import write_text_atomic
from orchestrator.errors import EXIT_DEVICE_FAILED, EXIT_OK, EtfarmError
from orchestrator.progress import Progress
from orchestrator.run.results import (
    Job,
    JobConfig,
    JobStatus,
    ModelArtifacts,
    RunOptions,
)
from orchestrator.run.rundir import LOG, STATS, RunDirectory, check_out
from orchestrator.run.session import DeviceOutcome, DeviceSession

JOB_LOGGER = "etfarm"  # the whole hierarchy: etfarm.progress.*, etfarm.device.<name>, ...
LOG_FORMAT = "%(asctime)s.%(msecs)03d %(threadName)s %(name)s %(levelname)s %(message)s"
_EARLY_RECORDS = 100_000  # records kept before the run directory exists (export progress)


@dataclass(frozen=True)
class JobResult:
    rundir: RunDirectory
    job: Job
    outcomes: list[DeviceOutcome]
    stats: Any  # pandas DataFrame, possibly empty

    @property
    def exit_code(self) -> int:
        return EXIT_OK if all(o.ok for o in self.outcomes) else EXIT_DEVICE_FAILED


def run_job(devices: Sequence[DeviceSpec], specs: Sequence[ModelSpec], *, backend: str, options: RunOptions,
            out: Path | None, progress: Progress, config_file: Path | None = None) -> JobResult:
    """Run the job; its full DEBUG log (progress lines, device commands) goes to DIR/etfarm.log."""
    with _job_log() as attach:
        return _run_job(devices, specs, backend, options, out, progress, config_file, attach)


@contextlib.contextmanager
def _job_log() -> Iterator[Any]:
    """Capture the `etfarm` loggers at DEBUG; `attach(path)` starts the file with what came before it."""
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
    try:
        builds, build_errors = _build_targets(sorted({d.target for d in devices}), progress)
        sessions = [
            DeviceSession(d, builds.get(d.target), models, options, rundir, progress.for_device(d.name),
                          build_error=build_errors.get(d.target))
            for d in devices
        ]
        outcomes = _run_parallel(sessions)
    except EtfarmError:
        rundir.finish(JobStatus.FAILED)
        raise
    except KeyboardInterrupt:
        rundir.finish(JobStatus.INTERRUPTED)
        raise
    stats = _write_stats(rundir, outcomes)
    ok = [o.ok for o in outcomes]
    job = rundir.finish(JobStatus.OK if all(ok) else JobStatus.PARTIAL if any(ok) else JobStatus.FAILED)
    return JobResult(rundir, job, outcomes, stats)


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


def _run_parallel(sessions: list[DeviceSession]) -> list[DeviceOutcome]:
    if len(sessions) == 1:
        return [sessions[0].run()]
    outcomes: dict[str, DeviceOutcome] = {}

    def work(session: DeviceSession) -> None:
        outcomes[session.spec.name] = session.run()

    threads = [threading.Thread(target=work, args=(s,), name=f"device-{s.spec.name}", daemon=True) for s in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [outcomes[s.spec.name] for s in sessions]


def _write_stats(rundir: RunDirectory, outcomes: list[DeviceOutcome]) -> Any:
    import pandas as pd

    frames = [frame for outcome in outcomes for frame in outcome.stats]
    stats = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if not stats.empty:
        write_text_atomic(rundir.root / STATS, stats.to_csv(index=False))
    return stats


# Shared with the distributed client (orchestrator/scale/client.py), which runs the same job on Dask.
job_log = _job_log
model_artifacts = _artifacts
build_targets = _build_targets
write_stats = _write_stats
