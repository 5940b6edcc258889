"""`etfarm run`'s options: `JobRequest` as the command line gave them, their checks, and their names.

Apart from run.py, which dispatches a request (resume, A/B, a farm, this host), so that resume.py and
ab.py, which take a request, are imported by run.py and import nothing of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from orchestrator.artifacts.recipes import check_recipe_backend, parse_recipes, recipe_words
from orchestrator.base.codec import FieldError
from orchestrator.base.errors import UsageError
from orchestrator.report.destination import check_target
from orchestrator.results.limits import UNTIL_CONFIDENT_MAX_RUNS
from orchestrator.results.model import JobOptions
from orchestrator.run.schedule import RunOrder
from orchestrator.verdicts.statistics import DEFAULT_CENTER, check_center

if TYPE_CHECKING:
    from orchestrator.farm.client import FarmOptions

MAX_SWEEP_VALUE = 1 << 16  # threads, prompt or generated tokens: beyond it a value is a typo

# JobOptions field -> (the option, the command line's parameter)
OPTIONS = {"runs": ("--runs", "runs"), "iterations": ("--iterations", "iterations"), "warmup": ("--warmup", "warmup"),
            "run_timeout_s": ("--timeout", "timeout"), "cpu_threads": ("--threads", "threads"),
            "untraced_runs": ("--untraced-runs", "untraced_runs"), "cooldown_s": ("--cooldown", "cooldown"),
            "max_temp_c": ("--max-temp", "max_temp"), "order": ("--order", "order"), "seed": ("--seed", "seed"),
            "intermediate_outputs": ("--intermediate-outputs", "intermediate_outputs"),
            "numerics": ("--numerics", "numerics"), "wait_for_lock": ("--no-wait", "no_wait"),
            "lock_timeout_s": ("--lock-timeout", "lock_timeout"), "thread_counts": ("--threads", "threads"),
            "prompt_lens": ("--prompt-len", "prompt_len"), "gen_lens": ("--gen-len", "gen_len"),
            "recipes": ("--recipe", "recipe"), "energy": ("--energy", "energy"),
            "energy_s": ("--energy-seconds", "energy_seconds"), "energy_phases": ("--energy-phases", "energy_phases")}



@dataclass(frozen=True)
class JobRequest:
    """`etfarm run`'s options as parsed (names as the command line's), and where they came from."""

    model: list[str] | None = None
    devices: str = "local"
    backend: str = "xnnpack"
    recipe: str | None = None  # "fp32,int8-static": export recipes, a sweep
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
    energy: bool = False
    energy_seconds: float = 10.0
    energy_phases: int = 3
    quiet: bool = False
    ab: tuple[str, str] | None = None
    threshold: float = 5.0
    op_threshold: float = 10.0
    center: str = DEFAULT_CENTER
    until_confident: bool = False  # --ab pools further jobs while inconclusive unless --once (the flag says it again)
    once: bool = False
    junit: Path | None = None  # --ab: the verdicts as JUnit XML too
    max_runs: int = UNTIL_CONFIDENT_MAX_RUNS
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

    def run_options(self) -> JobOptions:
        choices = (RunOrder.INTERLEAVED.value, RunOrder.SEQUENTIAL.value)
        if self.order not in choices:
            raise UsageError(f"--order: expected {' or '.join(choices)}, got {self.order!r}")
        threads = int_list("--threads", self.threads, least=0)
        recipes = parse_recipes(self.recipe)
        check_recipe_backend(str(self.backend), recipes)
        try:
            return JobOptions(runs=self.runs, iterations=self.iterations, warmup=self.warmup,
                              run_timeout_s=self.timeout, wait_for_lock=not self.no_wait,
                              lock_timeout_s=self.lock_timeout, intermediate_outputs=self.intermediate_outputs or self.numerics,
                              debug_buffer_size=0, numerics=self.numerics,
                              cpu_threads=threads[0] if len(threads) == 1 else 0,
                              untraced_runs=self.untraced_runs, cooldown_s=self.cooldown, max_temp_c=self.max_temp,
                              order=RunOrder(self.order), seed=self.seed, thread_counts=threads if len(threads) > 1 else (),
                              prompt_lens=int_list("--prompt-len", self.prompt_len, least=1),
                              gen_lens=int_list("--gen-len", self.gen_len, least=1), recipes=recipe_words(recipes),
                              energy=self.energy, energy_s=self.energy_seconds, energy_phases=self.energy_phases)
        except ValueError as exc:  # out of bounds (results/limits.py): name the option, not the field
            raise UsageError(option_of(exc)) from None

    def farm(self, scheduler: str) -> FarmOptions:
        """The farm's options (imports dask's side only when a job is distributed)."""
        # function level: a job on this host never imports the farm's package (tests/integration/test_farm.py)
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
            if self.until_confident and self.once:
                raise UsageError("--until-confident and --once contradict each other: give one (pooling is the default)")
            if "," in f"{self.threads}{self.prompt_len or ''}{self.gen_len or ''}{self.recipe or ''}":
                raise UsageError("--ab compares two models at one point: give --threads, --prompt-len, --gen-len "
                                 "and --recipe one value each")
            if self.scheduler or self.resume is not None:
                from_env = self.scheduler_from == "ENVIRONMENT"
                raise UsageError("--ab runs a new job on one host; drop --scheduler and --resume"
                                 + (" (ETFARM_SCHEDULER is set: unset it for this command)" if from_env else ""))
            if self.junit is not None:
                check_target(self.junit, "--junit")
        elif self.until_confident or self.once or self.junit is not None:
            flag = "--until-confident" if self.until_confident else "--once" if self.once else "--junit"
            raise UsageError(f"{flag} applies to --ab")
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


def option_of(problem: ValueError) -> str:
    """A JobOptions problem (`max_temp_c: nan is outside ...`) said with the option's name (`--max-temp: ...`)."""
    if isinstance(problem, FieldError) and problem.path and problem.path[0] in OPTIONS:
        return f"{OPTIONS[problem.path[0]][0]}: {problem.problem}"
    return str(problem)
