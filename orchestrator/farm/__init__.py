"""Many hosts on Dask distributed (docs/architecture.md, "Many hosts (Dask)"): workers own devices, the client owns the job.

Imported only when a command is given `--scheduler` (or ETFARM_SCHEDULER): the single-host path
never imports dask (tests/integration/test_farm.py checks it).

- `devices.py`  which inventory devices a worker can offer right now -> `dev-<name>` resources (whether a device
                is there is its transport's answer: device_agents/presence.py, adb tracked by device_agents/adb/track.py)
- `blobs.py`    content-addressed artifact cache on workers; the client asks, then sends what is missing
- `task.py`     the worker side of one (device, model) task: a DeviceSession into a temporary run subtree
- `streamed.py` each process run a task finishes, announced and fetched at once (a dying worker loses only one)
- `tries.py`    each try of a task announces its steps; a try lost with its worker becomes an attempt of its step
- `worker.py`   `etfarm worker`: an in-process `distributed.Worker` that keeps its resources current
- `dask.py`     `DaskFarm`, the only code that talks to the Dask client (inventories, shipping, tasks, events,
                the stop event); no Dask retries: only a lost worker's task runs again
- `executor.py` the farm's executor: one task per (device, model), replies merged through each device's
                DeviceRecord at once, models cut short finished by run/finisher.py, worker loss, the device
                deadline, Ctrl-C
- `client.py`   `etfarm run --scheduler`: the job engine (run/engine/job.py) with the farm's executor

Imports point one way (checked by import-linter): client -> executor -> dask -> task -> streamed, tries -> blobs.
- `status.py`   `etfarm farm status`: workers, their devices, what each is running
- `security.py` TLS `Security` from command-line options
"""

from __future__ import annotations

import re

from orchestrator.base.errors import EXIT_INFRASTRUCTURE, InfrastructureError, UsageError

RESOURCE_PREFIX = "dev-"
# What etfarm hands Dask as a scheduler: tcp:// or tls:// (the README's two), a host (name, IPv4, [IPv6]), a port.
_ADDRESS = re.compile(r"(tcp|tls)://(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]{0,252}))(:[0-9]{1,5})?")


class FarmUnreachable(InfrastructureError):
    """The scheduler cannot be reached, or was lost mid-job: the farm's fault, not the job's (exit 3). A job's
    devices are failed, never left `running`, so `--resume` completes the run once the scheduler is back."""

    exit_code = EXIT_INFRASTRUCTURE


def scheduler_problem(address: str) -> str | None:
    """Why `address` is no scheduler address etfarm takes (None: it is one), checked before Dask sees it: Dask's own
    words for `http://x` are an `unknown address scheme` bug report and, in a worker, a 25-line traceback."""
    match = _ADDRESS.fullmatch(address.strip())
    if match is None:
        return "not a Dask scheduler address: expected tcp://HOST:PORT or tls://HOST:PORT"
    port = match.group(4)
    if port is not None and not 0 < int(port[1:]) < 65536:
        return f"port {port[1:]} is out of range (1 to 65535)"
    return None


def check_scheduler(address: str, option: str = "--scheduler") -> str:
    """`address` stripped, or a one-line usage error naming `option` (exit 2)."""
    problem = scheduler_problem(address)
    if problem is not None:
        raise UsageError(f"{option} {address[:100]!r}: {problem}")
    return address.strip()


def require_distributed() -> None:
    """A one-line usage error, not a traceback, when the optional extra is not installed."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise UsageError("--scheduler needs Dask distributed: pip install 'etfarm[farm]'") from None


def resource_name(device: str) -> str:
    """The Dask worker resource that stands for one device (1 available, 0 offline)."""
    return f"{RESOURCE_PREFIX}{device}"
