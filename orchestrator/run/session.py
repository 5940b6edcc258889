"""One device's part of a job: stage runner and models, run them R times, pull, analyze.

A DeviceSession runs in its own thread; it only touches its own subtree of the run directory
and hands its results to the RunDirectory as frozen `results` objects, so devices never wait
on each other. Failures are recorded with who is to blame, never raised.
"""

from __future__ import annotations

import logging
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from device_agents import DeviceSpec, create_agent
from device_agents.base import DeviceAgent
from orchestrator.artifacts.build import RunnerBuild, runner_env
from orchestrator.artifacts.lowering import ExportedModel
from orchestrator.cache import write_json_atomic
from orchestrator.errors import Blame, CommandFailed, DeviceError, EtfarmError, blame_of
from orchestrator.progress import DeviceProgress
from orchestrator.run.conditions import cool_down
from orchestrator.run.locks import device_lock
from orchestrator.run.results import (
    DeviceResult,
    DeviceStatus,
    ModelResult,
    ModelStatus,
    ProcessRun,
    RunOptions,
)
from orchestrator.run.rundir import DEVICE_JSON, RunDirectory
from orchestrator.run.runner_contract import (
    DEVICE_STATE_JSON,
    ETDUMP_NAME,
    OUTPUTS_NAME,
    RESULT_JSON,
    RUNNER_LOG,
    RUNNER_REL,
    RunnerInvocation,
    execute_samples,
    parse_result,
)
from orchestrator.run.schedule import schedule_runs
from orchestrator.run.verify import verify_outputs

log = logging.getLogger(__name__)


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
                 build_error: str | None = None) -> None:
        self.spec = spec
        self.build = build
        self.models = models
        self.options = options
        self.rundir = rundir
        self.say = progress
        self.build_error = build_error
        self.stats: list[Any] = []

    def run(self) -> DeviceOutcome:
        """Run every model on the device; any failure is recorded, never raised."""
        self.rundir.add_device(DeviceResult(self.spec.name, self.spec.transport, self.spec.target, DeviceStatus.RUNNING))
        try:
            if self.build is None:
                raise DeviceError(self.spec.name, self.build_error or f"no runner for target {self.spec.target}")
            self._set(runner_key=self.build.key)
            with device_lock(self.spec.name, wait=self.options.wait_for_lock, on_wait=self.say):
                agent = create_agent(self.spec)
                self.say(f"connecting ({self.spec.transport}, target {self.spec.target})")
                with agent:
                    self._stage_runner(agent)
                    self._run_models(agent)
            final = self._set(status=DeviceStatus.OK)
        except EtfarmError as exc:
            final = self._fail(str(exc), blame_of(exc))
        except Exception as exc:  # a bug or an unexpected transport error: keep the others going
            log.debug("unexpected error on %s", self.spec.name, exc_info=True)
            final = self._fail(f"[{self.spec.name}] unexpected {type(exc).__name__}: {exc}", Blame.BUG)
            self.say(traceback.format_exc())
        return DeviceOutcome(final, self.stats)

    # ---- steps -------------------------------------------------------------------

    def _stage_runner(self, agent: DeviceAgent) -> None:
        assert self.build is not None
        report = agent.stage(self.build.stage_files())
        self.say(_staged("runner", report.pushed, report.skipped, report.bytes_pushed))

    def _run_models(self, agent: DeviceAgent) -> None:
        """Stage every model, run the schedule's process runs, then verify and analyse each model."""
        staged = {model.name: self._stage_model(agent, model) for model in self.models}
        by_name = {model.name: model for model in self.models}
        opts = self.options
        runs: dict[str, list[ProcessRun]] = {model.name: [] for model in self.models}
        for step in schedule_runs(list(by_name), opts.runs, opts.untraced_runs, opts.order, opts.seed):
            model = by_name[step.model]
            if step.traced:
                self.say(f"{model.name}: {step.label.replace('-', ' ')}/{opts.runs} "
                         f"({opts.warmup} warmup + {opts.iterations} iterations)")
            else:
                self.say(f"{model.name}: end-to-end {step.label}/{opts.untraced_runs} without the event tracer")
            runs[model.name].append(self._one_run(agent, model, *staged[model.name], step.label, traced=step.traced))
        for model in self.models:
            self._finish_model(model, runs[model.name])

    def _stage_model(self, agent: DeviceAgent, model: ExportedModel) -> tuple[str, str | None]:
        local_dir = self.rundir.model_dir(self.spec.name, model.name)
        model_rel = f"models/{model.name}-{model.key[:16]}.pte"
        files = {model_rel: model.pte}
        inputs_rel = None
        if model.inputs is not None:
            inputs_rel = f"models/{model.name}-{model.key[:16]}.inputs.etft"
            files[inputs_rel] = model.inputs
        report = agent.stage(files)
        self.say(_staged(model.name, report.pushed, report.skipped, report.bytes_pushed))
        facts = agent.describe()
        write_json_atomic(local_dir / DEVICE_JSON, {"name": self.spec.name, "transport": self.spec.transport,
                                                   "target": self.spec.target, "exec_prefix": list(self.spec.exec_prefix),
                                                   "facts": facts})
        self._set(facts=facts)
        return model_rel, inputs_rel

    def _finish_model(self, model: ExportedModel, runs: list[ProcessRun]) -> None:
        local_dir = self.rundir.model_dir(self.spec.name, model.name)
        traced_dirs = [local_dir / r.label for r in runs if r.traced]
        outputs = [d / OUTPUTS_NAME for d in traced_dirs if (d / OUTPUTS_NAME).is_file()]
        verification = verify_outputs(model.reference_outputs, outputs)
        self.say(f"{model.name}: verification {verification.status}: {verification.detail}")
        self.stats.append(self._analyze(model, [d / ETDUMP_NAME for d in traced_dirs]))
        result = ModelResult(model.name, ModelStatus.OK, tuple(runs), verification)
        self.rundir.update_device(self.spec.name, lambda d: d.with_model(result))

    def _one_run(self, agent: DeviceAgent, model: ExportedModel, model_rel: str, inputs_rel: str | None,
                 label: str, traced: bool) -> ProcessRun:
        run_local = self.rundir.run_dir(self.spec.name, model.name, label)
        out_rel = f"out/{model.name}/{label}"
        agent.remove(out_rel)
        agent.check(["mkdir", "-p", "--", agent.remote_path(out_rel)])
        state = cool_down(agent.describe, pause_s=self.options.cooldown_s, max_temp_c=self.options.max_temp_c, say=self.say)
        write_json_atomic(run_local / DEVICE_STATE_JSON, state)
        invocation = RunnerInvocation(
            runner=agent.remote_path(RUNNER_REL), model=agent.remote_path(model_rel),
            inputs=agent.remote_path(inputs_rel) if inputs_rel else None, out_dir=agent.remote_path(out_rel),
            iterations=self.options.iterations, warmup=self.options.warmup, traced=traced,
            cpu_threads=self.options.cpu_threads or int(self.spec.settings.get("threads") or 0),
            intermediate_outputs=self.options.intermediate_outputs, debug_buffer_size=self.options.debug_buffer_size)
        result = agent.run(invocation.argv(), cwd=self.spec.workdir, env=runner_env(self.spec.workdir),
                           timeout_s=self.options.run_timeout_s, use_exec_prefix=True)
        (run_local / RUNNER_LOG).write_text(f"$ {result.command}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}")
        if not result.ok:
            raise CommandFailed(self.spec.name, f"runner ({model.name}, {label})", result.exit_code, result.tail(1500), result.timed_out)
        for name in invocation.expected_files():
            agent.fetch(f"{out_rel}/{name}", run_local)
        parsed = parse_result(result.stdout)
        write_json_atomic(run_local / RESULT_JSON, parsed)
        known = {"execute_ms", "load_ms", "program_load_ms"}
        return ProcessRun(label=label, traced=traced, execute_ms=execute_samples(parsed),
                          load_ms=parsed.get("load_ms"), program_load_ms=parsed.get("program_load_ms"),
                          device_state=state, artifacts=tuple(sorted(self.rundir.relative(p) for p in run_local.iterdir())),
                          runner={k: v for k, v in parsed.items() if k not in known})

    def _analyze(self, model: ExportedModel, etdumps: list[Path]) -> Any:
        from orchestrator.profiles.analysis import load_samples, summarize

        samples = load_samples(etdumps, etrecord=model.etrecord, run_labels=[p.parent.name for p in etdumps])
        stats = summarize(samples)
        stats.insert(0, "model", model.name)
        stats.insert(0, "device", self.spec.name)
        return stats

    # ---- record ------------------------------------------------------------------

    def _set(self, **changes: Any) -> DeviceResult:
        return self.rundir.update_device(self.spec.name, lambda d: replace(d, **changes))

    def _fail(self, message: str, blame: Blame) -> DeviceResult:
        self.say(f"FAILED: {message}")
        return self._set(status=DeviceStatus.FAILED, error=message, blame=blame)


def _staged(what: str, pushed: Sequence[str], skipped: Sequence[str], nbytes: int) -> str:
    if not pushed:
        return f"{what}: staged nothing ({len(skipped)} file(s) unchanged on the device)"
    return f"{what}: pushed {len(pushed)} file(s), {nbytes / 1e6:.1f} MB ({len(skipped)} unchanged)"
