"""`etfarm history`: stored runs, newest first; `etfarm history show ID`: one run in full."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from orchestrator.base.codec import encode
from orchestrator.base.errors import UsageError
from orchestrator.store import open_store, store_path

if TYPE_CHECKING:
    from orchestrator.store import StoredJob

history_app = typer.Typer(help="Runs recorded in the results store, newest first.", no_args_is_help=False)

StoreOption = Annotated[Path | None, typer.Option(
    "--store", envvar="ETFARM_STORE", help="Results store (default $ETFARM_STORE, else $XDG_DATA_HOME/etfarm/results.db).")]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def register(app: typer.Typer) -> None:
    app.add_typer(history_app, name="history")


@history_app.callback(invoke_without_command=True)
def history(
    ctx: typer.Context,
    model: Annotated[str | None, typer.Option(help="Only runs of this model name.")] = None,
    device: Annotated[str | None, typer.Option(help="Only runs on this device.")] = None,
    since: Annotated[str | None, typer.Option(help="Only runs started on or after this date (YYYY-MM-DD[THH:MM]).")] = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many runs.")] = 20,
    as_json: JsonOption = False,
    store: StoreOption = None,
    changes: Annotated[bool, typer.Option(
        "--changes", help="Find where each series (device, model and settings) shifted its end-to-end p50 over the listed "
                          "runs (ruptures PELT, penalty from the series' noise) and name the run and git commit where "
                          "each shift began.")] = False,
) -> None:
    """List stored runs, newest first: per device end-to-end p50 (ms) or its status."""
    if ctx.invoked_subcommand is not None:
        return

    if not store_path(store).exists():  # reading never creates a store
        typer.echo("[]" if as_json else f"no stored runs: {store_path(store)} does not exist yet (`etfarm run` creates it)")
        return
    with open_store(store) as opened:
        runs = opened.jobs(model=model, device=device, since=since, limit=limit)
    if model is not None or device is not None:
        runs = [_only(r, model, device) for r in runs]
    runs = [_with_verdicts(r) for r in runs]
    if changes:
        _print_changes(runs, as_json)
        return
    if as_json:
        typer.echo(json.dumps([_run_json(r) for r in runs], indent=2))
        return
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.report.terminal.history import history_table

    typer.echo(history_table(runs, device))


@history_app.command("show")
def show(
    run_id: Annotated[str, typer.Argument(help="A run id from `etfarm history`.")],
    as_json: JsonOption = False,
    store: StoreOption = None,
) -> None:
    """One stored run: devices, models, verification, end-to-end p50s, device facts."""
    if not store_path(store).exists():
        raise UsageError(f"{run_id}: no store at {store_path(store)} (`etfarm run` creates it)")
    with open_store(store) as opened:
        job = opened.job(run_id)
        run_dir = opened.run_dir(run_id)
    if as_json:
        typer.echo(json.dumps(job.to_dict(), indent=2))
        return
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.report.terminal.history import run_details

    typer.echo(run_details(job, str(run_dir) if run_dir else None))


def _print_changes(runs: list[StoredJob], as_json: bool) -> None:
    """Change points per series: (device, model) and the configuration it ran with (each point's settings, as the
    store read them), so a series never mixes configurations (backends, threads, numerics, runtimes, ...)."""
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.verdicts.changes import find_changes

    found = find_changes([p for r in runs for p in r.points])
    if as_json:
        typer.echo(json.dumps([encode(s) for s in found], indent=2))
        return
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.report.terminal.verdicts import changes_table

    typer.echo(changes_table(found))


def _only(run: StoredJob, model: str | None, device: str | None) -> StoredJob:
    points = tuple(p for p in run.points if (model is None or p.model == model) and (device is None or p.device == device))
    models = tuple(m for m in run.models if model is None or m == model)
    return replace(run, points=points, models=models)


def _with_verdicts(run: StoredJob) -> StoredJob:
    """The run with the verdicts a nightly recorded beside it (DIR/verdicts.json): a regressed night lists as
    regressed, not by its job's status alone."""
    if run.run_dir is None:
        return run
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.results.record import RunRecord
    from orchestrator.verdicts.recorded import recorded_verdicts

    verdicts = recorded_verdicts(RunRecord(run.run_dir))
    return replace(run, points=tuple(replace(p, verdict=verdicts.get((p.device, p.model))) for p in run.points))


def _run_json(run: StoredJob) -> dict[str, Any]:
    data = asdict(run)
    data["run_dir"] = str(run.run_dir) if run.run_dir else None
    for point, stored in zip(data["points"], run.points, strict=True):
        point["settings"] = dict(stored.settings)
    return data
