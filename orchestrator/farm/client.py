"""`etfarm run --scheduler`: the job engine (run/job.py) with the farm's executor, and what talks to Dask.

`run_distributed` and `resume_distributed` are the job engine's `run_job_on`/`resume_job_on` with a
`FarmExecutor` (executor.py): the job is assembled, planned and judged as on one host, its devices
run as Dask tasks. `DaskFarm` is the only place the executor meets `distributed`: the workers'
inventories and offered devices, shipping blobs, submitting a task, waiting, turning a finished
(or failed, cancelled, killed) future into a `TaskReply`, the progress topic and the run's stop event.
See docs/architecture.md, "Many hosts (Dask)".
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.artifacts.modelspec import ModelSpec
from orchestrator.errors import Blame, UsageError
from orchestrator.farm import require_distributed, resource_name
from orchestrator.farm.blobs import ShipReport, ship
from orchestrator.farm.task import RetryableFailure, TaskReply, TaskRequest, progress_topic, run_task, stop_event_name
from orchestrator.progress import Progress
from orchestrator.run.job import JobResult, resume_job_on, run_job_on
from orchestrator.run.results import DeviceResult, DeviceStatus, RunOptions

CONNECT_TIMEOUT_SEC = 20.0


@dataclass(frozen=True)
class FarmOptions:
    scheduler: str
    security: Any = None
    device_deadline_s: float = 600.0  # how long a task may wait with no worker offering its device
    retries: int = 2  # Dask retries of a task that failed for infrastructure reasons


@dataclass(frozen=True)
class FarmDevice:
    name: str
    worker: str
    transport: str
    target: str
    runtime: str | None = None  # the client builds the runner: a worker's `runtime:` prefix is not used (farm/task.py)


def run_distributed(device_names: Sequence[str], specs: Sequence[ModelSpec], *, backend: str, options: RunOptions,
                    out: Path | None, progress: Progress, farm: FarmOptions, run_id: str | None = None) -> JobResult:
    from orchestrator.farm.executor import FarmExecutor

    return run_job_on(FarmExecutor(farm), device_names, specs, backend=backend, options=options, out=out,
                      progress=progress, run_id=run_id)


def resume_distributed(root: Path, specs: Sequence[ModelSpec], *, progress: Progress, farm: FarmOptions) -> JobResult:
    """Run what a recorded distributed job is missing, on the farm, into its own run directory: devices
    with every model complete are kept; a model with some process runs is sent with them (`done`, and
    their files as blobs) so its worker runs only the missing ones; the rest run whole."""
    from orchestrator.farm.executor import FarmExecutor

    return resume_job_on(FarmExecutor(farm), root, specs, progress=progress)


def connect(scheduler: str, security: Any = None) -> Any:
    require_distributed()
    from distributed import Client

    try:
        return Client(scheduler, security=security, timeout=CONNECT_TIMEOUT_SEC)
    except (OSError, TimeoutError) as exc:
        raise UsageError(f"--scheduler {scheduler}: cannot connect: {exc}") from None
    except TypeError as exc:  # distributed's words for a tls:// address without a TLS configuration
        if "ssl_context" not in str(exc):
            raise
        raise UsageError(f"--scheduler {scheduler}: a TLS scheduler needs --tls-ca-file, --tls-cert and --tls-key "
                         "(or dask's distributed.comm.tls configuration)") from None


def farm_devices(client: Any) -> dict[str, FarmDevice]:
    """Every device some worker has in its inventory (online or not), by name."""
    found: dict[str, FarmDevice] = {}
    for address, devices in client.run(_describe_inventory, on_error="ignore").items():  # a dying worker: skipped
        for name, (transport, target) in devices.items():
            found.setdefault(name, FarmDevice(name, address, transport, target))
    return found


def _describe_inventory(dask_worker: Any) -> dict[str, tuple[str, str]]:
    watch = getattr(dask_worker, "etfarm_inventory", None)
    return {n: (s.transport, s.target) for n, s in watch.specs.items()} if watch is not None else {}


def offered(client: Any) -> dict[str, list[str]]:
    """Device name -> addresses of the workers offering it now (resource > 0)."""
    result: dict[str, list[str]] = {}
    for address, info in client.scheduler_info(n_workers=-1)["workers"].items():
        for resource, value in (info.get("resources") or {}).items():
            if resource.startswith("dev-") and value > 0:
                result.setdefault(resource[4:], []).append(address)
    return result


def nudge_unrunnable(dask_scheduler: Any) -> int:
    """Scheduler side: retry placing tasks waiting for a resource (set_resources does not)."""
    recommendations = {ts.key: "processing" for ts in list(dask_scheduler.unrunnable)}
    if recommendations:
        dask_scheduler.transitions(recommendations, stimulus_id=f"etfarm-nudge-{time.time()}")
    return len(recommendations)


class DaskFarm:
    """The farm as the executor sees it, through a `distributed.Client`."""

    def __init__(self, client: Any, options: FarmOptions) -> None:
        self.client = client
        self.options = options

    @classmethod
    def connect(cls, options: FarmOptions) -> DaskFarm:
        return cls(connect(options.scheduler, options.security), options)

    def close(self) -> None:
        self.client.close()

    def devices(self) -> dict[str, FarmDevice]:
        return farm_devices(self.client)

    def offered(self) -> dict[str, list[str]]:
        return offered(self.client)

    def nudge(self) -> None:
        self.client.run_on_scheduler(nudge_unrunnable)

    def ship(self, worker: str, by_hash: Mapping[str, Path]) -> ShipReport:
        return ship(self.client, worker, by_hash)

    def submit(self, request: TaskRequest, attempt: int = 0) -> Any:
        key = f"etfarm-{request.run_id}-{request.device}-{request.model}" + (f"-{attempt}" if attempt else "")
        return self.client.submit(run_task, request, key=key, pure=False, retries=self.options.retries,
                                  resources={resource_name(request.device): 1})

    def wait(self, futures: Iterable[Any], timeout_s: float) -> set[Any]:
        from distributed import wait

        try:
            done, _ = wait(list(futures), timeout=timeout_s, return_when="FIRST_COMPLETED")
        except TimeoutError:
            return set()
        return set(done)

    def reply(self, future: Any, request: TaskRequest) -> TaskReply:
        """What a future that is no longer pending says: its reply, or why it has none."""
        from distributed import KilledWorker

        if future.status == "finished":
            return future.result()
        if future.status == "cancelled":
            return failed_reply(request, f"task for {request.model} was cancelled", Blame.INFRASTRUCTURE)
        exc = future.exception()
        if isinstance(exc, RetryableFailure):
            return exc.reply
        if isinstance(exc, KilledWorker):
            return failed_reply(request, f"{request.model}: the workers running it died too often ({exc})",
                                Blame.INFRASTRUCTURE)
        return failed_reply(request, f"{request.model}: task failed: {type(exc).__name__}: {exc}", Blame.BUG)

    def cancel(self, futures: Iterable[Any]) -> None:
        self.client.cancel(list(futures))

    def listen(self, run_id: str, handler: Callable[[Any], None]) -> None:
        """Progress events of the run's tasks to `handler`; the run's stop event cleared (a resume after Ctrl-C)."""
        from distributed import Event

        self.client.subscribe_topic(progress_topic(run_id), handler)  # before any task starts
        Event(stop_event_name(run_id), client=self.client).clear()

    def stop(self, run_id: str) -> None:
        """Set the run's stop event: every task's watcher aborts its device session."""
        from distributed import Event

        Event(stop_event_name(run_id), client=self.client).set()


def failed_reply(request: TaskRequest, message: str, blame: Blame) -> TaskReply:
    return TaskReply(DeviceResult(request.device, "", request.target, DeviceStatus.FAILED,
                                  f"[{request.device}] {message}", blame))
