"""The only code that talks to a Dask client: the farm as the executor (executor.py) sees it.

`DaskFarm` holds the `distributed.Client` of a job: the workers' inventories and the devices they
offer now, shipping blobs, submitting a (device, model) task, waiting, turning a future that is no
longer pending into an outcome (`outcome`), the run's progress topic and its stop event. Both the
executor and the CLI's `farm status` (`connect`) start here; nothing here knows about jobs.

Retries: a task is submitted without Dask `retries`. Whether a failed step is tried again is
decided once, in the device session where the error is raised (run/device/retry.py), on this host and on
a worker alike; the task's reply carries the tries it made. Dask runs a task again only when the
worker running it is lost (its scheduler puts the task back; after `allowed-failures` losses it
gives up with KilledWorker): the executor records each lost try (tries.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.base.errors import DeviceError, UsageError, said
from orchestrator.farm import RESOURCE_PREFIX, FarmUnreachable, check_scheduler, require_distributed, resource_name
from orchestrator.farm.blobs import ShipReport, ship
from orchestrator.farm.task import LacksArtifacts, TaskReply, TaskRequest, progress_topic, run_task, stop_event_name

CONNECT_TIMEOUT_SEC = 20.0


@dataclass(frozen=True)
class FarmOptions:
    scheduler: str
    security: Any = None
    device_deadline_s: float = 600.0  # how long a task may wait with no worker offering its device


@dataclass(frozen=True)
class FarmDevice:
    name: str
    worker: str
    transport: str
    target: str
    runtime: str | None = None  # the client builds the runner: a worker's `runtime:` prefix is not used (farm/task.py)
    emulated: bool = False  # farm workers report hardware; an emulated device there is the worker's own inventory's


class TaskLost(DeviceError):
    """A task ended without a reply or an error of its own: cancelled, its workers lost too often, its device
    offered by no worker for too long. Its last try, if one had started, was lost with it (tries.py)."""


# What a task that is no longer pending gave: its reply, a request for the artifacts its worker lacks, or why it
# has neither (TaskLost, or what the task raised).
Outcome = TaskReply | LacksArtifacts | BaseException


def connect(scheduler: str, security: Any = None) -> Any:
    scheduler = check_scheduler(scheduler)
    require_distributed()
    from distributed import Client

    # The client logs each failed reconnection as an ERROR with its traceback; a lost scheduler is said by etfarm, in
    # one line (executor.py), and the job's devices failed so that --resume completes it.
    logging.getLogger("distributed.client").setLevel(logging.CRITICAL)
    try:
        return Client(scheduler, security=security, timeout=CONNECT_TIMEOUT_SEC)
    except (OSError, TimeoutError) as exc:
        if "ConnectionResetError" in str(exc) or isinstance(exc, ConnectionResetError):
            # reached, and reset at once: a scheduler that speaks TLS given as tcp:// (the address is the user's)
            raise UsageError(f"--scheduler {scheduler}: the scheduler reset the connection at once (a TLS scheduler "
                             f"is tls://, with --tls-ca-file, --tls-cert and --tls-key): {said(exc)}") from None
        raise FarmUnreachable(f"--scheduler {scheduler}: cannot connect: {said(exc)}") from None
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
            if resource.startswith(RESOURCE_PREFIX) and value > 0:
                result.setdefault(resource[len(RESOURCE_PREFIX):], []).append(address)
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
        """The task of one (device, model), on a worker that offers its device. No `retries=`: see the docstring."""
        key = f"etfarm-{request.run_id}-{request.device}-{request.model}" + (f"-{attempt}" if attempt else "")
        return self.client.submit(run_task, request, key=key, pure=False, resources={resource_name(request.device): 1})

    def wait(self, futures: Iterable[Any], timeout_s: float) -> set[Any]:
        from distributed import wait

        try:
            done, _ = wait(list(futures), timeout=timeout_s, return_when="FIRST_COMPLETED")
        except TimeoutError:
            return set()
        return set(done)

    def outcome(self, future: Any, request: TaskRequest) -> Outcome:
        """What a future that is no longer pending gave (see `Outcome`)."""
        from distributed import KilledWorker

        if future.status == "finished":
            return future.result()
        if future.status == "cancelled":
            if self.lost():  # Dask cancels every future when it loses its scheduler (scheduler-connection-lost)
                raise FarmUnreachable(f"--scheduler {self.options.scheduler}: lost the scheduler mid-job")
            return TaskLost(request.device, f"task for {request.model} was cancelled")
        exc = future.exception()
        if isinstance(exc, KilledWorker):
            return TaskLost(request.device, f"{request.model}: the workers running it died too often ({exc})")
        return exc

    def lost(self, raised: BaseException | None = None) -> bool:
        """Whether the client lost its scheduler (killed, or its host gone): the job cannot go on. `raised`, what a
        call to the scheduler raised, can tell it first: a connection the scheduler's death closed mid-call raises
        before the client's status changes (a SIGKILLed scheduler, met in a clean-clone round)."""
        from distributed.comm.core import CommClosedError

        return self.client.status not in ("running", "newly-created") or isinstance(raised, CommClosedError)

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
