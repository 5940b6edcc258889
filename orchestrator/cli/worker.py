"""`etfarm worker`: offer this host's devices to a Dask scheduler (orchestrator/farm/worker.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.base.errors import UsageError
from orchestrator.base.progress import Progress
from orchestrator.cli.options import ConfigOption, SchedulerOption, TlsCaOption, TlsCertOption, TlsKeyOption
from orchestrator.config import load_inventory


def register(app: typer.Typer) -> None:
    app.command("worker")(worker)


def worker(
    scheduler: SchedulerOption = None,
    config: ConfigOption = None,
    name: Annotated[str | None, typer.Option(help="Worker name shown by `farm status` (default: its address).")] = None,
    probe_interval: Annotated[float, typer.Option(
        min=0.1, help="Seconds between SSH probes and inventory re-reads (adb changes are published at once).")] = 2.0,
    listen_host: Annotated[str | None, typer.Option(
        help="Interface the worker listens on (default: dask's choice; 127.0.0.1 for a one-host farm).")] = None,
    tls_ca_file: TlsCaOption = None,
    tls_cert: TlsCertOption = None,
    tls_key: TlsKeyOption = None,
) -> None:
    """Run a Dask worker offering this host's inventory devices as resources dev-<name> (1 online, 0 offline).

    adb devices are tracked through the adb server (a plug or unplug is published at once); SSH devices are
    probed (banner) and the inventory file is re-read every --probe-interval seconds, when the adb server's
    list is also checked once. Workers execute what the scheduler sends: use TLS and a firewall (docs/how-to/farm.md).
    """
    # only a farm's commands load the farm's package (a single-host run never does)
    from orchestrator.farm.security import make_security
    from orchestrator.farm.worker import WorkerOptions, serve

    if not scheduler:
        raise UsageError("--scheduler: required (or set ETFARM_SCHEDULER)")

    def load(path: Path | None) -> dict:
        devices = load_inventory(path).devices
        # The built-in `local` is every host; a worker offers it only without a file or when the file names it.
        return {n: s for n, s in devices.items() if path is None or s.source != "<built-in>"}

    options = WorkerOptions(scheduler=scheduler, config=config, name=name, probe_interval_s=probe_interval,
                            listen_host=listen_host, security=make_security(tls_ca_file, tls_cert, tls_key))
    serve(options, load, Progress())
