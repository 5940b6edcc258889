"""One device's part of a job: lease the device, stage, run the missing process runs, finish each model.

A DeviceSession runs in its own thread (run/engine/local_executor.py) or in a farm task (the farm's
task.py); it only touches its own subtree of the run directory and records through its
`DeviceRecord`, so devices never wait on each other. Failures are recorded with who is to blame,
never raised. The parts, each a module of run/ (docs/architecture.md, "The job engine: a device session"):

- `DeviceLease` (lease.py): both device locks, the connection, reconnect and re-validation;
- `Stager` (stager.py): the runner, its libraries and the models, pushed only when changed;
- `ProcessRunLoop` (process_loop.py): the schedule's missing process runs, retried after transport faults;
- `ModelFinisher` (finisher.py): verify, analyse and record each model with the runs it has;
- `Heartbeat` (heartbeat.py): what the job's watchdog reads from its own thread.

`abort()` (from another thread: Ctrl-C, the watchdog, the farm's stop event) kills the runner on
the device before the session releases its lock.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import TYPE_CHECKING

from device_agents import DeviceSpec
from device_agents.base import DeviceAgent
from device_agents.step import kill_step_command
from orchestrator.base.errors import EtfarmError, disk_full
from orchestrator.results.model import DeviceResult
from orchestrator.run.device.heartbeat import Heartbeat
from orchestrator.run.device.lease import DeviceLease
from orchestrator.run.device.stager import Stager
from orchestrator.run.energy.phase import device_energy, record_energy
from orchestrator.run.executor import JobContext
from orchestrator.run.finisher import ModelFinisher
from orchestrator.run.loop.process_loop import ProcessRunLoop
from orchestrator.run.schedule import Order

if TYPE_CHECKING:
    from orchestrator.artifacts.build import RunnerBuild

log = logging.getLogger(__name__)

# The command that kills a device's runner on Ctrl-C gets this long on the device.
ABORT_TIMEOUT_SEC = 5.0


class Interrupted(EtfarmError):
    """The job was interrupted (Ctrl-C, SIGTERM) while this device worked."""


class DeviceSession:
    def __init__(self, spec: DeviceSpec, context: JobContext, heartbeat: Heartbeat | None = None) -> None:
        self.spec = spec
        self.name = spec.name
        self.context = context
        self.record = context.record(spec)
        self.say = self.record.say
        self.heartbeat = heartbeat or Heartbeat()  # a farm task's one announces the steps it starts (farm/tries.py)
        self.cancelled = threading.Event()
        self.build: RunnerBuild | None = None  # the target's runner, found when the session runs
        # Resumed: the process runs each model has already, in the order they ran.
        self.done: Order = [(model, run) for model, runs in context.plan.done.get(spec.name, {}).items() for run in runs]
        self.finisher = ModelFinisher(context.models, context.options, context.rundir, self.record, context.stats,
                                      self.cancelled)
        self.lease = DeviceLease(spec, context.options, self.record, self.heartbeat, self._check_cancelled)
        self.loop: ProcessRunLoop | None = None

    def run(self) -> DeviceResult:
        """Run every model on the device; any failure is recorded, never raised."""
        self.record.start()
        try:
            self.build = self.context.runner(self.spec)
            self.record.set(runner_key=self.build.key)
            with self.lease.hold() as agent:
                self._run_models(agent)
            return self.record.succeed()
        except Exception as exc:
            if not self.finisher.finished and self.done:  # resumed, failed before the loop: keep the runs it had
                with contextlib.suppress(Exception):
                    self.finisher.finish(list(self.done), exc)
            return self._record_failure(exc)

    def _run_models(self, agent: DeviceAgent) -> None:
        """Stage, run the missing process runs, then finish every model with what it has (also when
        something ends the loop early: the models keep what finished)."""
        assert self.build is not None
        context = self.context
        self.loop = ProcessRunLoop(self.spec, context.models, context.options, context.rundir, self.lease,
                                   Stager(self.build, context.models, self.say), self.heartbeat, self.cancelled,
                                   self._check_cancelled)
        staged = self.loop.prepare(agent)
        order = list(self.done)
        failure: BaseException | None = None
        energies = {}
        try:
            self.loop.run(agent, staged, order)
            if context.options.energy:  # a phase of its own, after the process runs (run/energy/phase.py)
                energies = device_energy(agent, self.loop.launch, context.options, context.models, staged, order,
                                         self.say)
        except BaseException as exc:
            failure = exc
            raise
        finally:
            self.finisher.finish(order, failure)
        record_energy(self.record, energies)

    def abort(self) -> None:
        """Stop this session from another thread: no new step starts, the running one's runner is killed
        on the device (before the session releases its lock). Bounded by ABORT_TIMEOUT_SEC + the host grace."""
        self.cancelled.set()
        agent, out_rel = self.lease.agent, self.loop.current_out if self.loop is not None else None
        if agent is None or out_rel is None:
            return
        try:
            agent.run(kill_step_command(agent, out_rel), timeout_s=ABORT_TIMEOUT_SEC)
        except Exception as exc:  # noqa: BLE001 - a dead device has no runner left to kill; say so, go on
            log.debug("could not kill the runner on %s: %s", self.name, exc)

    def _check_cancelled(self) -> None:
        if self.cancelled.is_set():
            raise Interrupted(f"[{self.name}] interrupted")

    def _record_failure(self, exc: Exception) -> DeviceResult:
        """Interrupted (whatever the stop made fail; a full disk is still said), or failed with `exc`'s blame;
        a bug or an unexpected transport error fails this device only: the others go on."""
        if self.cancelled.is_set() and disk_full(exc) is None:
            self.say("interrupted")
            return self.record.interrupt()
        return self.record.fail_with(exc)
