"""`etfarm worker`: one Dask worker per USB host, offering its devices as resources.

An in-process `distributed.Worker` (no subprocess, no preload file) started with the inventory's
devices as `dev-<name>` resources; every `probe_interval_s` a probe round (devices.py, in a thread)
re-reads a changed inventory and probes each device, and `Worker.set_resources` publishes any
change: 0 for a device that went away, 1 when it is back or newly added. The scheduler in this
distributed version does not re-examine tasks waiting for a resource when an existing worker's
resources change, so the client nudges it (client.py, `nudge_unrunnable`).
The device lock (run/locks.py) is taken by the task on this host, where the device is.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.errors import UsageError
from orchestrator.scale import require_distributed
from orchestrator.scale.devices import InventoryWatch, Offer

PROBE_INTERVAL_SEC = 2.0
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerOptions:
    scheduler: str
    config: Path | None
    name: str | None = None
    probe_interval_s: float = PROBE_INTERVAL_SEC
    listen_host: str | None = None
    nthreads: int = 0  # 0: two per device, at least 16 (sessions mostly wait on devices; room for hot-plug)
    security: Any = None


def serve(options: WorkerOptions, load: Callable[[Path | None], dict[str, Any]],
          say: Callable[[str], None]) -> None:
    """Run the worker until it is stopped (Ctrl-C / SIGTERM) or the scheduler closes it."""
    require_distributed()
    try:
        asyncio.run(_serve(options, load, say))
    except (TypeError, RuntimeError) as exc:  # "Worker failed to start", caused by what went wrong
        cause = exc.__cause__ or exc
        if not isinstance(cause, TypeError) or "ssl_context" not in str(cause):
            if isinstance(exc, RuntimeError) and exc.__cause__ is not None:
                raise UsageError(f"--scheduler {options.scheduler}: worker failed to start: "
                                 f"{type(cause).__name__}: {cause}") from None
            raise
        raise UsageError(f"--scheduler {options.scheduler}: a TLS scheduler needs --tls-ca-file, --tls-cert and "
                         "--tls-key (or dask's distributed.comm.tls configuration)") from None


async def _serve(options: WorkerOptions, load: Callable[[Path | None], dict[str, Any]], say: Callable[[str], None]) -> None:
    from distributed import Worker

    watch = InventoryWatch(options.config, load)
    offer = await asyncio.to_thread(watch.round)
    nthreads = options.nthreads or max(16, 2 * len(offer.specs))
    kwargs: dict[str, Any] = {"host": options.listen_host} if options.listen_host else {}
    worker = Worker(options.scheduler, name=options.name, resources=offer.resources(), nthreads=nthreads,
                    security=options.security, **kwargs)
    worker.etfarm_inventory = watch  # type: ignore[attr-defined]  (read by task.run_task on this worker)
    await worker
    say(f"worker {worker.name} at {worker.address}, scheduler {options.scheduler}: {_describe(offer)}")
    try:
        while worker.status.name not in ("closing", "closed", "failed", "closing_gracefully"):
            await asyncio.sleep(options.probe_interval_s)
            current = await asyncio.to_thread(watch.round)
            changed = {k: v for k, v in current.resources().items() if offer.resources().get(k) != v}
            if changed:
                await worker.set_resources(**changed)
                say(f"devices now: {_describe(current)}")
            offer = current
    finally:
        await worker.close()


def _describe(offer: Offer) -> str:
    if not offer.online:
        return "no devices"
    return ", ".join(f"{name} ({'online' if up else 'offline'})" for name, up in sorted(offer.online.items()))
