"""The process-run loop of a leased, staged device: the schedule's missing process runs, one device command each.

The device's controls (Android performance mode, ...) are set first and restored after, unless
the job was interrupted. Each process run the schedule asks for (run/schedule.py: interleaved,
sequential or ABBA) that a resumed job has not done yet runs through run/loop/process_run.py, retried
after a transport fault (reconnect, re-validate the lock, kill the cut-off runner: `prepare_retry`),
and is recorded at once with its model (`partial` until the model is finished), so even a killed
etfarm leaves its finished runs resumable. A model's first (cold) run records what the device was
(device.json). `current_out` names the step running now, so that an abort can kill its runner.
See docs/architecture.md, "The job engine: a device session".
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from device_agents import DeviceSpec
from device_agents.base import DeviceAgent
from device_agents.facts import DeviceFacts
from device_agents.keyvalues import parse_key_values
from orchestrator.artifacts.lowering import ExportedModel
from orchestrator.base.cache import write_json_atomic
from orchestrator.base.errors import DataError, EtfarmError
from orchestrator.profiles.debug_buffer import debug_buffer_size
from orchestrator.results.model import JobOptions, ModelResult, ModelStatus, ProcessRun
from orchestrator.run.calibration import flag_news
from orchestrator.run.device.controls import restore_commands, setup_commands
from orchestrator.run.device.heartbeat import Heartbeat
from orchestrator.run.device.lease import DeviceLease
from orchestrator.run.device.stager import Staged, Stager
from orchestrator.run.device_record import DeviceRecord
from orchestrator.run.loop.launch import Launch, prepare_launch
from orchestrator.run.loop.process_run import RunPlan, prepare_retry, run_once
from orchestrator.run.rundir import DEVICE_JSON, RunDirectory
from orchestrator.run.schedule import Order, ScheduledRun, schedule_runs


class ProcessRunLoop:
    def __init__(self, spec: DeviceSpec, models: Sequence[ExportedModel], options: JobOptions, rundir: RunDirectory,
                 lease: DeviceLease, stager: Stager, heartbeat: Heartbeat, cancelled: threading.Event,
                 check_cancelled: Callable[[], None]) -> None:
        self.spec = spec
        self.models = {model.name: model for model in models}
        self.options = options
        self.rundir = rundir
        self.lease = lease
        self.stager = stager
        self.record: DeviceRecord = lease.record
        self.say = lease.say
        self.heartbeat = heartbeat
        self.cancelled = cancelled
        self.check_cancelled = check_cancelled
        self.current_out: str | None = None  # workdir-relative out dir of the step running now
        self.launch = Launch.of(stager.build, spec.workdir)  # settled by `prepare`

    def prepare(self, agent: DeviceAgent) -> Staged:
        """Check the device and settle how the runner starts there (run/loop/launch.py), stage (both retried), then set
        the device's controls."""
        self.heartbeat.beat()
        self.launch = self.lease.retry("check the device", lambda: prepare_launch(agent, self.spec, self.stager.build,
                                                                                  self.say), self.lease.reconnect)
        staged = self.lease.retry("stage", lambda: self.stager.stage(agent), self.lease.reconnect)
        self._setup_controls(agent)
        return staged

    def run(self, agent: DeviceAgent, staged: Staged, order: Order) -> None:
        """Every missing process run, each appended to `order`; the controls restored after (unless interrupted)."""
        try:
            for step in self._missing_steps(order):
                self.check_cancelled()
                order.append((step.model, self._scheduled_run(agent, staged, step, order)))
                self.record.model(ModelResult(step.model, ModelStatus.PARTIAL,
                                              tuple(run for name, run in order if name == step.model)))
        finally:
            self.current_out = None
            if not self.cancelled.is_set():
                self._restore_controls(agent)

    def _missing_steps(self, order: Order) -> list[ScheduledRun]:
        opts = self.options
        done = {(name, run.label) for name, run in order}
        steps = schedule_runs(list(self.models), opts.runs, opts.untraced_runs, opts.order, opts.seed)
        return [step for step in steps if (step.model, step.label) not in done]

    def _scheduled_run(self, agent: DeviceAgent, staged: Staged, step: ScheduledRun, order: Order) -> ProcessRun:
        opts, model = self.options, self.models[step.model]
        if step.traced:
            self.say(f"{model.name}: {step.label.replace('-', ' ')}/{opts.runs} "
                     f"({opts.warmup} warmup + {opts.iterations} iterations)")
        else:
            self.say(f"{model.name}: end-to-end {step.label}/{opts.untraced_runs} without the event tracer")
        cold = not any(name == model.name for name, _ in order)
        plan = RunPlan(model, *staged[model.name], step.label, traced=step.traced, cold=cold)
        run = self.lease.retry(f"run {model.name} {step.label}", lambda: self._one_run(agent, plan),
                               lambda: self._before_run_retry(agent, plan))
        self.heartbeat.beat()
        for line in flag_news(order, [*order, (model.name, run)]):  # as it happens, by the summary's own rule
            self.say(line)
        return run

    def _one_run(self, agent: DeviceAgent, plan: RunPlan) -> ProcessRun:
        """One process run (run/loop/process_run.py); the model's first one records the device's facts."""
        run, facts = run_once(agent, self.options, plan, self.rundir, debug_buffer_size=self._debug_buffer_size(plan.model),
                              say=self.say, started=self._step_started, launch=self.launch)
        if plan.cold:
            self._record_facts(plan.model, facts)
        return run

    def _step_started(self, out_rel: str | None) -> None:
        self.current_out = out_rel
        if out_rel is not None:
            self.check_cancelled()  # an abort that came before current_out was set finds no runner: stop here

    def _before_run_retry(self, agent: DeviceAgent, plan: RunPlan) -> None:
        self.check_cancelled()
        self.heartbeat.beat()
        prepare_retry(agent, self.lease.lock, plan.out_rel, self.say, restage=lambda: self.stager.stage(agent))

    def _setup_controls(self, agent: DeviceAgent) -> None:
        facts: dict[str, Any] = dict(self.launch.controls)
        for argv in setup_commands(self.spec):
            facts.update(parse_key_values(agent.check(argv).stdout))
        if facts:
            self.say(", ".join(f"{k}: {v}" for k, v in facts.items()))
            self.record.set(controls=facts)

    def _restore_controls(self, agent: DeviceAgent) -> None:
        for argv in restore_commands(self.spec):
            try:
                agent.run(argv)
            except EtfarmError as exc:  # the job's own outcome matters more; say it, keep it
                self.say(f"could not restore device controls: {exc}")

    def _record_facts(self, model: ExportedModel, facts: DeviceFacts) -> None:
        """device.json of a model: what the device was at the model's first (cold) run."""
        local_dir = self.rundir.model_dir(self.spec.name, model.name)
        write_json_atomic(local_dir / DEVICE_JSON, {"name": self.spec.name, "transport": self.spec.transport,
                                                   "target": self.spec.target, "exec_prefix": list(self.spec.exec_prefix),
                                                   "cpus": self.spec.cpus, "facts": facts.to_json()})
        device = self.rundir.job.device(self.spec.name)
        if device is None or not device.facts:
            self.record.set(facts=facts)

    def _debug_buffer_size(self, model: ExportedModel) -> int:
        """The configured size, or (0) one computed from the model's ETRecord for this many executions."""
        if self.options.debug_buffer_size > 0 or not self.options.intermediate_outputs:
            return self.options.debug_buffer_size
        if model.etrecord is None:
            raise DataError(f"{model.name}: intermediate outputs need the model's ETRecord to size the debug buffer "
                            "(put <stem>.etrecord beside the .pte)")

        return debug_buffer_size(model.etrecord, self.options.iterations)
