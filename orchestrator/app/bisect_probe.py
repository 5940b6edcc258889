"""One bisect step: a commit's program measured against GOOD's, or the measurement it need not repeat.

A probe checks the commit out (bisect_range.Worktrees), exports the model file there (the export cache:
an unchanged source is not exported again) and hashes the .pte. A program byte-identical to GOOD's is
not slower, without a run; one identical to a program measured earlier in this bisect takes that step's
outcome; with --resume, one the store holds for (GOOD's program, this program, this setup) takes the
stored step. Anything else is an A/B job through `run --ab`'s machinery (app/ab.run_ab: GOOD and
the candidate interleaved ABBA on each device, with `until_confident` more rounds while inconclusive),
recorded in the store with its A/B page. A commit whose model is missing, does not export, or whose
job measured nothing is skipped, with the reason.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from device_agents import DeviceSpec
from orchestrator.app.ab import run_ab
from orchestrator.app.bisect_range import Commit, Worktrees, forget_modules
from orchestrator.app.bisect_search import Outcome, Step, Stop
from orchestrator.app.console import Console
from orchestrator.app.record import record_job
from orchestrator.artifacts.modelspec import ModelSpec, parse_model_spec
from orchestrator.base.cache import sha256_file
from orchestrator.base.codec import decode, encode
from orchestrator.base.errors import EtfarmError, one_line
from orchestrator.base.progress import Progress
from orchestrator.report.comparison_output import write_ab_page
from orchestrator.report.destination import AB_PAGE
from orchestrator.results.model import JobOptions
from orchestrator.results.record import RunRecord
from orchestrator.run.engine.sweep import export_configurations
from orchestrator.store import open_store
from orchestrator.verdicts.compare import Comparison
from orchestrator.verdicts.statistics import Verdict, VerdictSettings


@dataclass(frozen=True)
class Setup:
    """What every step is measured with."""

    model_path: str  # relative to the repository root
    factory: str
    devices: tuple[DeviceSpec, ...]
    backend: str
    options: JobOptions
    settings: VerdictSettings
    until_confident: bool
    max_runs: int
    out: Path  # the bisect's folder: each measured step's job is a run directory under it
    store: Path | None
    config_file: Path | None
    resume: bool

    @property
    def key(self) -> str:
        """The setup as the store keys steps by: whatever changes a verdict (not where files go)."""
        o, s = self.options, self.settings
        return repr((sorted(d.name for d in self.devices), self.backend, o.runs, o.iterations, o.warmup, o.cpu_threads,
                     o.recipes, s.threshold, s.center, self.until_confident, self.max_runs))


@dataclass(frozen=True)
class Program:
    commit: Commit
    spec: ModelSpec
    pte: str  # sha256 of the .pte


class Prober:
    """Probes commits for one bisect; remembers each program measured (by its hash) to measure it once."""

    def __init__(self, setup: Setup, worktrees: Worktrees, progress: Progress, console: Console) -> None:
        self.setup, self.worktrees, self.progress, self.console = setup, worktrees, progress, console
        self.by_pte: dict[str, Step] = {}
        self.measured: list[str] = []  # the shas measured, in order
        self.good: Program | None = None

    def export(self, commit: Commit) -> Program:
        """The commit's program (EtfarmError: its model is missing or does not export)."""
        folder = self.worktrees.checkout(commit)
        source = folder / self.setup.model_path
        spec = parse_model_spec(f"{source}:{self.setup.factory}", name=f"{Path(self.setup.model_path).stem}-{commit.sha[:8]}")
        try:
            models, _, lost = export_configurations([spec], self.setup.backend, self.setup.options, self.progress)
        finally:
            forget_modules(self.worktrees.folder)  # the next commit imports its own copy of the model's siblings
        if lost or not models:
            raise EtfarmError(lost[0].note if lost else "nothing exported")
        return Program(commit, spec, sha256_file(models[0].pte))

    def probe(self, commit: Commit, index: int) -> Step:
        assert self.good is not None, "export GOOD first"
        try:
            program = self.export(commit)
        except EtfarmError as exc:  # said with the model's path in the repository, not in the temporary worktree
            reason = one_line(str(exc)).replace(f"{self.worktrees.folder}/{commit.short}/", "")
            self.progress(f"{commit.short}: skipped ({reason})")
            return Step(commit.sha, commit.subject, Outcome.SKIPPED, "skipped", reason=reason)
        if program.pte == self.good.pte:
            return Step(commit.sha, commit.subject, Outcome.NOT_SLOWER, "unchanged", ratio=1.0, pte=program.pte,
                        reason=f"same program as good ({self.good.commit.short})")
        earlier = self.by_pte.get(program.pte)
        if earlier is not None:
            return replace(earlier, sha=commit.sha, subject=commit.subject, measured=False, resumed=False,
                           reason=f"same program as {earlier.sha[:12]}")
        step = self._stored(program) if self.setup.resume else None
        if step is None:
            step = self.measure(self.good, program, f"{index:03d}-{commit.short}")
            self._keep(program, step)
        if step.outcome is not Outcome.SKIPPED:
            self.by_pte[program.pte] = step
        return step

    def measure(self, a: Program, b: Program, folder: str, against_good: bool = True) -> Step:
        """B against A: one A/B job (more with until_confident), recorded, its page written. `against_good`: a
        step of the search (its commit joins `measured`), else the culprit against its parent."""
        s = self.setup
        self.progress(f"measuring {b.commit.short} ({b.commit.subject[:50]}) against {a.commit.short}")
        outcome = run_ab(list(s.devices), a.spec, b.spec, backend=s.backend, options=s.options, out=_free(s.out, folder),
                         progress=self.progress, settings=s.settings, config_file=s.config_file,
                         until_confident=s.until_confident, max_runs=s.max_runs)
        for job in outcome.jobs:
            record_job(job, s.store, self.console, quiet=True)
        if any(job.interrupted for job in outcome.jobs):
            raise Stop(f"interrupted while measuring {b.commit.short}")
        if against_good:
            self.measured.append(b.commit.sha)
        page = write_ab_page(outcome.comparison, outcome.jobs[0].rundir.root / AB_PAGE, s.store,
                             runs=[RunRecord(j.rundir.root, j.job) for j in outcome.jobs])
        step = judged(b.commit, outcome.comparison)
        return replace(step, measured=True, pte=b.pte, page=str(page), run_ids=tuple(j.job.run_id for j in outcome.jobs))

    def _stored(self, program: Program) -> Step | None:
        assert self.good is not None
        with open_store(self.setup.store) as store:
            found = store.bisect_steps().find(self.good.pte, program.pte, self.setup.key)
        if found is None:
            return None
        try:
            step = step_from_dict(found)
        except ValueError:  # codec.FieldError: a step this etfarm cannot read is measured again
            return None
        self.progress(f"{program.commit.short}: step taken from the store (--resume)")
        return replace(step, sha=program.commit.sha, subject=program.commit.subject, measured=False, resumed=True)

    def _keep(self, program: Program, step: Step) -> None:
        if step.outcome is Outcome.SKIPPED or self.good is None:
            return
        try:
            with open_store(self.setup.store) as store:
                store.bisect_steps().record(self.good.pte, program.pte, self.setup.key, encode(step))
        except EtfarmError as exc:  # the bisect goes on; only --resume loses this step
            self.console.err(f"warning: bisect step not recorded in the store ({exc})")


def _free(parent: Path, name: str) -> Path:
    """parent/name, or name-2, name-3, ... when a bisect before (interrupted, then resumed here) left that one."""
    found, k = parent / name, 1
    while found.exists():
        k += 1
        found = parent / f"{name}-{k}"
    return found


def judged(commit: Commit, comparison: Comparison) -> Step:
    """The step's outcome from its A/B verdicts: slower when any device regressed (the slowest device's ratio is
    the step's), skipped when no device measured, undecided when some device could not tell."""
    pairs = comparison.pairs
    measured = [p for p in pairs if p.verdict is not Verdict.NO_DATA and p.estimate is not None]
    if not measured:
        reason = next((p.reason for p in pairs if p.reason), "the job measured nothing")
        return Step(commit.sha, commit.subject, Outcome.SKIPPED, "skipped", reason=f"run failed: {reason}")
    worst = max(measured, key=lambda p: p.estimate.ratio if p.estimate else 0.0)
    assert worst.estimate is not None
    if any(p.verdict is Verdict.REGRESSED for p in measured):
        worst = max((p for p in measured if p.verdict is Verdict.REGRESSED),
                    key=lambda p: p.estimate.ratio if p.estimate else 0.0)
        outcome = Outcome.SLOWER
    elif len(measured) < len(pairs) or any(p.verdict not in (Verdict.UNCHANGED, Verdict.IMPROVED) for p in measured):
        outcome = Outcome.UNDECIDED
    else:
        outcome = Outcome.NOT_SLOWER
    est = worst.estimate
    assert est is not None
    verdict = worst.verdict.value if outcome is not Outcome.UNDECIDED else Verdict.INCONCLUSIVE.value
    return Step(commit.sha, commit.subject, outcome, verdict, ratio=est.ratio, ci_low=est.ci_low, ci_high=est.ci_high,
                reason=f"on {worst.device}" if len(pairs) > 1 else "")


def step_from_dict(data: dict[str, object]) -> Step:
    """A step as the store keeps it (its codec JSON); a FieldError (ValueError) when it is not one."""
    return decode(Step, data)

