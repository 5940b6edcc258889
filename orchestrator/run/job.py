"""`etfarm run`: export (cached), build per target (cached), a thread per device, one run directory."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from device_agents import DeviceSpec
from orchestrator.artifacts.lowering import ExportedModel, export_model
from orchestrator.artifacts.modelspec import ModelSpec
from orchestrator.artifacts.provenance import model_provenance
from orchestrator.errors import EXIT_DEVICE_FAILED, EXIT_OK, EtfarmError
from orchestrator.progress import Progress
from orchestrator.run.results import (
    Job,
    JobConfig,
    JobStatus,
    ModelArtifacts,
    RunOptions,
)
from orchestrator.run.rundir import STATS, RunDirectory
from orchestrator.run.session import DeviceOutcome, DeviceSession


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
    config = JobConfig(devices=tuple(d.name for d in devices), models=tuple(s.text for s in specs), backend=backend,
                       options=options, config_file=str(config_file) if config_file else None)
    # Export before the run directory exists: a bad model is a usage error and leaves nothing behind.
    models = [export_model(spec, backend, log=progress) for spec in specs]
    rundir = RunDirectory.create(out, config, tuple(_artifacts(m, s) for m, s in zip(models, specs)))
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
                          git_commit=origin.git_commit)


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
        stats.to_csv(rundir.root / STATS, index=False)
    return stats
