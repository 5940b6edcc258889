"""`etfarm farm status`: workers, their devices and what they run (orchestrator/farm/status.py)."""

from __future__ import annotations

import json

import typer

from orchestrator.base.cleanup import close_quietly
from orchestrator.base.codec import encode
from orchestrator.base.errors import UsageError
from orchestrator.cli.options import JsonOption, SchedulerOption, TlsCaOption, TlsCertOption, TlsKeyOption

farm_app = typer.Typer(help="The Dask farm: workers and their devices.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(farm_app, name="farm")


@farm_app.command("status")
def status(
    scheduler: SchedulerOption = None,
    as_json: JsonOption = False,
    tls_ca_file: TlsCaOption = None,
    tls_cert: TlsCertOption = None,
    tls_key: TlsKeyOption = None,
) -> None:
    """Workers of the scheduler, their devices (online/offline) and the tasks each is running."""
    # only a farm's commands load the farm's package (a single-host run never does)
    from orchestrator.farm.client import connect
    from orchestrator.farm.security import make_security
    from orchestrator.farm.status import farm_status, status_lines

    if not scheduler:
        raise UsageError("--scheduler: required (or set ETFARM_SCHEDULER)")
    client = connect(scheduler, make_security(tls_ca_file, tls_cert, tls_key))
    try:
        rows = farm_status(client)
    finally:
        close_quietly(f"the connection to {scheduler}", client.close)
    if as_json:
        typer.echo(json.dumps({"scheduler": scheduler, "workers": [encode(r) for r in rows]}, indent=2))
        return
    for line in status_lines(rows, scheduler):
        typer.echo(line)
