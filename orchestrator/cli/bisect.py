"""`etfarm bisect`: which commit made the model slower. Parses the options; app/bisect.py does the rest
(docs/guide/bisect.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from orchestrator.cli.options import (
    Backend,
    BackendOption,
    CenterOption,
    ConfigOption,
    CooldownOption,
    DevicesOption,
    IterationsOption,
    JsonOption,
    MaxRunsOption,
    OpThresholdOption,
    QuietOption,
    RecipeOption,
    RunsOption,
    RunStoreOption,
    SeedOption,
    ThreadsOption,
    ThresholdOption,
    TimeoutOption,
    WarmupOption,
)
from orchestrator.results.limits import UNTIL_CONFIDENT_MAX_RUNS
from orchestrator.verdicts.statistics import DEFAULT_CENTER


def register(app: typer.Typer) -> None:
    app.command("bisect")(bisect)


def bisect(  # one parameter per option
    repo: Annotated[Path, typer.Option("--repo", help="The git repository (its checkout is never touched).")],
    good: Annotated[str, typer.Option("--good", help="A revision whose program is not slow (an ancestor of --bad).")],
    bad: Annotated[str, typer.Option("--bad", help="A revision whose program is slower.")],
    model: Annotated[str, typer.Option(
        "--model", "-m", help="PATH.py:FACTORY, PATH relative to the repository root, read at each commit.")],
    devices: DevicesOption = "local",
    backend: BackendOption = Backend.xnnpack,
    recipe: RecipeOption = None,
    runs: RunsOption = 5,
    iterations: IterationsOption = 20,
    warmup: WarmupOption = 3,
    timeout: TimeoutOption = 600.0,
    threads: ThreadsOption = "0",
    cooldown: CooldownOption = 0.0,
    seed: SeedOption = 0,
    threshold: ThresholdOption = 5.0,
    op_threshold: OpThresholdOption = 10.0,
    center: CenterOption = DEFAULT_CENTER,
    until_confident: Annotated[bool, typer.Option(
        "--until-confident/--once", help="While a step is inconclusive, run --runs more process runs per side "
                                         "(up to --max-runs); --once: one A/B job per step.")] = True,
    max_runs: MaxRunsOption = UNTIL_CONFIDENT_MAX_RUNS,
    budget: Annotated[int | None, typer.Option(
        "--budget", min=1, help="Measure at most this many commits; then say where the culprit lies (exit 3).")] = None,
    out: Annotated[Path | None, typer.Option(
        help="Folder of the bisect: each step's run directories, bisect.html, bisect.json "
             "(default ./etfarm-runs/bisect-<id>).")] = None,
    config: ConfigOption = None,
    store: RunStoreOption = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="Take the steps the store already holds (same programs, same setup) instead of "
                         "measuring them again.")] = False,
    as_json: JsonOption = False,
    quiet: QuietOption = False,
) -> None:
    """Find the first commit between --good and --bad whose program is slower than --good's beyond the threshold.

    Each step measures a commit's program against --good's, interleaved on the same device (`run --ab`),
    over the first-parent line; a program byte-identical to one measured is not measured again; a commit
    whose model does not export or run is skipped and named. Exit 0 a culprit named; 1 --bad is not slower
    than --good; 3 undecided (too noisy, every candidate skipped, --budget spent); 2 bad input."""
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.app.bisect import BisectRequest, bisect_command
    from orchestrator.app.console import Console
    from orchestrator.app.request import JobRequest

    measure = JobRequest(devices=devices, backend=str(backend.value), recipe=recipe, runs=runs, iterations=iterations,
                         warmup=warmup, timeout=timeout, threads=threads, cooldown=cooldown, seed=seed,
                         threshold=threshold, op_threshold=op_threshold, center=center, max_runs=max_runs, out=out,
                         config=config, store=store)
    request = BisectRequest(repo, good, bad, model, measure, until_confident, resume, budget, as_json, quiet)
    raise typer.Exit(bisect_command(request, Console(typer.echo, lambda text: typer.echo(text, err=True))))
