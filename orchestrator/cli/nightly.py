"""`etfarm nightly --plan FILE`: run a plan, store it, compare with the baseline, write reports."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from orchestrator.base.codec import encode
from orchestrator.base.progress import Progress
from orchestrator.cli.options import (
    JunitOption,
    QuietOption,
    SchedulerOption,
    StoreOption,
    TlsCaOption,
    TlsCertOption,
    TlsKeyOption,
)
from orchestrator.report.destination import check_target
from orchestrator.store import open_store


def register(app: typer.Typer) -> None:
    app.command("nightly")(nightly)


PlanOption = Annotated[Path, typer.Option(
    "--plan", help="Nightly plan YAML: devices, models, runs, iterations, warmup, threshold, center, "
    "noise_floor (auto, the default: per device and model from stored good runs; or a percentage), "
    "baseline, report; optionally confirm, confirm_max_runs, scheduler, threads, prompt_len, gen_len, publish (the dashboard), "
    "bisect, repo, bisect_budget (a confirmed regression's culprit commit) "
    "(configs/nightly.yaml shows every key).")]
PlanConfigOption = Annotated[Path | None, typer.Option(
    help="Device inventory YAML when the plan names none (default $ETFARM_CONFIG).")]


def nightly(
    plan: PlanOption,
    config: PlanConfigOption = None,
    store: StoreOption = None,
    quiet: QuietOption = False,
    scheduler: SchedulerOption = None,
    tls_ca_file: TlsCaOption = None,
    tls_cert: TlsCertOption = None,
    tls_key: TlsKeyOption = None,
    junit: JunitOption = None,
) -> None:
    """Run the plan's models on its devices, record the runs, compare each (device, model) with its
    baseline (last-good or a run id), write Markdown and JSON verdicts into the plan's report
    directory and print the verdict table. With `noise_floor: auto` (the default) a regression
    must also exceed the device's job-to-job noise estimated from its stored good runs (none
    until 6 exist); the table's `noise floor` column says which floor each pair used.

    Exit 0 no regression; 1 a regression or wrong outputs; 3 nothing regressed but some device or
    model could not be measured, or some pair could not be judged (too noisy, or measured under different load)
    (a model whose code or export fails is that model's failure: the
    others run); 2 usage or plan error, before anything runs. The first night has no baseline: it passes
    (verdict `new`) and becomes the baseline. With `--scheduler` (or the plan's `scheduler:`) the
    jobs run on the Dask farm (see `etfarm run --scheduler`).
    """
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.app.bisect_night import bisect_night
    from orchestrator.app.nightly import run_nightly
    from orchestrator.app.nightly_plan import load_plan
    from orchestrator.report.terminal.verdicts import verdict_table

    loaded = load_plan(plan)
    if loaded.publish is not None:
        _check_publish(loaded, store)
    junit = junit or loaded.junit
    if junit is not None:
        check_target(junit, "--junit" if junit != loaded.junit else f"{plan}: junit")
    farm = None
    if scheduler or loaded.scheduler:
        # only a farm's commands load the farm's package (a single-host run never does)
        from orchestrator.farm.client import FarmOptions
        from orchestrator.farm.security import make_security

        farm = FarmOptions(scheduler=scheduler or loaded.scheduler or "",
                            security=make_security(tls_ca_file, tls_cert, tls_key))
    with open_store(store) as opened:
        outcome = run_nightly(loaded, opened, Progress(quiet=quiet), config=config, farm=farm, bisector=bisect_night)
    if outcome.interrupted:  # no verdict, no report from partial data; the job is stored as `interrupted`
        for job in outcome.jobs:
            typer.echo(f"run directory: {job.rundir.root}" + (" (interrupted)" if job.interrupted else ""))
        typer.echo("interrupted: no verdicts written; the interrupted run is never a baseline")
        raise typer.Exit(outcome.exit_code)
    comparison = outcome.comparison
    typer.echo(verdict_table(comparison))
    written = _night_pages(outcome, store, list(outcome.notes))
    for failure in outcome.failures:
        typer.echo(failure.note)
    for job in outcome.jobs:
        for device in job.job.devices:
            if device.status != "ok":
                typer.echo(f"{device.name}: NOT MEASURED ({device.blame or 'unknown'}): {device.error}")
        typer.echo(f"run directory: {job.rundir.root}")
    for found in outcome.bisects:  # plan `bisect: true`: the culprit of each confirmed regression
        typer.echo(found.note)
    for path in written:
        typer.echo(f"report: {path}")
    if junit is not None:
        _junit(comparison, junit)
    _record_night(outcome, written[1] if written else None)
    if loaded.publish is not None:
        _publish(loaded.publish, store)
    raise typer.Exit(outcome.exit_code)


def _junit(comparison: Any, target: Path) -> None:
    """The night's verdicts as JUnit XML. A file that cannot be written is a warning: the verdicts stand."""
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.base.errors import EtfarmError
    from orchestrator.report.comparison_output import write_junit

    try:
        typer.echo(f"JUnit: {write_junit(comparison, target)}")
    except EtfarmError as exc:
        typer.echo(f"warning: JUnit file not written ({exc})", err=True)


def _record_night(outcome: Any, page: Path | None) -> None:
    """night.json beside each of the night's runs: its page, verdict counts and confirmations (what `publish` reads)."""
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.app.bisect_night import night_repo_head
    from orchestrator.base.errors import EtfarmError
    from orchestrator.results.night_marks import record_night

    counts: dict[str, int] = {}
    for pair in outcome.comparison.pairs:
        counts[pair.verdict.value] = counts.get(pair.verdict.value, 0) + 1
    try:
        record_night([j.rundir.root for j in outcome.jobs], outcome.night_id, page, counts, outcome.confirmations,
                     outcome.bisects, night_repo_head(outcome.plan))
    except (OSError, EtfarmError) as exc:  # the verdicts are decided and recorded: a run directory we cannot write
        typer.echo(f"warning: night.json not written beside the runs ({exc}); the dashboard shows them without "
                   "their night", err=True)


def _check_publish(plan: Any, store: Path | None) -> None:
    """The plan's `publish:` folder, before the night runs: new, empty or this store's site, and apart from the
    folders the night writes (its reports and runs would be files of the site's folder)."""
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.base.errors import ConfigError
    from orchestrator.report.dashboard.target import refusal
    from orchestrator.store import store_path

    site = plan.publish.resolve()
    for key, folder in (("report", plan.report), ("out", plan.out)):
        written = folder.resolve()
        if written == site or site in written.parents:
            raise ConfigError(plan.path, "publish", f"{plan.publish}: the night writes its {key} folder {folder} "
                                                    "there; publish the site into a folder of its own")
    refused = refusal(plan.publish, store_path(store))
    if refused is not None:
        raise ConfigError(plan.path, "publish", f"{plan.publish}: {refused}")


def _publish(out: Path, store: Path | None) -> None:
    """The plan's `publish: DIR`: the dashboard from the store. A site that cannot be written is a warning: the
    night's verdicts and exit code stand."""
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.base.errors import EtfarmError
    from orchestrator.report.dashboard.site import publish

    try:
        typer.echo(publish(out, store).describe())
    except EtfarmError as exc:
        typer.echo(f"warning: dashboard not published ({exc})", err=True)


def _night_pages(outcome: Any, store: Path | None, notes: list[str]) -> list[Path]:
    """The night's one page, HTML and Markdown (verdicts first, its jobs' reports after, the confirmation folded
    in), and its verdicts as JSON, in the plan's report directory. A page that cannot be written is a warning:
    the verdicts and the exit code stand."""
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.report.comparison_output import write_night

    comparison = outcome.comparison
    runs = [j.record for j in outcome.jobs]
    title = f"etfarm nightly {outcome.night_id}: {comparison.headline}"
    try:
        written = write_night(comparison, runs, outcome.plan.report, f"nightly-{outcome.night_id}", title,
                              store, outcome.confirmations, notes, {"bisects": [encode(b) for b in outcome.bisects]})
    except Exception as exc:  # noqa: BLE001 - the verdicts are decided and recorded; a page failure must not change them
        typer.echo(f"warning: nightly report not written ({type(exc).__name__}: {exc})", err=True)
        return []
    return [written[1], written[0]]  # the Markdown (what CI reads), then the HTML
