"""`etfarm run`: the main job. Parses the options; app/run.py does the rest (docs/how-to/run.md)."""

from __future__ import annotations

import typer

from orchestrator.cli.logs import log_to_stderr
from orchestrator.cli.options import (
    AbOption,
    Backend,
    BackendOption,
    CenterOption,
    ConfigOption,
    CooldownOption,
    DeviceDeadlineOption,
    DevicesOption,
    EnergyOption,
    EnergyPhasesOption,
    EnergySecondsOption,
    GenLenOption,
    IntermediateOutputsOption,
    IterationsOption,
    JsonOption,
    JunitOption,
    LockTimeoutOption,
    MaxRunsOption,
    MaxTempOption,
    ModelsOption,
    NamesOption,
    NoReportOption,
    NoStoreOption,
    NoWaitOption,
    NumericsOption,
    OnceOption,
    OpThresholdOption,
    OrderOption,
    OutOption,
    PromptLenOption,
    QuietOption,
    RecipeOption,
    ResumeOption,
    RunsOption,
    RunStoreOption,
    RunVerboseOption,
    SchedulerOption,
    SeedOption,
    ThreadsOption,
    ThresholdOption,
    TimeoutOption,
    TlsCaOption,
    TlsCertOption,
    TlsKeyOption,
    UntilConfidentOption,
    UntracedRunsOption,
    WarmupOption,
    recipes_joined,
)
from orchestrator.results.limits import UNTIL_CONFIDENT_MAX_RUNS
from orchestrator.verdicts.statistics import DEFAULT_CENTER


def register(app: typer.Typer) -> None:
    app.command("run")(run)


def run(  # one parameter per option; their help is in cli/options.py
    ctx: typer.Context,
    model: ModelsOption = None,
    devices: DevicesOption = "local",
    backend: BackendOption = Backend.xnnpack,
    recipe: RecipeOption = None,
    runs: RunsOption = 5,
    iterations: IterationsOption = 20,
    warmup: WarmupOption = 3,
    out: OutOption = None,
    config: ConfigOption = None,
    name: NamesOption = None,
    threads: ThreadsOption = "0",
    prompt_len: PromptLenOption = None,
    gen_len: GenLenOption = None,
    timeout: TimeoutOption = 600.0,
    no_wait: NoWaitOption = False,
    lock_timeout: LockTimeoutOption = None,
    untraced_runs: UntracedRunsOption = 1,
    cooldown: CooldownOption = 0.0,
    max_temp: MaxTempOption = None,
    order: OrderOption = "interleaved",
    seed: SeedOption = 0,
    intermediate_outputs: IntermediateOutputsOption = False,
    numerics: NumericsOption = False,
    energy: EnergyOption = False,
    energy_seconds: EnergySecondsOption = 10.0,
    energy_phases: EnergyPhasesOption = 3,
    quiet: QuietOption = False,
    ab: AbOption = None,
    threshold: ThresholdOption = 5.0,
    op_threshold: OpThresholdOption = 10.0,
    center: CenterOption = DEFAULT_CENTER,
    until_confident: UntilConfidentOption = False,
    once: OnceOption = False,
    junit: JunitOption = None,
    max_runs: MaxRunsOption = UNTIL_CONFIDENT_MAX_RUNS,
    store: RunStoreOption = None,
    no_store: NoStoreOption = False,
    verbose: RunVerboseOption = False,
    as_json: JsonOption = False,
    no_report: NoReportOption = False,
    scheduler: SchedulerOption = None,
    device_deadline: DeviceDeadlineOption = 600.0,
    tls_ca_file: TlsCaOption = None,
    tls_cert: TlsCertOption = None,
    tls_key: TlsKeyOption = None,
    resume: ResumeOption = None,
) -> None:
    """Export, build, stage and profile MODEL on DEVICES; write a run directory and print per-op latency.

    Ctrl-C or SIGTERM stops every runner (host and devices), keeps what finished (manifest status
    `interrupted`, exit 130); `--resume DIR` then completes the run."""
    # loaded when the command runs: cli/__init__ imports every command module to register it
    from orchestrator.app import Console, JobRequest, run_command

    if verbose:
        log_to_stderr()
    sources = {name: getattr(ctx.get_parameter_source(name), "name", "") for name in ctx.params}  # typer vendors click
    given = frozenset(n for n, value in ctx.params.items() if value is not None
                      and sources[n] in ("COMMANDLINE", "ENVIRONMENT"))
    params = {**ctx.params, "recipe": recipes_joined(ctx.params.get("recipe"))}
    request = JobRequest(**params, given=given, scheduler_from=sources.get("scheduler") or "DEFAULT")
    raise typer.Exit(run_command(request, Console(typer.echo, lambda text: typer.echo(text, err=True))))
