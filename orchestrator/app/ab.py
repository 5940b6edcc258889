"""`etfarm run --ab SPEC_A SPEC_B`: one A/B job (ABBA order), B's verdict against A per device and op.

`run_ab` runs one job with both models in ABBA order (run/schedule.py), so drift and heat hit
both alike, and compares B against A per device, end to end and per op. With
`until_confident`, while some device's end-to-end verdict is `inconclusive` and its runs per
side are under `max_runs`, it runs another small job of `options.runs` ABBA rounds on those
devices only and pools the process runs of every job (the simple way to add runs: a job is
never reopened); the jobs take turns to start with A or with B (`starting_side`). Each extra job is a run
directory beside the first, named `<first>-more<k>`.
A job stopped by Ctrl-C or SIGTERM ends the rounds: the verdicts stand on what finished, and the
table's legend names the sides as incomplete (likeness.py). `ab_comparison` is also a night's
interleaved confirmation's verdict (confirm_ab.py).

`run_ab_job` is the command: the jobs (the first, and with --until-confident the further ones) are recorded in
the results store from memory, as `etfarm run` records its job; then the A/B page (the page `compare --html`
writes: verdicts first, every op) goes into the first job's directory as report-ab.html.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from device_agents import DeviceSpec
from orchestrator.app.baseline import device_states_finder, store_if_readable
from orchestrator.app.console import Console
from orchestrator.app.record import record_job
from orchestrator.app.request import JobRequest
from orchestrator.artifacts.modelspec import ModelSpec, parse_model_spec
from orchestrator.base.codec import encode
from orchestrator.base.errors import EXIT_OK, UsageError
from orchestrator.base.progress import Progress
from orchestrator.config import load_inventory
from orchestrator.report.comparison_output import write_ab_page, write_junit
from orchestrator.report.destination import AB_PAGE
from orchestrator.report.terminal.verdicts import verdict_table
from orchestrator.results.model import JobOptions
from orchestrator.results.record import RunRecord
from orchestrator.run.engine.job import JobResult, run_job
from orchestrator.run.schedule import RunOrder
from orchestrator.verdicts.compare import Comparison, PairVerdict, StatesFinder, compare_sides, side_from_job
from orchestrator.verdicts.confirmation import must_show_again
from orchestrator.verdicts.sides import pool
from orchestrator.verdicts.statistics import Verdict, VerdictSettings

SideT = TypeVar("SideT")  # a model spec, or anything naming one side (benchmarks replay recorded sides)


@dataclass(frozen=True)
class AbOutcome:
    jobs: tuple[JobResult, ...]
    comparison: Comparison

    @property
    def exit_code(self) -> int:
        """1 when B regressed (or its outputs are wrong) or a device failed in the first job; else 0."""
        return max(self.comparison.exit_code, self.jobs[0].exit_code, EXIT_OK)


def ab_specs(a: ModelSpec, b: ModelSpec) -> tuple[ModelSpec, ModelSpec]:
    """The two specs with distinct names (`<name>-a`, `<name>-b` when both files share a name)."""
    if a.text == b.text and a.name == b.name:
        raise UsageError(f"--ab: A and B are the same spec {a.text!r}; give two different models")
    if a.name == b.name:
        return replace(a, name=f"{a.name}-a"), replace(b, name=f"{b.name}-b")
    return a, b


def run_ab(devices: Sequence[DeviceSpec], a: ModelSpec, b: ModelSpec, *, backend: str, options: JobOptions,
           out: Path | None, progress: Progress, settings: VerdictSettings, config_file: Path | None = None,
           until_confident: bool = False, max_runs: int = 0, states: StatesFinder | None = None) -> AbOutcome:
    a, b = ab_specs(a, b)
    options = replace(options, order=RunOrder.ABBA)
    jobs = [run_job(devices, starting_side(a, b, 0), backend=backend, options=options, out=out, progress=progress,
                    config_file=config_file)]
    comparison = ab_comparison(jobs, [d.name for d in devices], a.name, b.name, settings)

    def more(names: Sequence[str], k: int) -> JobResult:
        root = jobs[0].rundir.root
        return run_job([d for d in devices if d.name in names], starting_side(a, b, k), backend=backend,
                       options=options, out=root.parent / f"{root.name}-more{k}", progress=progress,
                       config_file=config_file)

    if until_confident:
        comparison = pool_until_confident(jobs, comparison, settings, max(max_runs, options.runs), options.runs, more,
                                          progress, states)
    return AbOutcome(tuple(jobs), comparison)


def pool_until_confident(jobs: list[JobResult], comparison: Comparison, settings: VerdictSettings, budget: int,
                         runs: int, more: Callable[[Sequence[str], int], JobResult], progress: Progress,
                         states: StatesFinder | None = None) -> Comparison:
    """While some device's end-to-end verdict is inconclusive and another `runs` per side stay within `budget`, one
    more A/B job on those devices (`more(devices, k)`, k its index among `jobs`; appended to `jobs`) and the sides
    pooled over every job. Ctrl-C stops the rounds, not just the job.

    The budget counts the runs the jobs made, `runs` a side each, not the runs the estimate kept: a run none of whose
    executions was clean is left out of the estimate but took as long, and counting kept runs let a busy host's
    night pool a third job where its budget allowed two.

    `states` (a night's confirmation; run --ab with a store): a `regressed` or `improved` of one job on a device whose
    stored jobs have shown speed states, within their span, is pooled once more: it must show again. Live on the
    speed-state VM, one interleaved A/A job of the 40-layer MLP read `regressed 1.41x [1.37, 1.45]` and the night
    failed: the sides of one job can land in different states (benchmarks/README.md, "A night's confirmation pools up
    to 80 runs a side")."""
    devices = [p.device for p in comparison.pairs]
    a, b = comparison.pairs[0].model_a, comparison.pairs[0].model_b

    def jobs_on(device: str) -> int:
        return sum(1 for job in jobs if job.job.device(device) is not None)

    def doubted(p: PairVerdict) -> bool:
        if p.estimate is None:
            return False
        if p.verdict is Verdict.INCONCLUSIVE:
            return True
        return states is not None and must_show_again(p, jobs_on(p.device), settings.threshold,
                                                      states(p.device, p.model_b))

    while not jobs[-1].interrupted:
        undecided = {p.device for p in comparison.pairs if doubted(p) and runs * (jobs_on(p.device) + 1) <= budget}
        if not undecided:
            break
        unsure = {p.device for p in comparison.pairs if p.verdict is Verdict.INCONCLUSIVE} & undecided
        why = "inconclusive" if unsure else "a change within the speed states seen, to show again"
        progress(f"{why} on {', '.join(sorted(undecided))}: {runs} more run(s) per side")
        jobs.append(more(sorted(undecided), len(jobs)))
        comparison = ab_comparison(jobs, devices, a, b, settings)
    return comparison


def starting_side(a: SideT, b: SideT, job: int) -> list[SideT]:
    """The models of the `job`-th job (0: the first) in their ABBA order: A B B A ... in even jobs, B A A B ... in odd
    ones. ABBA cancels a linear drift within a job, but not what happens at a fixed time after a job starts (a
    phone throttling, a neighbour reaching full speed): the side that runs first always gets the first runs. Pooled
    jobs that take turns to start cancel that too (the noise corpus's `quota` jobs: +2.2 % for the second side in
    3 of 4 jobs)."""
    return [a, b] if job % 2 == 0 else [b, a]


def ab_comparison(jobs: Sequence[JobResult], devices: Sequence[str], a: str, b: str,
             settings: VerdictSettings) -> Comparison:
    """B against A per device, each side pooled over the jobs that ran it (run --ab, a night's confirmation)."""
    pairs: list[PairVerdict] = []
    for device in devices:
        held = [j for j in jobs if j.job.device(device) is not None]
        if not held:  # stopped before the device ran (Ctrl-C while the runner was built)
            pairs.append(PairVerdict(device, a, b, Verdict.NO_DATA, reason="not run (the job stopped first)"))
            continue
        runs = [RunRecord(j.rundir.root, j.job) for j in held]
        side_a = pool(side_from_job(run, device, a) for run in runs)
        side_b = pool(side_from_job(run, device, b) for run in runs)
        pairs.append(compare_sides(side_a, side_b, settings))
    ids = "+".join(j.job.run_id for j in jobs)
    return Comparison(f"{a} ({ids})", f"{b} ({ids})", settings, tuple(pairs))


def run_ab_job(request: JobRequest, options: JobOptions, progress: Progress, console: Console) -> int:
    """Run, print the verdict table (--json: the verdicts as `compare --json` prints them, alone on stdout) and each
    job's directory, record the jobs; returns the exit code."""
    assert request.ab is not None
    inventory = load_inventory(request.config)
    devices = inventory.select(request.devices)
    a, b = ab_specs(*(parse_model_spec(text) for text in request.ab))  # the names the store keeps them by
    settings = VerdictSettings(threshold=request.threshold / 100.0, op_threshold=request.op_threshold / 100.0,
                               center=request.center)
    with contextlib.ExitStack() as stack:  # the store read for the speed states its jobs of A and B showed
        stored = None if request.no_store else store_if_readable(request.store, stack)
        states = device_states_finder(stored, a.name, b.name) if stored is not None else None
        outcome = run_ab(list(devices), a, b, backend=str(request.backend), options=options, out=request.out,
                         progress=progress, settings=settings, config_file=inventory.path,
                         until_confident=not request.once, max_runs=request.max_runs, states=states)  # pooled unless --once
    say = console.err if request.as_json else console.out  # under --json stdout is one JSON document
    console.out(json.dumps(encode(outcome.comparison), indent=2) if request.as_json
                else verdict_table(outcome.comparison))
    for job in outcome.jobs:
        for device in job.job.devices:
            if device.status != "ok":
                say(f"{device.name}: FAILED: {device.error}")
        say(f"run directory: {job.rundir.root}")
        if not request.no_store:
            record_job(job, request.store, console)
    # after recording: a page that cannot be written loses nothing measured
    page = write_ab_page(outcome.comparison, outcome.jobs[0].rundir.root / AB_PAGE, request.store,
                         runs=[RunRecord(j.rundir.root, j.job) for j in outcome.jobs])
    say(f"A/B page: {page}")
    if request.junit is not None:
        say(f"JUnit: {write_junit(outcome.comparison, request.junit)}")
    return outcome.exit_code
