"""How a job's devices run: the executor interface (docs/architecture.md, "The job engine: executors").

The engine (run/engine/job.py) assembles the job, plans it, builds the runners and judges the result;
an executor only runs the plan's devices. Two exist: `LocalExecutor` (run/engine/local_executor.py), a
thread per device session on this host, and the farm's (orchestrator/farm/executor.py), one Dask
task per (device, model). An executor:

- is a context manager: what it holds (a connection to the Dask scheduler) lives as long as the job;
- `devices(names)`: the devices it will run, with their transport and target (the engine builds a
  runner per target); an unknown name is a usage error;
- `execute(context)`: runs every device of `context.plan`, recording each device through a
  `DeviceRecord` and each finished (device, model)'s statistics in `context.stats`; returns when
  every device has ended. Ctrl-C (KeyboardInterrupt) reaches the engine, which then calls
- `stop()`: stop what runs (runners killed, device locks released), record what finished, mark the
  rest `interrupted`, within a bounded time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, Self

from orchestrator.artifacts.runner_info import runner_slot
from orchestrator.base.errors import DeviceError
from orchestrator.base.progress import Progress
from orchestrator.results.model import JobOptions
from orchestrator.run.device_record import DeviceRecord
from orchestrator.run.job_stats import JobStats
from orchestrator.run.plan import JobPlan
from orchestrator.run.rundir import RunDirectory

if TYPE_CHECKING:
    from orchestrator.artifacts.build import RunnerBuild
    from orchestrator.artifacts.lowering import ExportedModel


class DeviceRef(Protocol):
    """What the engine needs to know of a device before it runs: a DeviceSpec, or a farm's device."""

    @property
    def name(self) -> str: ...
    @property
    def transport(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def runtime(self) -> str | None: ...  # the user's ExecuTorch prefix the runner is built against, if any
    @property
    def emulated(self) -> bool: ...  # qemu on a host (`etfarm devices emulate`): the manifest says so


@dataclass(frozen=True)
class JobContext:
    """Everything an executor is given to run a job's devices."""

    rundir: RunDirectory
    plan: JobPlan
    models: tuple[ExportedModel, ...]
    options: JobOptions
    builds: Mapping[str, RunnerBuild]  # runner_slot (the target, and the device's runtime if any) -> its runner
    build_errors: Mapping[str, str]  # runner_slot -> why it has no runner
    stats: JobStats
    progress: Progress

    def record(self, device: DeviceRef) -> DeviceRecord:
        return DeviceRecord(self.rundir, device.name, device.transport, device.target,
                            self.progress.for_device(device.name), emulated=device.emulated)

    def runner(self, device: DeviceRef) -> RunnerBuild:
        """The runner `device` runs, looked up as the engine stores it (by runner_slot: its target and runtime);
        a DeviceError saying why when it has none (its target could not build)."""
        slot = runner_slot(device.target, device.runtime)
        build = self.builds.get(slot)
        if build is None:
            raise DeviceError(device.name, self.build_errors.get(slot) or f"no runner for target {slot}")
        return build


class Executor(Protocol):
    scheduler: str | None  # where the devices are (recorded in the job's config; a resume goes back there)

    def __enter__(self) -> Self: ...
    def __exit__(self, *exc: object) -> None: ...
    def devices(self, names: Sequence[str]) -> Sequence[DeviceRef]: ...
    def execute(self, context: JobContext) -> None: ...
    def stop(self) -> None: ...
