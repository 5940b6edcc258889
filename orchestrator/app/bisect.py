"""`etfarm bisect`: which commit of GOOD..BAD made the model's program slower (docs/guide/bisect.md).

The workflow: the range and its checks (bisect_range.py), a worktree per commit under a temporary directory,
GOOD's program exported once, then the search (bisect_search.py) probing commits (bisect_probe.py: each an
A/B job against GOOD, or a program already measured), the culprit measured against its parent when that
program is not GOOD's, and the output (bisect_output.py): the table, DIR/bisect.html, DIR/bisect.json,
`--json`. Ctrl-C stops the job that runs (what finished is recorded) and removes every worktree.

Exit codes: 0 a culprit named; 1 BAD is not slower than GOOD; 3 undecided (too noisy, every candidate
skipped, the budget ran out); 2 bad input, one line; 130 interrupted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from device_agents import DeviceSpec
from orchestrator.app.bisect_output import BISECT_JSON, BISECT_PAGE, BisectResult, steps_table, write_page
from orchestrator.app.bisect_probe import Prober, Setup
from orchestrator.app.bisect_range import CommitRange, Worktrees, commit_range
from orchestrator.app.bisect_search import Outcome, Reason, Step, search
from orchestrator.app.console import Console
from orchestrator.app.request import JobRequest
from orchestrator.base.cache import write_json_atomic
from orchestrator.base.codec import encode
from orchestrator.base.errors import EXIT_INTERRUPTED, EtfarmError, UsageError, one_line
from orchestrator.base.progress import Progress
from orchestrator.config import load_inventory
from orchestrator.results.limits import UNTIL_CONFIDENT_MAX_RUNS
from orchestrator.results.model import JobOptions
from orchestrator.run.rundir import new_run_id
from orchestrator.verdicts.statistics import VerdictSettings, check_center


@dataclass(frozen=True)
class BisectJob:
    """A bisect to run: where, what, with which devices and options (already checked)."""

    repo: Path
    good: str
    bad: str
    model: str  # PATH.py:FACTORY, PATH relative to the repository root
    devices: tuple[DeviceSpec, ...]
    backend: str
    options: JobOptions
    settings: VerdictSettings
    until_confident: bool = True
    max_runs: int = UNTIL_CONFIDENT_MAX_RUNS
    out: Path | None = None
    store: Path | None = None
    config_file: Path | None = None
    resume: bool = False
    budget: int | None = None  # at most this many commits measured

    def split_model(self) -> tuple[str, str]:
        path, sep, factory = self.model.rpartition(":")
        if not sep or not path.endswith(".py") or not factory.isidentifier():
            raise UsageError(f"--model {self.model!r}: expected PATH.py:FACTORY, PATH relative to the repository root")
        return path, factory


def bisect(job: BisectJob, progress: Progress, console: Console) -> BisectResult:
    """Run the bisect; its folder holds each step's run directories, bisect.html and bisect.json."""
    path, factory = job.split_model()
    found = commit_range(job.repo, job.good, job.bad, path)
    out = (job.out or Path("etfarm-runs") / f"bisect-{new_run_id()}").resolve()
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: not a directory")
    if (out / BISECT_JSON).exists() and not job.resume:
        raise UsageError(f"--out {out}: already holds a bisect; choose a new directory (or add --resume)")
    out.mkdir(parents=True, exist_ok=True)
    setup = Setup(path, factory, job.devices, job.backend, job.options, job.settings, job.until_confident,
                  job.max_runs, out, job.store, job.config_file, job.resume)
    progress(f"bisect {found.good.short}..{found.bad.short}: {len(found.commits)} commit(s) on the first-parent line "
             f"-> {out}")
    with Worktrees(found.root) as worktrees:
        prober = Prober(setup, worktrees, progress, console)
        try:
            prober.good = prober.export(found.good)
        except EtfarmError as exc:
            raise UsageError(f"--good {found.good.short}: {path}:{factory} does not export there: "
                             f"{one_line(str(exc))}") from None
        result = search(len(found.commits), lambda i: prober.probe(found.commits[i], i), budget=job.budget,
                        measured=lambda: len(prober.measured))
        parent = _against_parent(prober, found, result.culprit) if result.culprit is not None else None
    outcome = BisectResult(found, job.model, result, tuple(prober.measured), parent, job.budget, out)
    write_json_atomic(out / BISECT_JSON, encode(outcome.document()))
    write_page(outcome, out)
    return outcome


def _against_parent(prober: Prober, found: CommitRange, culprit: int) -> Step | None:
    """The culprit against its parent: None when the parent's program is GOOD's (the numbers against GOOD are
    those), else one more A/B job (not counted among the search's measured commits)."""
    if culprit == 0 or prober.good is None:
        return None
    parent = prober.export(found.commits[culprit - 1])
    if parent.pte == prober.good.pte:
        return None
    program = prober.export(found.commits[culprit])
    return prober.measure(parent, program, f"parent-{found.commits[culprit].short}", against_good=False)


def exit_code(result: BisectResult) -> int:
    if result.search.reason is Reason.INTERRUPTED:
        return EXIT_INTERRUPTED
    return result.search.exit_code


def report(result: BisectResult, console: Console, as_json: bool) -> None:
    """The table and the answer on stdout (or the JSON document), where the page is on stderr."""
    out = result.folder
    if as_json:
        console.out(json.dumps({**encode(result.document()), "page": str(out / BISECT_PAGE)}, indent=2))
    else:
        console.out(steps_table(result))
        console.out(result.sentence)
        skipped = [s for s in result.search.steps if s.outcome is Outcome.SKIPPED]
        for step in skipped:
            console.out(f"skipped {step.sha[:12]}: {step.reason}")
    console.err(f"bisect page: {out / BISECT_PAGE}")



@dataclass(frozen=True)
class BisectRequest:
    """`etfarm bisect`'s options as parsed; the measurement options are `etfarm run`'s (JobRequest checks them)."""

    repo: Path
    good: str
    bad: str
    model: str
    measure: JobRequest  # devices, backend, recipe, runs, iterations, ..., threshold, center, max_runs, out, store
    until_confident: bool = True
    resume: bool = False
    budget: int | None = None
    as_json: bool = False
    quiet: bool = False


def bisect_command(request: BisectRequest, console: Console) -> int:
    """`etfarm bisect`: check, bisect, print; returns the exit code."""
    m = request.measure
    options = m.run_options()
    if "," in f"{m.threads}{m.recipe or ''}":
        raise UsageError("bisect measures one configuration: give --threads and --recipe one value each")
    check_center(m.center)
    inventory = load_inventory(m.config)
    job = BisectJob(request.repo, request.good, request.bad, request.model, tuple(inventory.select(m.devices)),
                    str(m.backend), options,
                    VerdictSettings(threshold=m.threshold / 100.0, op_threshold=m.op_threshold / 100.0, center=m.center),
                    request.until_confident, m.max_runs, m.out, m.store, inventory.path, request.resume, request.budget)
    result = bisect(job, Progress(quiet=request.quiet), console)
    report(result, console, request.as_json)
    return exit_code(result)
