"""The job engine: one `etfarm run`, on this host or on a farm (docs/architecture.md, "The job engine").

Assembly: the run directory is checked (`--out`), the models exported (cached; before the run
directory exists, so a bad model leaves nothing behind), the run directory created (or reopened,
resuming) and its log attached. Planning (run/plan.py): what is left to run. Execution: a runner
is built per target (a target that cannot build fails only its devices), then an executor
(run/executor.py) runs the plan's devices: `LocalExecutor`, a thread per device on this host, or
the farm's, a Dask task per (device, model). Ctrl-C and SIGTERM stop the executor (runners killed,
what finished kept). Judgement: stats.csv is written from the statistics in memory (run/job_stats.py)
and the job's status decided by the one rule (run/status.py). `JobResult` hands all of it, typed and
in memory, to the store, the report, numerics and the summary.

`run_job`/`resume_job` run on this host; `run_job_on`/`resume_job_on` take any executor.
"""

from __future__ import annotations

import contextlib
import functools
import signal
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from device_agents import DeviceSpec
from orchestrator.artifacts.build import build_runner, runner_slot
from orchestrator.artifacts.lowering import ExportedModel
from orchestrator.artifacts.modelspec import ModelSpec
from orchestrator.artifacts.provenance import model_provenance
from orchestrator.base.errors import EtfarmError, UsageError
from orchestrator.base.progress import Progress
from orchestrator.base.words import counted
from orchestrator.profiles.stat_rows import ModelStats, StatRow
from orchestrator.results.model import (
    DeviceResult,
    Job,
    JobConfig,
    JobOptions,
    JobStatus,
    ModelArtifacts,
)
from orchestrator.results.record import RunRecord
from orchestrator.run.engine.joblog import job_log
from orchestrator.run.engine.local_executor import LocalExecutor
from orchestrator.run.engine.sweep import NotExported, export_configurations, sweep_models
from orchestrator.run.executor import DeviceRef, Executor, JobContext
from orchestrator.run.job_stats import JobStats
from orchestrator.run.plan import JobPlan
from orchestrator.run.rundir import LOG, RunDirectory, as_recorded, check_out
from orchestrator.run.status import exit_code, job_status

if TYPE_CHECKING:
    from orchestrator.artifacts.build import RunnerBuild


@dataclass(frozen=True)
class JobResult:
    """A finished job, as the engine hands it on: the record, every device's, every (device, model)'s
    statistics with the samples they came from (None for those a resume kept from stats.csv)."""

    rundir: RunDirectory
    job: Job
    devices: tuple[DeviceResult, ...]  # in job order
    stats: tuple[ModelStats, ...] = ()  # per (device, model), in job order
    interrupted: bool = False  # Ctrl-C or SIGTERM: what finished is recorded, the job is `interrupted`
    problem: str | None = None  # a job-level failure (host disk full writing stats; a configuration not exported)
    not_exported: tuple[NotExported, ...] = ()  # configurations whose export recipe failed: left out, said

    @functools.cached_property
    def recorded(self) -> Job:
        """The job as manifest.json records it (its order of devices and models): what the store, the report and
        numerics read, as they would from the run directory."""
        return as_recorded(self.job)

    @functools.cached_property
    def record(self) -> RunRecord:
        """The finished run's record, its job and statistics in memory (the samples are read from its file)."""
        return RunRecord(self.rundir.root, self.recorded, self.rows)

    @property
    def rows(self) -> tuple[StatRow, ...]:
        """Every row of stats.csv, in order."""
        return tuple(row for stats in self.stats for row in stats.rows)

    @property
    def status(self) -> JobStatus:
        return job_status(self.devices, interrupted=self.interrupted, problem=self.problem)

    @property
    def exit_code(self) -> int:
        return exit_code(self.status)


def run_job(devices: Sequence[DeviceSpec], specs: Sequence[ModelSpec], *, backend: str, options: JobOptions,
            out: Path | None, progress: Progress, config_file: Path | None = None, run_id: str | None = None) -> JobResult:
    """The job on this host's devices; its full DEBUG log (progress lines, device commands) goes to DIR/etfarm.log."""
    return run_job_on(LocalExecutor(devices), [d.name for d in devices], specs, backend=backend, options=options,
                      out=out, progress=progress, config_file=config_file, run_id=run_id)


def resume_job(root: Path, devices: Sequence[DeviceSpec], specs: Sequence[ModelSpec], *, progress: Progress) -> JobResult:
    """Run what a recorded job is missing on this host's devices, with its recorded settings, in its own directory."""
    return resume_job_on(LocalExecutor(devices), root, specs, progress=progress)


def run_job_on(executor: Executor, device_names: Sequence[str], specs: Sequence[ModelSpec], *, backend: str,
               options: JobOptions, out: Path | None, progress: Progress, config_file: Path | None = None,
               run_id: str | None = None) -> JobResult:
    with job_log() as attach:
        check_out(out)
        with executor:
            devices = executor.devices(list(device_names))
            config = JobConfig(devices=tuple(device_names), models=tuple(s.text for s in specs), backend=backend,
                               options=options, config_file=str(config_file) if config_file else None,
                               scheduler=executor.scheduler, names=tuple(s.name for s in specs))
            # Export and check before the run directory exists: a bad model is a usage or data error and leaves
            # nothing behind; each program is checked, an LLM recognised, a sweep expanded (run/engine/sweep.py).
            exported, spec_of, not_exported = export_configurations(specs, backend, options, progress)
            points = sweep_models(exported, options, custom_ops=own_runtimes(devices), spec_of=spec_of)
            models = [model for model, _ in points]
            rundir = RunDirectory.create(out, config, tuple(model_artifacts(m, specs[k]) for m, k in points),
                                         run_id=run_id, left_out=tuple(not_exported))
            attach(rundir.root / LOG)
            where = f" on {executor.scheduler}" if executor.scheduler else ""
            swept = f" in {counted(len(models), 'configuration')}" if len(models) != len(specs) else ""
            progress(f"run {rundir.run_id}: {counted(len(devices), 'device')}, {counted(len(specs), 'model')}{swept}"
                     f"{where} -> {rundir.root}")
            stats = JobStats(rundir.root, config.devices, [m.name for m in models])
            return _execute(executor, devices, rundir, JobPlan.fresh(config.devices), models, options, stats, progress,
                            not_exported)


def resume_job_on(executor: Executor, root: Path, specs: Sequence[ModelSpec], *, progress: Progress) -> JobResult:
    """Run what a recorded job is missing (run/plan.py), with its recorded settings, in its own run directory,
    under its run id; devices with nothing left to run are not contacted."""
    recorded = RunRecord(root).job
    with job_log(append_to=root / LOG):
        plan = JobPlan.resume(recorded)
        if plan.finished:
            return finished_result(root, recorded, progress)
        with executor:
            devices = executor.devices(list(plan.devices))
            models = resume_models(root, recorded, specs, progress, custom_ops=own_runtimes(devices))
            rundir = RunDirectory.reopen(root)
            names = [m.name for m in models]
            stats = JobStats.resumed(rundir.root, recorded.config.devices, names)
            for device in plan.complete_devices:
                stats.keep_recorded(device)
            options = recorded.config.options
            pairs, runs = plan.missing(names, options)
            where = f" on {executor.scheduler}" if executor.scheduler else ""
            progress(f"resuming run {rundir.run_id}{where}: {counted(pairs, '(device, model) task')} with "
                     f"{counted(runs, 'process run')} missing, {counted(len(plan.complete_devices), 'device')} complete "
                     f"-> {rundir.root}")
            return _execute(executor, devices, rundir, plan, models, options, stats, progress)


def finished_result(root: Path, recorded: Job, progress: Progress) -> JobResult:
    """A resume with nothing left to run: the recorded job as it is (a job that stopped after its last
    device ended is marked finished now)."""
    progress(f"run {recorded.run_id} is complete: nothing to resume")
    devices = tuple(d for name in recorded.config.devices if (d := recorded.device(name)) is not None)
    stats = JobStats.resumed(root, recorded.config.devices, [m.name for m in recorded.models])
    for device in devices:
        stats.keep_recorded(device.name)
    rundir, job = RunDirectory(root.resolve(), recorded), recorded
    if recorded.status in (JobStatus.RUNNING, JobStatus.INTERRUPTED):
        rundir = RunDirectory.reopen(root)
        job = rundir.finish(job_status(devices))
    return JobResult(rundir, job, devices, stats.all())


def _execute(executor: Executor, devices: Sequence[DeviceRef], rundir: RunDirectory, plan: JobPlan,
             models: Sequence[ExportedModel], options: JobOptions, stats: JobStats, progress: Progress,
             not_exported: Sequence[NotExported] = ()) -> JobResult:
    """Build, let the executor run the plan's devices, write stats.csv, judge; Ctrl-C/SIGTERM stop it all."""
    interrupted = False
    with terminate_as_interrupt():
        try:
            builds, errors = build_targets(sorted({(d.target, d.runtime) for d in devices}, key=str), progress)
            executor.execute(JobContext(rundir, plan, tuple(models), options, builds, errors, stats, progress))
        except Exception:  # whatever ends the job here, its manifest never stays `running`
            rundir.finish(JobStatus.FAILED)
            raise
        except KeyboardInterrupt:
            interrupted = True
            executor.stop()
    problem = stats.write(progress) or "; ".join(n.note for n in not_exported) or None
    results = tuple(d for name in rundir.job.config.devices if (d := rundir.job.device(name)) is not None)
    job = rundir.finish(job_status(results, interrupted=interrupted, problem=problem))
    return JobResult(rundir, job, results, stats.all(), interrupted=interrupted, problem=problem,
                     not_exported=tuple(not_exported))


def own_runtimes(devices: Sequence[DeviceRef]) -> bool:
    """Whether every device runs a runner built against the user's own ExecuTorch (`runtime: PATH`): then
    the llama:: custom ops may be registered there, and the runner itself refuses what its runtime lacks."""
    return bool(devices) and all(d.runtime for d in devices)


def resume_models(root: Path, recorded: Job, specs: Sequence[ModelSpec], progress: Progress, *,
                  custom_ops: bool = False) -> list[ExportedModel]:
    """The recorded job's models exported again (a cache hit when unchanged); a changed model is refused,
    because runs of two different programs under one run id would be one meaningless table."""
    exported, spec_of, _ = export_configurations(specs, recorded.config.backend, recorded.config.options, progress)
    models = [model for model, _ in sweep_models(exported, recorded.config.options, custom_ops=custom_ops,
                                                 spec_of=spec_of)]
    for model in models:
        artifacts = recorded.model_artifacts(model.name)
        if artifacts is None or artifacts.key != model.key:
            raise UsageError(f"--resume {root}: model {model.name} changed since the run started "
                             f"(export key {model.key[:12]}, recorded {artifacts.key[:12] if artifacts else 'none'}); "
                             "start a new run")
    return models


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM ends the job like Ctrl-C: statistics of what finished, job marked interrupted. (The CLI does
    so for the whole command, cli/__init__.py `interrupts`: a handler already there is kept.)"""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def model_artifacts(model: ExportedModel, spec: ModelSpec) -> ModelArtifacts:
    def text(path: Path | None) -> str | None:
        return str(path) if path else None

    origin = model_provenance(spec.source)
    return ModelArtifacts(name=model.name, spec=model.spec, backend=model.backend, key=model.key, pte=str(model.pte),
                          etrecord=text(model.etrecord), inputs=text(model.inputs),
                          reference_outputs=text(model.reference_outputs), content_hash=origin.content_hash,
                          git_commit=origin.git_commit, numerics_reference=text(model.numerics_reference),
                          recipe=model.recipe, eager_outputs=text(model.eager_outputs),
                          eager_reference=text(model.eager_reference))


def build_targets(slots: list[tuple[str, str | None]], progress: Progress) -> tuple[dict[str, RunnerBuild], dict[str, str]]:
    """Build (or find cached) a runner per (target, the user's runtime prefix or None), keyed by `runner_slot`;
    one that cannot build fails only its devices."""
    builds: dict[str, RunnerBuild] = {}
    errors: dict[str, str] = {}
    for target, runtime in slots:
        slot = runner_slot(target, runtime)
        try:
            build = build_runner(target, log=progress, runtime=runtime)
        except EtfarmError as exc:
            errors[slot] = str(exc)
            progress(f"runner for {slot} unavailable: {exc}")
            continue
        builds[slot] = build
        progress(f"runner for {slot}: {'cached, not rebuilt' if build.cached else 'built'} ({build.runtime} runtime, "
                 f"{build.root})")
    return builds, errors
