"""`etfarm store import DIR...`: record existing run directories (`etfarm run` records its job: app/record.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.history import StoreOption
from orchestrator.results.record import RunRecord
from orchestrator.store import open_store

store_app = typer.Typer(help="The results store (SQLite) that history, report and compare read.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(store_app, name="store")


@store_app.command("import")
def import_runs(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run directories (each holds a manifest.json).")],
    store: StoreOption = None,
) -> None:
    """Record run directories in the store; a run already there is replaced, never duplicated."""
    with open_store(store) as opened:
        for run_dir in run_dirs:
            run = RunRecord(run_dir)
            replaced = opened.has_job(run.job.run_id)
            run_id = opened.record(run)
            typer.echo(f"{'re-recorded' if replaced else 'recorded'} {run_id} from {run_dir}")
        typer.echo(f"store: {opened.path}")

