"""One device's part of a job: stage runner and models, run them R times, pull, analyze.

A DeviceSession runs in its own thread; it only touches its own subtree of the
run directory and its own manifest entry, so devices never wait on each other.
"""

from __future__ import annotations

import json
import posixpath
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from device_agents import DeviceSpec, create_agent
from device_agents.base import DeviceAgent
from orchestrator.build import RunnerBuild, runner_env
from orchestrator.cache import write_json_atomic
from orchestrator.conditions import UNSTABLE_CV, coefficient_of_variation, cool_down, tracer_overhead
from orchestrator.errors import CommandFailed, DeviceError, EtfarmError
from orchestrator.locks import device_lock
from orchestrator.lowering import ExportedModel
from orchestrator.progress import DeviceProgress
from orchestrator.rundir import DEVICE_JSON, RunDirectory
from orchestrator.verify import verify_outputs

RUNNER_REL = "bin/etfarm_runner"
ETDUMP_NAME = "etdump.etdp"
OUTPUTS_NAME = "outputs.etft"
DEBUG_NAME = "debug_output.bin"
RESULT_PREFIX = "ETFARM_RESULT "


@dataclass(frozen=True)
class RunOptions:
    runs: int = 5
    iterations: int = 20
    warmup: int = 3
    run_timeout_s: float = 600.0
    wait_for_lock: bool = True
    intermediate_outputs: bool = False
    debug_buffer_size: int = 16 << 20
    cpu_threads: int = 0
    untraced_runs: int = 1  # extra runs without the event tracer: end-to-end time and tracer overhead
    cooldown_s: float = 0.0  # pause before each run
    max_temp_c: float | None = None  # before each run, wait until the device is at most this hot


@dataclass
class DeviceOutcome:
    device: str
    status: str = "pending"  # "ok" or "failed"
    error: str | None = None
    stats: list[Any] = field(default_factory=list)  # one DataFrame per model
    verdicts: dict[str, dict[str, Any]] = field(default_factory=dict)


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
        self.outcome = DeviceOutcome(spec.name)

    def run(self) -> DeviceOutcome:
        """Run every model on the device; any failure is recorded, never raised."""
        self._record("running")
        try:
            if self.build is None:
                raise DeviceError(self.spec.name, self.build_error or f"no runner for target {self.spec.target}")
            with device_lock(self.spec.name, wait=self.options.wait_for_lock, on_wait=self.say):
                agent = create_agent(self.spec)
                self.say(f"connecting ({self.spec.transport}, target {self.spec.target})")
                with agent:
                    self._stage_runner(agent)
                    for model in self.models:
                        self._run_model(agent, model)
            self.outcome.status = "ok"
        except EtfarmError as exc:
            self._fail(str(exc))
        except Exception as exc:  # a bug or an unexpected transport error: keep the others going
            self._fail(f"[{self.spec.name}] unexpected {type(exc).__name__}: {exc}")
            self.say(traceback.format_exc())
        self._record(self.outcome.status, self.outcome.error)
        return self.outcome

    # ---- steps -------------------------------------------------------------------

    def _stage_runner(self, agent: DeviceAgent) -> None:
        assert self.build is not None
        report = agent.stage(self.build.stage_files())
        self.say(_staged("runner", report.pushed, report.skipped, report.bytes_pushed))

    def _run_model(self, agent: DeviceAgent, model: ExportedModel) -> None:
        local_dir = self.rundir.model_dir(self.spec.name, model.name)
        files = {f"models/{model.name}-{model.key[:16]}.pte": model.pte}
        if model.inputs is not None:
            files[f"models/{model.name}-{model.key[:16]}.inputs.etft"] = model.inputs
        report = agent.stage(files)
        self.say(_staged(model.name, report.pushed, report.skipped, report.bytes_pushed))
        facts = agent.describe()
        write_json_atomic(local_dir / DEVICE_JSON, {"name": self.spec.name, "transport": self.spec.transport,
                                                   "target": self.spec.target, "exec_prefix": list(self.spec.exec_prefix),
                                                   "facts": facts})
        rels = list(files)
        etdumps: list[Path] = []
        outputs: list[Path] = []
        traced: list[dict[str, Any]] = []
        for k in range(1, self.options.runs + 1):
            self.say(f"{model.name}: run {k}/{self.options.runs} ({self.options.warmup} warmup + {self.options.iterations} iterations)")
            run_local = self.rundir.run_dir(self.spec.name, model.name, k)
            traced.append(self._one_run(agent, model, rels, f"run-{k}", run_local, traced=True))
            etdumps.append(run_local / ETDUMP_NAME)
            if (run_local / OUTPUTS_NAME).is_file():
                outputs.append(run_local / OUTPUTS_NAME)
        untraced = []
        for k in range(1, self.options.untraced_runs + 1):
            self.say(f"{model.name}: end-to-end run {k}/{self.options.untraced_runs} without the event tracer")
            run_local = self.rundir.model_dir(self.spec.name, model.name) / f"e2e-{k}"
            run_local.mkdir(exist_ok=True)
            untraced.append(self._one_run(agent, model, rels, f"e2e-{k}", run_local, traced=False))
        verdict = verify_outputs(model.reference_outputs, outputs)
        self.say(f"{model.name}: verification {verdict.status}: {verdict.detail}")
        self.outcome.stats.append(self._analyze(model, etdumps))
        self.outcome.verdicts[model.name] = verdict.to_dict()
        self.rundir.update("devices", self.spec.name, "models", model.name, value=_timing_summary(traced, untraced, verdict.to_dict()))

    def _one_run(self, agent: DeviceAgent, model: ExportedModel, rels: list[str], label: str, run_local: Path,
                 traced: bool) -> dict[str, Any]:
        out_rel = f"out/{model.name}/{label}"
        agent.remove(out_rel)
        agent.check(["mkdir", "-p", "--", agent.remote_path(out_rel)])
        state = cool_down(agent.describe, pause_s=self.options.cooldown_s, max_temp_c=self.options.max_temp_c, say=self.say)
        write_json_atomic(run_local / "device_state.json", state)
        argv = self._runner_argv(agent, rels, out_rel, traced)
        result = agent.run(argv, cwd=self.spec.workdir, env=runner_env(self.spec.workdir),
                           timeout_s=self.options.run_timeout_s, use_exec_prefix=True)
        (run_local / "runner.log").write_text(f"$ {result.command}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}")
        if not result.ok:
            raise CommandFailed(self.spec.name, f"runner ({model.name}, {label})", result.exit_code, result.tail(1500), result.timed_out)
        if traced:
            # The runner was told to write both; a missing one is a failure, not a skip.
            agent.fetch(f"{out_rel}/{ETDUMP_NAME}", run_local)
            agent.fetch(f"{out_rel}/{OUTPUTS_NAME}", run_local)
            if self.options.intermediate_outputs:
                agent.fetch(f"{out_rel}/{DEBUG_NAME}", run_local)
        parsed = _parse_result(result.stdout)
        write_json_atomic(run_local / "result.json", parsed)
        return parsed

    def _runner_argv(self, agent: DeviceAgent, rels: list[str], out_rel: str, traced: bool) -> list[str]:
        out = agent.remote_path(out_rel)
        argv = [
            agent.remote_path(RUNNER_REL),
            f"--model_path={agent.remote_path(rels[0])}",
            f"--num_executions={self.options.iterations}",
            f"--warmup={self.options.warmup}",
        ]
        if traced:  # untraced runs attach no event tracer at all: that is their point
            argv += [f"--etdump_path={posixpath.join(out, ETDUMP_NAME)}", f"--output_file={posixpath.join(out, OUTPUTS_NAME)}"]
        if len(rels) > 1:
            argv.append(f"--inputs={agent.remote_path(rels[1])}")
        threads = self.options.cpu_threads or int(self.spec.settings.get("threads") or 0)
        if threads > 0:
            argv.append(f"--cpu_threads={threads}")
        if traced and self.options.intermediate_outputs:
            argv += ["--dump_intermediate_outputs", f"--debug_buffer_size={self.options.debug_buffer_size}",
                     f"--debug_output_path={posixpath.join(out, DEBUG_NAME)}"]
        return argv

    def _analyze(self, model: ExportedModel, etdumps: list[Path]) -> Any:
        from orchestrator.analysis import load_samples, summarize

        samples = load_samples(etdumps, etrecord=model.etrecord, run_labels=[p.parent.name for p in etdumps])
        stats = summarize(samples)
        stats.insert(0, "model", model.name)
        stats.insert(0, "device", self.spec.name)
        return stats

    # ---- manifest ----------------------------------------------------------------

    def _fail(self, message: str) -> None:
        self.outcome.status = "failed"
        self.outcome.error = message
        self.say(f"FAILED: {message}")

    def _record(self, status: str, error: str | None = None) -> None:
        entry = dict(self.rundir.manifest.get("devices", {}).get(self.spec.name, {}))
        entry.update({"status": status, "error": error, "transport": self.spec.transport, "target": self.spec.target})
        self.rundir.update("devices", self.spec.name, value=entry)


def _staged(what: str, pushed: Sequence[str], skipped: Sequence[str], nbytes: int) -> str:
    if not pushed:
        return f"{what}: staged nothing ({len(skipped)} file(s) unchanged on the device)"
    return f"{what}: pushed {len(pushed)} file(s), {nbytes / 1e6:.1f} MB ({len(skipped)} unchanged)"


def _timing_summary(traced: list[dict[str, Any]], untraced: list[dict[str, Any]], verdict: dict[str, Any]) -> dict[str, Any]:
    """The runner's own wall-clock numbers for the manifest, with the tracer overhead and stability."""
    traced_ms = [ms for r in traced for ms in r.get("execute_ms", [])]
    untraced_ms = [ms for r in untraced for ms in r.get("execute_ms", [])]
    cv = coefficient_of_variation(traced_ms)
    return {"status": "ok", "runs": len(traced), "verification": verdict,
            "wall_execute_ms": traced_ms, "untraced_execute_ms": untraced_ms,
            "load_ms": [r.get("load_ms") for r in traced],
            "tracer_overhead": tracer_overhead(traced_ms, untraced_ms),
            "execute_cv": cv, "unstable": cv is not None and cv > UNSTABLE_CV}


def _parse_result(stdout: str) -> dict[str, Any]:
    for line in reversed(stdout.splitlines()):
        if line.startswith(RESULT_PREFIX):
            try:
                return json.loads(line[len(RESULT_PREFIX):])
            except json.JSONDecodeError:
                break
    return {}
