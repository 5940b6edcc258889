"""A/B in one job: two models' process runs interleaved A B B A on each device, then verdicts.

`run_ab` runs one job with both models in ABBA order (run/schedule.py), so drift and heat hit
both alike, and compares B against A per device, end to end and per op. With
`until_confident`, while some device's end-to-end verdict is `inconclusive` and its runs per
side are under `max_runs`, it runs another small job of `options.runs` ABBA rounds on those
devices only and pools the process runs of every job (the simple way to add runs: a job is
never reopened). Each extra job is a run directory beside the first, named `<first>-more<k>`.
A job stopped by Ctrl-C or SIGTERM ends the rounds: the verdicts stand on what finished, and the
table's legend names the sides as incomplete (likeness.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from device_agents import DeviceSpec
from orchestrator.artifacts.modelspec import ModelSpec
from orchestrator.errors import EXIT_OK, UsageError
from orchestrator.progress import Progress
from orchestrator.results.model import JobOptions
from orchestrator.run.job import JobResult, run_job
from orchestrator.run.schedule import RunOrder
from orchestrator.verdicts.compare import Comparison, PairVerdict, compare_sides, side_from_job
from orchestrator.verdicts.sides import pool
from orchestrator.verdicts.statistics import Verdict, VerdictSettings


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
           until_confident: bool = False, max_runs: int = 0) -> AbOutcome:
    a, b = ab_specs(a, b)
    options = replace(options, order=RunOrder.ABBA)
    jobs = [run_job(devices, [a, b], backend=backend, options=options, out=out, progress=progress,
                    config_file=config_file)]
    comparison = ab_comparison(jobs, [d.name for d in devices], a.name, b.name, settings)
    budget = max(max_runs, options.runs)
    while until_confident and not jobs[-1].interrupted:  # Ctrl-C stops the rounds, not just the job
        undecided = {p.device for p in comparison.pairs
                     if p.verdict is Verdict.INCONCLUSIVE and p.estimate is not None
                     and min(p.estimate.runs_a, p.estimate.runs_b) + options.runs <= budget}
        if not undecided:
            break
        more = [d for d in devices if d.name in undecided]
        root = jobs[0].rundir.root
        progress(f"inconclusive on {', '.join(sorted(undecided))}: {options.runs} more run(s) per side")
        jobs.append(run_job(more, [a, b], backend=backend, options=options,
                            out=root.parent / f"{root.name}-more{len(jobs)}", progress=progress, config_file=config_file))
        comparison = ab_comparison(jobs, [d.name for d in devices], a.name, b.name, settings)
    return AbOutcome(tuple(jobs), comparison)


def ab_comparison(jobs: Sequence[JobResult], devices: Sequence[str], a: str, b: str,
             settings: VerdictSettings) -> Comparison:
    """B against A per device, each side pooled over the jobs that ran it (run --ab, a night's confirmation)."""
    pairs: list[PairVerdict] = []
    for device in devices:
        held = [j for j in jobs if j.job.device(device) is not None]
        if not held:  # stopped before the device ran (Ctrl-C while the runner was built)
            pairs.append(PairVerdict(device, a, b, Verdict.NO_DATA, reason="not run (the job stopped first)"))
            continue
        side_a = pool(side_from_job(j.rundir.root, j.job, device, a) for j in held)
        side_b = pool(side_from_job(j.rundir.root, j.job, device, b) for j in held)
        pairs.append(compare_sides(side_a, side_b, settings))
    ids = "+".join(j.job.run_id for j in jobs)
    return Comparison(f"{a} ({ids})", f"{b} ({ids})", settings, tuple(pairs))
