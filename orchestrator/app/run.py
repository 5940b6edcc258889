"""`etfarm run`: the options checked, the job run where it belongs, its result handed on in memory.

Four ways to run (README "etfarm run"): `--resume DIR` finishes a recorded job (on its farm when
it ran on one); `--ab SPEC_A SPEC_B` runs an A/B job and prints verdicts; `--scheduler` runs on a
Dask farm; otherwise the devices of this host's inventory. Then the job's typed result (`JobResult`:
the results model, the statistics and the samples) goes to the results store, the numerics, the
report and the printed summary, with no file of the run directory read back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.app.console import Console
from orchestrator.errors import UsageError
from orchestrator.progress import Progress
from orchestrator.run.results import RunOptions
from orchestrator.run.schedule import RunOrder
from orchestrator.verdicts.statistics import DEFAULT_CENTER, check_center

MAX_SWEEP_VALUE = 1 << 16  # threads, prompt or generated tokens: beyond it a value is a typo

if TYPE_CHECKING:
    from orchestrator.farm.client import FarmOptions
    from orchestrator.numerics.model import NumericsReport
    from orchestrator.run.job import JobResult


@dataclass(frozen=True)
class JobRequest:
    """`etfarm run`'s options as parsed (names as the command line's), and where they came from."""

    model: list[str] | None = None
    devices: str = "local"
    backend: str = "xnnpack"
    runs: int = 5
    iterations: int = 20
    warmup: int = 3
    out: Path | None = None
    config: Path | None = None
    name: list[str] | None = None
    threads: int | str = 0  # "1,2,4": a sweep
    prompt_len: str | None = None  # LLMs: "32" or "32,128"
    gen_len: str | None = None
    timeout: float = 600.0
    no_wait: bool = False
    lock_timeout: float | None = None
    untraced_runs: int = 1
    cooldown: float = 0.0
    max_temp: float | None = None
    order: str = "interleaved"
    seed: int = 0
    intermediate_outputs: bool = False
    numerics: bool = False
    quiet: bool = False
    ab: tuple[str, str] | None = None
    threshold: float = 5.0
    op_threshold: float = 10.0
    center: str = DEFAULT_CENTER
    until_confident: bool = False
    max_runs: int = 40
    store: Path | None = None
    no_store: bool = False
    verbose: bool = False
    as_json: bool = False
    no_report: bool = False
    scheduler: str | None = None
    device_deadline: float = 600.0
    tls_ca_file: Path | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None
    resume: Path | None = None
    given: frozenset[str] = frozenset()  # options given on the command line or by the environment
    scheduler_from: str = "DEFAULT"  # where --scheduler came from: COMMANDLINE, ENVIRONMENT or DEFAULT

    def run_options(self) -> RunOptions:
        choices = (RunOrder.INTERLEAVED.value, RunOrder.SEQUENTIAL.value)
        if self.order not in choices:
            raise UsageError(f"--order: expected {' or '.join(choices)}, got {self.order!r}")
        threads = int_list("--threads", self.threads, least=0)
        try:
            return RunOptions(runs=self.runs, iterations=self.iterations, warmup=self.warmup,
                              run_timeout_s=self.timeout, wait_for_lock=not self.no_wait,
                              lock_timeout_s=self.lock_timeout, intermediate_outputs=self.intermediate_outputs or self.numerics,
                              debug_buffer_size=0, numerics=self.numerics,
                              cpu_threads=threads[0] if len(threads) == 1 else 0,
                              untraced_runs=self.untraced_runs, cooldown_s=self.cooldown, max_temp_c=self.max_temp,
                              order=RunOrder(self.order), seed=self.seed, thread_counts=threads if len(threads) > 1 else (),
                              prompt_lens=int_list("--prompt-len", self.prompt_len, least=1),
                              gen_lens=int_list("--gen-len", self.gen_len, least=1))
        except ValueError as exc:  # out of bounds (run/limits.py): name the option, not the field
            from orchestrator.app.resume import option_of

            raise UsageError(option_of(exc)) from None

    def farm(self, scheduler: str) -> FarmOptions:
        """The farm's options (imports dask's side only when a job is distributed)."""
        from orchestrator.farm.client import FarmOptions
        from orchestrator.farm.security import make_security

        return FarmOptions(scheduler=scheduler, security=make_security(self.tls_ca_file, self.tls_cert, self.tls_key),
                            device_deadline_s=self.device_deadline)

    def check(self) -> None:
        """The combinations of options that make no sense: usage errors before anything runs."""
        if self.ab is not None:
            if self.model:
                raise UsageError("--ab SPEC_A SPEC_B replaces --model; give one or the other")
            check_center(self.center)
            if "," in f"{self.threads}{self.prompt_len or ''}{self.gen_len or ''}":
                raise UsageError("--ab compares two models at one point: give --threads, --prompt-len and --gen-len "
                                 "one value each")
            if self.scheduler or self.resume is not None:
                from_env = self.scheduler_from == "ENVIRONMENT"
                raise UsageError("--ab runs a new job on one host; drop --scheduler and --resume"
                                 + (" (ETFARM_SCHEDULER is set: unset it for this command)" if from_env else ""))
        elif self.until_confident:
            raise UsageError("--until-confident applies to --ab")
        elif not self.model and self.resume is None:
            raise UsageError("--model is required (or --resume DIR to finish a recorded run, or --ab SPEC_A SPEC_B)")


def int_list(flag: str, value: int | str | None, *, least: int, most: int = MAX_SWEEP_VALUE) -> tuple[int, ...]:
    """`--threads 2` or `--threads 1,2,4`: distinct integers in [least, most], in the order given."""
    if value is None:
        return ()
    words = [w.strip() for w in str(value).split(",")]
    try:
        numbers = [int(w) for w in words]
    except ValueError:
        raise UsageError(f"{flag}: {value!r} is not an integer or a comma-separated list of integers") from None
    bad = [n for n in numbers if not least <= n <= most]
    if bad or len(set(numbers)) != len(numbers):
        raise UsageError(f"{flag}: {value!r}: each value must lie in [{least}, {most}], each once")
    return tuple(numbers)


def run_command(request: JobRequest, console: Console) -> int:
    """Run `etfarm run` as asked; returns its exit code (README "etfarm run")."""
    options = request.run_options()
    request.check()
    if not request.no_store:
        from orchestrator.app.checks import check_store_place

        check_store_place(request.store)
    progress = Progress(quiet=request.quiet)
    if request.ab is not None:
        from orchestrator.app.ab import run_ab_job

        return run_ab_job(request, options, progress, console)
    if request.resume is not None:
        from orchestrator.app.resume import resume_recorded_job

        result = resume_recorded_job(request, options, progress)
    else:
        result = _start_job(request, options, progress)
    return finish(result, request, console)


def _start_job(request: JobRequest, options: RunOptions, progress: Progress) -> JobResult:
    from orchestrator.artifacts import parse_model_specs

    specs = parse_model_specs(request.model or [], request.name or ())
    if request.scheduler:  # many hosts: the devices are the workers' (README "Many hosts (Dask)")
        from orchestrator.farm.client import run_distributed

        names = [n.strip() for n in request.devices.split(",") if n.strip()]
        if not names:
            raise UsageError("no devices given; use --devices NAME[,NAME...]")
        return run_distributed(list(dict.fromkeys(names)), specs, backend=str(request.backend), options=options,
                               out=request.out, progress=progress, farm=request.farm(request.scheduler))
    from orchestrator.config import load_inventory
    from orchestrator.run import run_job

    inventory = load_inventory(request.config)
    selected = inventory.select(request.devices)
    return run_job(selected, specs, backend=str(request.backend), options=options, out=request.out, progress=progress,
                   config_file=inventory.path)


def finish(result: JobResult, request: JobRequest, console: Console) -> int:
    """The job's result to the store, the numerics, the report, then the summary (or --json); the exit code."""
    root = result.rundir.root
    if not request.no_store:
        from orchestrator.app.record import record_job

        record_job(result, request.store, console, quiet=request.quiet)
    numerics = None
    if result.job.config.options.numerics:
        from orchestrator.numerics import analyze_job, write_files

        numerics = analyze_job(result.recorded, root)
        write_files(numerics, root)
    report = None
    if not request.no_report:
        from orchestrator.report.output import write_run_report

        report = write_run_report(root, warn=console.err, store=request.store, numerics=numerics,  # analysed once
                                  job=result.recorded, rows=result.rows)
    if request.as_json:
        from orchestrator.report import job_view, json_text

        console.out(json_text(job_view(result.job, root, result.exit_code, report)))
    else:
        print_summary(result, report, numerics, console)
    return result.exit_code


def print_summary(result: JobResult, report: Path | None, numerics: NumericsReport | None, console: Console) -> None:
    from orchestrator.errors import one_line
    from orchestrator.report import wall_clock_lines
    from orchestrator.report.llm_text import llm_lines, phase_tables
    from orchestrator.report.summary import summary

    console.out(summary(result.rows))
    console.out("")
    phases = phase_tables(result.rows)  # LLMs: their ops in prefill and in decode
    if phases:
        console.out(phases + "\n")
    for line in [*wall_clock_lines(result.job), *llm_lines(result.job)]:
        console.out(line)
    for device in result.job.devices:
        verdicts = ", ".join(f"{m.name} {m.verification.status if m.verification else 'skipped'}"
                             + ("" if m.status == "ok" else f" ({m.status}: {len(m.runs)} run(s) kept)")
                             for m in device.models)
        if device.status == "ok":
            console.out(f"{device.name}: ok (verification: {verdicts})")
        elif device.status in ("wrong-results", "interrupted"):
            console.out(f"{device.name}: {device.status.upper()}: {one_line(device.error or '')}"
                        + (f" (verification: {verdicts})" if verdicts else ""))
        else:
            console.out(f"{device.name}: FAILED: {one_line(device.error or '')}"
                        + (f" (kept: {verdicts})" if verdicts else ""))
    if numerics is not None:
        from orchestrator.numerics import render_text

        console.out(render_text(numerics))
    if report is not None:
        console.out(f"report: {report}")
    console.out(f"run directory: {result.rundir.root}")
    if result.interrupted:
        console.out(f"interrupted: resume with `etfarm run --resume {result.rundir.root}`")
