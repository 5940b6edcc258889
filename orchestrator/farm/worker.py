"""`etfarm worker`: one Dask worker per USB host, offering its devices as resources.

An in-process `distributed.Worker` (no subprocess, no preload file) started with the inventory's
devices as `dev-<name>` resources, kept current by `Worker.set_resources` (0 for a device that went
away, 1 when it is back or newly added):
- every `probe_interval_s` a full round (devices.py, in a thread) re-reads a changed inventory and
  checks each ssh device;
- adb devices are tracked, not polled: their servers' trackers (device_agents/adb/track.py) wake this loop through
  `loop.call_soon_threadsafe` the moment an adb server's list changes, and a round of the adb
  devices alone publishes the change at once, without waiting for the interval.
The scheduler in this distributed version does not re-examine tasks waiting for a resource when an
existing worker's resources change, so the client nudges it (client.py, `nudge_unrunnable`).
The device lock (run/device/locks.py) is taken by the task on this host, where the device is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from orchestrator.base.cleanup import close_quietly
from orchestrator.base.errors import UsageError, said
from orchestrator.farm import FarmUnreachable, check_scheduler, require_distributed
from orchestrator.farm.dask import CONNECT_TIMEOUT_SEC  # a worker waits for its scheduler as run and farm status do
from orchestrator.farm.devices import InventoryWatch, Offer

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
    check_scheduler(options.scheduler)
    require_distributed()
    # "Found stale lock file ... purging": dask's note on scratch space other processes left, at any point of the
    # worker's life (its start, its stop when no scheduler answered): not the user's to read
    logging.getLogger("distributed.diskutils").setLevel(logging.WARNING)
    try:
        asyncio.run(_serve(options, load, say))
    except TimeoutError as exc:  # no scheduler answered within death_timeout
        raise FarmUnreachable(f"--scheduler {options.scheduler}: cannot connect within {CONNECT_TIMEOUT_SEC:g} s "
                              f"({said(exc)})") from None
    except (TypeError, RuntimeError) as exc:  # "Worker failed to start", caused by what went wrong
        cause = exc.__cause__ or exc
        if not isinstance(cause, TypeError) or "ssl_context" not in str(cause):
            if isinstance(cause, (OSError, TimeoutError)):  # no scheduler there, within CONNECT_TIMEOUT_SEC
                raise FarmUnreachable(f"--scheduler {options.scheduler}: cannot connect within "
                                      f"{CONNECT_TIMEOUT_SEC:g} s: {said(cause)}") from None
            if isinstance(exc, RuntimeError) and exc.__cause__ is not None:
                raise UsageError(f"--scheduler {options.scheduler}: worker failed to start: "
                                 f"{type(cause).__name__}: {cause}") from None
            raise
        raise UsageError(f"--scheduler {options.scheduler}: a TLS scheduler needs --tls-ca-file, --tls-cert and "
                         "--tls-key (or dask's distributed.comm.tls configuration)") from None


async def _serve(options: WorkerOptions, load: Callable[[Path | None], dict[str, Any]], say: Callable[[str], None]) -> None:
    from distributed import Worker

    loop = asyncio.get_running_loop()
    wake = asyncio.Event()

    def tracker_changed() -> None:  # called on an adb tracker's thread
        try:
            loop.call_soon_threadsafe(wake.set)
        except RuntimeError:  # the loop is closed: the worker is shutting down
            pass

    watch = InventoryWatch(options.config, load, on_change=tracker_changed)
    try:
        offer = await asyncio.to_thread(watch.round)
        nthreads = options.nthreads or max(16, 2 * len(offer.specs))
        kwargs: dict[str, Any] = {"host": options.listen_host} if options.listen_host else {}
        worker = Worker(options.scheduler, name=options.name, resources=offer.resources(), nthreads=nthreads,
                        security=options.security, death_timeout=CONNECT_TIMEOUT_SEC, **kwargs)
        worker.etfarm_inventory = watch  # type: ignore[attr-defined]  (read by task.run_task on this worker)
        with _quiet_start():
            await worker
        say(f"worker {worker.name} at {worker.address}, scheduler {options.scheduler}: {_describe(offer)}")
        next_full = loop.time() + options.probe_interval_s  # a flapping adb device must not starve ssh probes
        try:
            while worker.status.name not in ("closing", "closed", "failed", "closing_gracefully"):
                await _wait(wake, next_full - loop.time())
                full = loop.time() >= next_full
                current = await asyncio.to_thread(watch.round, not full)
                if full:
                    next_full = loop.time() + options.probe_interval_s
                changed = {k: v for k, v in current.resources().items() if offer.resources().get(k) != v}
                if changed:
                    await worker.set_resources(**changed)
                    say(f"devices now: {_describe(current)}")
                offer = current
        finally:
            await _close_worker(worker)
    finally:
        close_quietly("the device trackers", watch.close, log)


@contextlib.contextmanager
def _quiet_start() -> Iterator[None]:
    """Dask's worker logs a dozen INFO lines while it starts (and its stop when no scheduler answers): the line etfarm
    says once it is up names the same, and a worker that cannot start is one error line."""
    # distributed.diskutils: "Found stale lock file ... purging" for scratch space other dask processes left behind
    loggers = [logging.getLogger(name) for name in ("distributed.worker", "distributed.diskutils")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


async def _close_worker(worker: Any) -> None:
    """Close the worker; a scheduler that died first must not turn the shutdown into a second error."""
    try:
        await worker.close()
    except Exception:  # noqa: BLE001 - the rule of orchestrator/base/cleanup.py, for a coroutine
        log.debug("closing the worker failed (scheduler gone?)", exc_info=True)


async def _wait(wake: asyncio.Event, timeout_s: float) -> None:
    """Until a tracker reports a change or `timeout_s` passes."""
    try:
        await asyncio.wait_for(wake.wait(), max(timeout_s, 0.0))
    except TimeoutError:
        return
    wake.clear()


def _describe(offer: Offer) -> str:
    if not offer.online:
        return "no devices"
    return ", ".join(f"{name} ({'online' if up else 'offline'})" for name, up in sorted(offer.online.items()))
