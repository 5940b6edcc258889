"""One device's part of a job: stage runner and models, run them R times, pull, analyze.

A DeviceSession runs in its own thread; it only touches its own subtree of the run directory
and hands its results to the RunDirectory as frozen `results` objects, so devices never wait
on each other. Failures are recorded with who is to blame, never raised.

Nothing collected is lost: whatever ends the loop (a failed run, a dead device, Ctrl-C, a full
host disk), every model keeps the process runs that finished, analysed (ModelStatus.PARTIAL
when some are missing). A resumed job (`etfarm run --resume`) hands the session the runs
already done; it runs only the missing ones. `abort()` (from the job's main thread) kills the
runner on the device; `last_progress` lets the job's watchdog give up a wedged session.

Transport faults: connecting, staging and each process run are retried (run/retry.py); before a
retry the session reconnects and re-validates its device lock, and before a process run's retry
it kills what the dropped link left running (run/process_run.py `prepare_retry`).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from device_agents import DeviceSpec, create_agent
from device_agents.base import DeviceAgent, parse_facts
from device_agents.step import kill_step_command, step_files
from orchestrator.artifacts.build import RunnerBuild
from orchestrator.artifacts.lowering import ExportedModel
from orchestrator.cache import write_json_atomic
from orchestrator.errors import (
    Blame,
    DataError,
    DeviceError,
    EtfarmError,
    blame_of,
    disk_full,
)
from orchestrator.progress import DeviceProgress
from orchestrator.run.calibration import flag_runs
from orchestrator.run.controls import restore_commands, setup_commands
from orchestrator.run.locks import RemoteLock, budget_left, device_lock, remote_lock
from orchestrator.run.process_run import RunPlan, prepare_retry, run_once
from orchestrator.run.results import (
    Attempt,
    DeviceResult,
    DeviceStatus,
    ModelResult,
    ModelStatus,
    ProcessRun,
    RunOptions,
)
from orchestrator.run.retry import with_retries
from orchestrator.run.rundir import DEVICE_JSON, RunDirectory
from orchestrator.run.runner_contract import ETDUMP_NAME, OUTPUTS_NAME
from orchestrator.run.schedule import ScheduledRun, schedule_runs
from orchestrator.run.verify import verify_outputs

log = logging.getLogger(__name__)
T = TypeVar("T")

# The command that kills a device's runner on Ctrl-C gets this long on the device.
ABORT_TIMEOUT_SEC = 5.0


class Interrupted(EtfarmError):
    """The job was interrupted (Ctrl-C, SIGTERM) while this device worked."""


@dataclass
class DeviceOutcome:
    """What a session hands back to the job: its final record and per-model statistics frames."""

    result: DeviceResult
    stats: list[Any] = field(default_factory=list)  # one DataFrame per model

    @property
    def device(self) -> str:
        return self.result.name

    @property
    def ok(self) -> bool:
        return self.result.status is DeviceStatus.OK


class DeviceSession:
    def __init__(self, spec: DeviceSpec, build: RunnerBuild | None, models: Sequence[ExportedModel],
                 options: RunOptions, rundir: RunDirectory, progress: DeviceProgress,
                 build_error: str | None = None, done: Mapping[str, Sequence[ProcessRun]] | None = None) -> None:
        self.spec = spec
        self.build = build
        self.models = models
        self.options = options
        self.rundir = rundir
        self.say = progress
        self.build_error = build_error
        self.stats: list[Any] = []
        self.done = {name: tuple(runs) for name, runs in (done or {}).items()}  # resume: runs already finished
        self.cancelled = threading.Event()
        self.abandoned = False  # the job's watchdog gave up on this session: record nothing more
        self.last_progress = time.monotonic()
        self.waiting = False  # for another job's device lock: no progress expected (--lock-timeout bounds it)
        self._agent: DeviceAgent | None = None
        self._lock: RemoteLock | None = None  # this session's hold on the device's own lock
        self._current_out: str | None = None  # workdir-relative out dir of the step running now
        self._models_finished = False

    def run(self) -> DeviceOutcome:
        """Run every model on the device; any failure is recorded, never raised."""
        if self.rundir.job.device(self.spec.name) is not None:  # resumed: keep its models and facts, run again
            self._set(status=DeviceStatus.RUNNING, error=None, blame=None)
        else:
            self.rundir.add_device(DeviceResult(self.spec.name, self.spec.transport, self.spec.target,
                                                DeviceStatus.RUNNING))
        try:
            if self.build is None:
                raise DeviceError(self.spec.name, self.build_error or f"no runner for target {self.spec.target}")
            self._set(runner_key=self.build.key)
            lock_timeout_s = self.options.lock_timeout_s  # one budget for both locks
            with device_lock(self.spec.name, wait=self.options.wait_for_lock, on_wait=self._waiting_for_lock,
                             timeout_s=lock_timeout_s) as waited_s:
                self.waiting = False
                self.last_progress = time.monotonic()
                self._check_cancelled()
                agent = create_agent(self.spec)
                self.say(f"connecting ({self.spec.transport}, target {self.spec.target})")
                try:
                    self._retry("connect", agent.connect, agent.close)
                    with remote_lock(agent, wait=self.options.wait_for_lock, on_wait=self._waiting_for_lock,
                                     timeout_s=budget_left(lock_timeout_s, waited_s), waited_s=waited_s) as lock:
                        self.waiting = False
                        self.last_progress = time.monotonic()
                        self._agent, self._lock = agent, lock
                        try:
                            self._run_models(agent)
                        finally:
                            self._agent, self._lock = None, None
                finally:
                    agent.close()
            final = self._succeed()
        except Exception as exc:
            if not self._models_finished and self.done:  # resumed, failed before the loop: keep the runs it had
                with contextlib.suppress(Exception):
                    self._finish_models([(name, run) for name, runs in self.done.items() for run in runs], exc)
            final = self._record_failure(exc)
        return DeviceOutcome(final, self.stats)

    def _waiting_for_lock(self, message: str) -> None:
        self.waiting = True
        self.say(message)

    def abort(self) -> None:
        """Stop this session from another thread: no new step starts, the running one's runner is killed
        on the device (before the session releases its lock). Bounded by ABORT_TIMEOUT_SEC + the host grace."""
        self.cancelled.set()
        agent, out_rel = self._agent, self._current_out
        if agent is None or out_rel is None:
            return
        try:
            agent.run(kill_step_command(agent, out_rel), timeout_s=ABORT_TIMEOUT_SEC)
        except Exception as exc:  # noqa: BLE001 - a dead device has no runner left to kill; say so, go on
            log.debug("could not kill the runner on %s: %s", self.spec.name, exc)

    def _check_cancelled(self) -> None:
        if self.cancelled.is_set():
            raise Interrupted(f"[{self.spec.name}] interrupted")

    def _succeed(self) -> DeviceResult:
        device = self.rundir.job.device(self.spec.name)
        message = device.wrong_results() if device is not None else None
        if message:
            self.say(f"WRONG RESULTS: {message}")
            return self._set(status=DeviceStatus.WRONG_RESULTS, error=f"[{self.spec.name}] wrong results: {message}",
                             blame=Blame.DATA)
        return self._set(status=DeviceStatus.OK)

    def _record_failure(self, exc: Exception) -> DeviceResult:
        full = disk_full(exc)
        if self.cancelled.is_set() and full is None:
            self.say("interrupted")
            return self._set(status=DeviceStatus.INTERRUPTED, error=f"[{self.spec.name}] interrupted", blame=None)
        if full is not None:
            return self._fail(f"[{self.spec.name}] host disk full: {full or self.rundir.root}", Blame.INFRASTRUCTURE)
        if isinstance(exc, EtfarmError):
            return self._fail(str(exc), blame_of(exc))
        # a bug or an unexpected transport error: keep the others going
        log.debug("unexpected error on %s", self.spec.name, exc_info=exc)
        self.say("".join(traceback.format_exception(exc)))
        return self._fail(f"[{self.spec.name}] unexpected {type(exc).__name__}: {exc}", Blame.BUG)

    # ---- steps -------------------------------------------------------------------

    def _stage(self, agent: DeviceAgent) -> dict[str, tuple[str, str | None]]:
        """Stage the runner, the step scripts and every model in one go: two device commands
        (hash, then finalize what was pushed) whatever the number of files."""
        assert self.build is not None
        files = {**self.build.stage_files(), **step_files()}
        staged: dict[str, tuple[str, str | None]] = {}
        for model in self.models:
            model_rel = f"models/{model.name}-{model.key[:16]}.pte"
            files[model_rel] = model.pte
            inputs_rel = None
            if model.inputs is not None:
                inputs_rel = f"models/{model.name}-{model.key[:16]}.inputs.etft"
                files[inputs_rel] = model.inputs
            staged[model.name] = (model_rel, inputs_rel)
        report = agent.stage(files)
        self.say(_staged("runner and models", report.pushed, report.skipped, report.bytes_pushed))
        return staged

    def _setup_controls(self, agent: DeviceAgent) -> None:
        facts: dict[str, Any] = {}
        for argv in setup_commands(self.spec):
            facts.update(parse_facts(agent.check(argv).stdout))
        if facts:
            self.say(", ".join(f"{k}: {v}" for k, v in facts.items()))
            self._set(controls=facts)

    def _restore_controls(self, agent: DeviceAgent) -> None:
        for argv in restore_commands(self.spec):
            try:
                agent.run(argv)
            except EtfarmError as exc:  # the job's own outcome matters more; say it, keep it
                self.say(f"could not restore device controls: {exc}")

    def _run_models(self, agent: DeviceAgent) -> None:
        """Stage, run the schedule's missing process runs (one device command each), flag them, then
        verify and analyse each model; when something ends the loop early, the models keep what finished."""
        self.last_progress = time.monotonic()
        staged = self._retry("stage", lambda: self._stage(agent), lambda: self._reconnect(agent))
        self._setup_controls(agent)
        by_name = {model.name: model for model in self.models}
        order: list[tuple[str, ProcessRun]] = [(name, run) for name, runs in self.done.items() for run in runs]
        failure: BaseException | None = None
        try:
            for step in self._missing_steps(list(by_name)):
                self._check_cancelled()
                order.append((step.model, self._scheduled_run(agent, by_name[step.model], staged, step, order)))
                # On record at once: even a killed etfarm (SIGKILL, power cut) leaves its finished runs resumable.
                self._record_model(ModelResult(step.model, ModelStatus.PARTIAL,
                                               tuple(run for name, run in order if name == step.model)))
        except BaseException as exc:
            failure = exc
            raise
        finally:
            self._current_out = None
            if not self.cancelled.is_set():
                self._restore_controls(agent)
            self._finish_models(order, failure)

    def _missing_steps(self, names: list[str]) -> list[ScheduledRun]:
        opts = self.options
        done = {(name, run.label) for name, runs in self.done.items() for run in runs}
        steps = schedule_runs(names, opts.runs, opts.untraced_runs, opts.order, opts.seed)
        return [step for step in steps if (step.model, step.label) not in done]

    def _scheduled_run(self, agent: DeviceAgent, model: ExportedModel, staged: Mapping[str, tuple[str, str | None]],
                       step: ScheduledRun, order: list[tuple[str, ProcessRun]]) -> ProcessRun:
        opts = self.options
        if step.traced:
            self.say(f"{model.name}: {step.label.replace('-', ' ')}/{opts.runs} "
                     f"({opts.warmup} warmup + {opts.iterations} iterations)")
        else:
            self.say(f"{model.name}: end-to-end {step.label}/{opts.untraced_runs} without the event tracer")
        cold = not any(name == model.name for name, _ in order)
        plan = RunPlan(model, *staged[model.name], step.label, traced=step.traced, cold=cold)
        run = self._retry(f"run {model.name} {step.label}", lambda: self._one_run(agent, plan),
                          lambda: self._before_run_retry(agent, plan))
        self.last_progress = time.monotonic()
        if order:  # say it as it happens, not only in the summary
            flagged = flag_runs([r for _, r in [*order, (model.name, run)]])[-1]
            if flagged.flag is not None:
                self.say(f"{model.name} {step.label}: {flagged.flag} (calibration {flagged.slowdown:+.0%})")
        return run

    def _finish_models(self, order: list[tuple[str, ProcessRun]], failure: BaseException | None) -> None:
        """Record every model with the runs it has: complete (ok), some missing (partial, the failure
        as its error), none (nothing recorded: a resume runs it all)."""
        self._models_finished = True
        flagged_runs = flag_runs([run for _, run in order])
        expected = self.options.runs + self.options.untraced_runs
        for model in self.models:
            runs = [run for (name, _), run in zip(order, flagged_runs, strict=False) if name == model.name]
            if not runs:
                continue
            if len(runs) >= expected or failure is None:
                self._finish_model(model, runs, ModelStatus.OK, None, None)
                continue
            error = str(failure) if isinstance(failure, EtfarmError) else f"{type(failure).__name__}: {failure}"
            blame = None if self.cancelled.is_set() else blame_of(failure) if isinstance(failure, Exception) else None
            try:
                self._finish_model(model, runs, ModelStatus.PARTIAL, error, blame)
            except Exception as exc:  # noqa: BLE001 - the first failure is the one to report; the runs stay on disk
                log.debug("could not analyse the partial runs of %s on %s: %s", model.name, self.spec.name, exc)
                self._record_model(ModelResult(model.name, ModelStatus.PARTIAL, tuple(runs), None, error, blame))

    def _finish_model(self, model: ExportedModel, runs: list[ProcessRun], status: ModelStatus, error: str | None,
                      blame: Blame | None) -> None:
        local_dir = self.rundir.model_dir(self.spec.name, model.name)
        traced_dirs = [local_dir / r.label for r in runs if r.traced]
        outputs = [d / OUTPUTS_NAME for d in traced_dirs if (d / OUTPUTS_NAME).is_file()]
        verification = verify_outputs(model.reference_outputs, outputs)
        self.say(f"{model.name}: verification {verification.status}: {verification.detail}"
                 + (f" ({status}: {len(runs)} run(s) kept)" if status is not ModelStatus.OK else ""))
        if traced_dirs:
            self.stats.append(self._analyze(model, [d / ETDUMP_NAME for d in traced_dirs]))
        self._record_model(ModelResult(model.name, status, tuple(runs), verification, error, blame))

    def _record_model(self, result: ModelResult) -> None:
        if not self.abandoned:
            self.rundir.update_device(self.spec.name, lambda d: d.with_model(result))

    def _one_run(self, agent: DeviceAgent, plan: RunPlan) -> ProcessRun:
        """One process run (run/process_run.py); the model's first one records the device's facts."""
        run, facts = run_once(agent, self.options, plan, self.rundir, debug_buffer_size=self._debug_buffer_size(plan.model),
                              say=self.say, started=self._step_started)
        if plan.cold:
            self._record_facts(plan.model, facts)
        return run

    def _step_started(self, out_rel: str | None) -> None:
        self._current_out = out_rel
        if out_rel is not None:
            self._check_cancelled()  # an abort that came before _current_out was set finds no runner: stop here

    def _reconnect(self, agent: DeviceAgent) -> None:
        """Before a retry: a new connection, on which the device lock must still be ours."""
        self._check_cancelled()
        self.last_progress = time.monotonic()  # a bounded retry is progress for the watchdog
        agent.reconnect()
        if self._lock is not None:
            self._lock.revalidate()  # staging is what comes next anyway

    def _before_run_retry(self, agent: DeviceAgent, plan: RunPlan) -> None:
        self._check_cancelled()
        self.last_progress = time.monotonic()
        prepare_retry(agent, self._lock, plan.out_rel, self.say, restage=lambda: self._stage(agent))

    def _record_facts(self, model: ExportedModel, facts: Mapping[str, Any]) -> None:
        """device.json of a model: what the device was at the model's first (cold) run."""
        local_dir = self.rundir.model_dir(self.spec.name, model.name)
        write_json_atomic(local_dir / DEVICE_JSON, {"name": self.spec.name, "transport": self.spec.transport,
                                                   "target": self.spec.target, "exec_prefix": list(self.spec.exec_prefix),
                                                   "cpus": self.spec.cpus, "facts": dict(facts)})
        device = self.rundir.job.device(self.spec.name)
        if device is None or not device.facts:
            self._set(facts=dict(facts))

    def _debug_buffer_size(self, model: ExportedModel) -> int:
        """The configured size, or (0) one computed from the model's ETRecord for this many executions."""
        if self.options.debug_buffer_size > 0 or not self.options.intermediate_outputs:
            return self.options.debug_buffer_size
        if model.etrecord is None:
            raise DataError(f"{model.name}: intermediate outputs need the model's ETRecord to size the debug buffer "
                            "(put <stem>.etrecord beside the .pte)")
        from orchestrator.profiles.debug_buffer import debug_buffer_size

        return debug_buffer_size(model.etrecord, self.options.iterations)

    def _analyze(self, model: ExportedModel, etdumps: list[Path]) -> Any:
        from orchestrator.profiles.analysis import load_samples, summarize

        samples = load_samples(etdumps, etrecord=model.etrecord, run_labels=[p.parent.name for p in etdumps])
        stats = summarize(samples)
        stats.insert(0, "model", model.name)
        stats.insert(0, "device", self.spec.name)
        return stats

    # ---- record ------------------------------------------------------------------

    def _retry(self, step: str, call: Callable[[], T], before_retry: Callable[[], None]) -> T:
        """An idempotent step, retried after transport faults (run/retry.py); every failure recorded."""
        def record(attempt: Attempt) -> None:
            self.rundir.update_device(self.spec.name, lambda d: replace(d, attempts=(*d.attempts, attempt)))

        return with_retries(step, call, record=record, before_retry=before_retry, say=self.say)

    def _set(self, **changes: Any) -> DeviceResult:
        if self.abandoned:  # the watchdog has recorded this device's end; a late thread changes nothing
            return self.rundir.job.device(self.spec.name) or DeviceResult(self.spec.name, self.spec.transport,
                                                                          self.spec.target)
        return self.rundir.update_device(self.spec.name, lambda d: replace(d, **changes))

    def _fail(self, message: str, blame: Blame) -> DeviceResult:
        self.say(f"FAILED: {message}")
        return self._set(status=DeviceStatus.FAILED, error=message, blame=blame)


def _staged(what: str, pushed: Sequence[str], skipped: Sequence[str], nbytes: int) -> str:
    if not pushed:
        return f"{what}: staged nothing ({len(skipped)} file(s) unchanged on the device)"
    return f"{what}: pushed {len(pushed)} file(s), {nbytes / 1e6:.1f} MB ({len(skipped)} unchanged)"
