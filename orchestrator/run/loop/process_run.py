"""One process run on a device, and what to do before it is tried again after a transport fault.

`run_once` is a single device command (run_step: cleanup, facts, the runner, its files back) and
its bookkeeping on the host (runner.log, device_state.json, result.json, a typed ProcessRun). It
tells the two kinds of failure apart, because only one of them may be retried:

- `LinkLost` (a DeviceError: infrastructure): the transport ended the step without the runner's
  exit status (connection dropped, sshd or adbd restarted, a stalled link met the host deadline).
  The session reconnects and runs it again (run/device/retry.py).
- `RunnerFailed` / `RunnerOutputMissing` (`ModelFault`): the runner crashed, exited non-zero, met
  its device-side `--timeout`, or did not write its ETDump. Another try would meet it again.

`prepare_retry` is what goes between the two tries: after the reconnect, the device lock must
still be this session's (`RemoteLock.revalidate`), and a runner left running by the dropped link
is killed (kill_step_command) so that two runners never share the device. The repeated run starts
from an empty run directory on the host (as a resumed run does) and on the device (step.sh).
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass

from device_agents.base import DeviceAgent
from device_agents.facts import DeviceFacts
from device_agents.step import StepRequest, kill_step_command, run_step
from orchestrator.artifacts.lowering import ExportedModel
from orchestrator.base.cache import write_json_atomic, write_text_atomic
from orchestrator.base.errors import CommandFailed, DataError, DeviceError
from orchestrator.results.conditions import CoolDown, DeviceState, cool_down
from orchestrator.results.model import JobOptions, ProcessRun
from orchestrator.run.device.locks import RemoteLock
from orchestrator.run.device.retry import ModelFault
from orchestrator.run.loop.launch import Launch
from orchestrator.run.rundir import RunDirectory
from orchestrator.run.runner_contract import (
    DEVICE_STATE_JSON,
    RESULT_JSON,
    RUNNER_LOG,
    RunnerInvocation,
    RunnerResult,
    parse_result,
)

# The command that kills a runner left by a dropped link gets this long on the device.
KILL_LEFTOVER_SEC = 10.0
RUNNER_ERROR_PREFIX = "etfarm_runner: error:"  # how runners/etfarm_runner.cpp begins its one-line errors


class LinkLost(DeviceError):
    """The transport ended a process run before the runner's exit status came back."""


class RunnerFailed(ModelFault, CommandFailed):
    """The runner exited non-zero, crashed or met its device-side deadline. `reason`: the one line it is known
    by (`runner_failure`), which is then the whole message; the output's tail stays in `output_tail`."""

    def __init__(self, device: str, command: str, exit_code: int | None, output_tail: str, timed_out: bool = False,
                 reason: str | None = None) -> None:
        super().__init__(device, command, exit_code, output_tail, timed_out)
        if reason:
            self.args = (f"[{device}] {command}: {reason}",)


class RunnerOutputMissing(ModelFault, DeviceError):
    """The runner exited 0 without writing a file it must write."""


@dataclass(frozen=True)
class RunPlan:
    """Which process run: the model, where it was staged, its label and kind."""

    model: ExportedModel
    model_rel: str
    inputs_rel: str | None
    label: str
    traced: bool
    cold: bool  # the model's first run since staging

    @property
    def out_rel(self) -> str:
        """Its output directory on the device, workdir-relative."""
        return f"out/{self.model.name}/{self.label}"


def run_once(agent: DeviceAgent, options: JobOptions, plan: RunPlan, rundir: RunDirectory, *, debug_buffer_size: int,
             say: Callable[[str], None], started: Callable[[str | None], None],
             launch: Launch) -> tuple[ProcessRun, DeviceFacts]:
    """One process run: a single device command (cleanup, facts, runner, files back); returns the
    run and the device facts the step recorded, with the runner's runtime under `runner`. `launch`:
    how the runner starts there (run/loop/launch.py). `started(out_rel)` just before the device command
    (the session may then kill it on Ctrl-C), `started(None)` once it is over."""
    spec = agent.spec
    run_local = rundir.process_run_dir(spec.name, plan.model.name, plan.label)
    if any(run_local.iterdir()):  # left by a cut-short run that a resume or a retry now repeats
        shutil.rmtree(run_local)
        run_local.mkdir()
    waited = CoolDown()
    if options.max_temp_c is not None:  # thermal gating reads the device first (extra commands)
        waited = cool_down(agent.describe, pause_s=options.cooldown_s, max_temp_c=options.max_temp_c, say=say)
    elif options.cooldown_s > 0:
        time.sleep(options.cooldown_s)
        waited = CoolDown(options.cooldown_s)
    workload = plan.model.workload  # the model's sweep point: threads, and for an LLM what to generate
    invocation = RunnerInvocation(
        runner=launch.runner, model=agent.remote_path(plan.model_rel),
        inputs=agent.remote_path(plan.inputs_rel) if plan.inputs_rel else None, out_dir=agent.remote_path(plan.out_rel),
        iterations=options.iterations, warmup=options.warmup, traced=plan.traced,
        cpu_threads=workload.threads or options.cpu_threads or spec.threads,
        intermediate_outputs=options.intermediate_outputs, debug_buffer_size=debug_buffer_size,
        generation=workload.generation)
    request = StepRequest(out_rel=plan.out_rel, argv=[*launch.launcher, *invocation.argv()],
                          timeout_s=options.run_timeout_s, env=launch.env, prefix=launch.prefix, static_facts=plan.cold)
    started(plan.out_rel)
    try:
        step = run_step(agent, request, run_local)
    finally:
        started(None)
    what = f"runner ({plan.model.name}, {plan.label})"
    if step.lost:
        raise LinkLost(spec.name, f"{what}: the link failed before the runner's exit status came back"
                                  f"{' (host deadline)' if step.timed_out else ''}: {step.tail(500).strip()}")
    if step.odd_names:  # the device's data problem: framing them could not help, so no retry either
        raise DataError(f"[{spec.name}] {what}: left {step.odd_names} file(s) whose names are not plain printable "
                        "text (a newline, a backslash, a control character) in its output directory; refused")
    state = DeviceState.of(step.facts, waited)
    write_json_atomic(run_local / DEVICE_STATE_JSON, state.to_json())
    write_text_atomic(run_local / RUNNER_LOG, f"$ {step.command}\n--- stdout\n{step.stdout}\n--- stderr\n{step.stderr}")
    if not step.ok:
        reason = runner_failure(step.stderr, step.exit_code, step.timed_out, rundir.relative(run_local / RUNNER_LOG))
        raise RunnerFailed(spec.name, what, step.exit_code, step.tail(1500), step.timed_out, reason)
    missing = [name for name in invocation.expected_files() if name not in step.files]
    if missing:
        raise RunnerOutputMissing(spec.name, f"{what} did not write {', '.join(missing)}")
    result = parse_result(step.stdout, invocation, source=f"[{spec.name}] {what}")
    if invocation.traced and invocation.intermediate_outputs and result.debug_buffer_overflow:
        raise DataError(f"[{spec.name}] {plan.model.name} {plan.label}: the debug buffer of {debug_buffer_size} "
                        "bytes could not hold every intermediate output (the runner dropped some); "
                        "the size computed from the ETRecord is too small for this program: please report it")
    write_json_atomic(run_local / RESULT_JSON, result.to_dict())
    run = ProcessRun.from_runner(result, label=plan.label, traced=plan.traced, cold=plan.cold, device_state=state,
                                 artifacts=tuple(sorted(rundir.relative(p) for p in run_local.iterdir())),
                                 step_ms=step.duration_s * 1000.0)
    facts = step.facts.with_runner(launch.info.facts(_backends(result))) if step.facts else DeviceFacts()
    return run, facts


def _backends(result: RunnerResult) -> tuple[str, ...] | None:
    """What the runner said it registers on the device: a key its result line prints that RunnerResult leaves in
    `extra` (a list of names; anything else is no answer)."""
    names = result.extra.get("backends")
    return tuple(names) if isinstance(names, list) and all(isinstance(n, str) for n in names) else None


def runner_failure(stderr: str, exit_code: int | None, timed_out: bool, log: str) -> str:
    """The one line a failed runner is known by. Its own last error line (`etfarm_runner: error: ...`, exit 1:
    it refused the program, its inputs or an execution) says it all, whatever runtime log came before it;
    otherwise how it ended, the last line it wrote, and where its whole log is (`log`, runner.log)."""
    own = runner_error(stderr)
    if own is not None and exit_code == 1 and not timed_out:
        return own
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    how = "timed out" if timed_out else "ended without an exit status" if exit_code is None else f"exited {exit_code}"
    last = own or (lines[-1][:300] if lines else "")
    return f"{how}{': ' + last if last else ''} (its log: {log})"


def runner_error(stderr: str) -> str | None:
    """The runner's own last error line (`etfarm_runner: error: ...`), without its prefix; None when it wrote none."""
    errors = [line for line in stderr.splitlines() if line.startswith(RUNNER_ERROR_PREFIX)]
    return errors[-1].removeprefix(RUNNER_ERROR_PREFIX).strip() if errors else None


def prepare_retry(agent: DeviceAgent, lock: RemoteLock | None, out_rel: str, say: Callable[[str], None],
                  restage: Callable[[], object] = lambda: None) -> None:
    """Between a process run cut off by the link and its next try: reconnect, make sure the device
    lock is still ours (never touch a device someone else now holds; `restage()` when the device had
    lost it, as a rebooted board that wiped its workdir), then kill whatever of the old step still
    runs there, so two runners never overlap."""
    agent.reconnect()
    if lock is not None and lock.revalidate():
        restage()
    result = agent.run(kill_step_command(agent, out_rel), timeout_s=KILL_LEFTOVER_SEC, persistent=True)
    if not result.ok:
        raise CommandFailed(agent.spec.name, f"killing the runner left in {out_rel}", result.exit_code, result.tail(),
                            result.timed_out)
    say(f"reconnected; nothing of the cut-off run in {out_rel} is left running")

