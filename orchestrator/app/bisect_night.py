"""A night bisects its own confirmed regressions (plan keys `bisect: true`, `repo:`, `bisect_budget:`).

The commit range of a regressed (device, model) runs from its baseline's commit to the night's. Each job
records the commit of each model's file at job start (manifest: the model's `git_commit`, from
artifacts/provenance.py); with `repo:` the night also records that repository's HEAD in night.json
(`repo_head`, `night_repo_head`), and the baseline's is read from the night.json beside its run. A range of
one commit names that commit without measuring; a longer one is bisected (app/bisect.py) on the regressed
device, with the plan's measurement options, at most `bisect_budget` commits measured, steps taken from the
store when already measured (resume). What each bisect found is a `NightBisect`: a note on the night's page,
a record in its JSON and in night.json (the dashboard's regressions list names the culprit from there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from orchestrator.app.bisect import BisectJob, bisect
from orchestrator.app.bisect_range import git, repo_root
from orchestrator.app.bisect_search import Reason
from orchestrator.app.console import Console
from orchestrator.app.nightly_plan import NightlyPlan
from orchestrator.artifacts.modelspec import parse_model_spec
from orchestrator.base.errors import EtfarmError, one_line
from orchestrator.base.progress import Progress
from orchestrator.config import load_inventory
from orchestrator.results.night_marks import read_night
from orchestrator.run.engine.job import JobResult
from orchestrator.store import Store
from orchestrator.verdicts.compare import PairVerdict
from orchestrator.verdicts.statistics import VerdictSettings


@dataclass(frozen=True)
class NightBisect:
    """What a night's bisect of one regressed (device, model) found."""

    device: str
    model: str
    run_id: str  # the night's job that found the regression
    good: str | None  # the baseline's commit
    bad: str | None  # the night's
    culprit: str | None
    subject: str = ""
    ratio: float | None = None  # the culprit against good
    reason: str = ""  # why no culprit (or: a range of one commit)
    measured: int = 0
    budget_ran_out: bool = False
    page: str | None = None

    @property
    def note(self) -> str:
        where = f"bisect {self.device} {self.model}"
        if self.culprit:
            ratio = f" {self.ratio:.3f}x against good" if self.ratio is not None else ""
            return (f"{where}: culprit {self.culprit[:12]} ({self.subject}){ratio}, {self.measured} commit(s) measured"
                    + (f"; {self.reason}" if self.reason else "") + (f"; page {self.page}" if self.page else ""))
        return f"{where}: no culprit named ({self.reason})" + (f"; page {self.page}" if self.page else "")


def night_repo_head(plan: NightlyPlan) -> str | None:
    """The plan's repository's HEAD now (recorded with the night, so the next night's range starts there)."""
    if plan.repo is None:
        return None
    try:
        found = git(repo_root(plan.repo, "repo"), "rev-parse", "HEAD", check=False)
    except EtfarmError:
        return None
    return found.stdout.strip() if found.ok else None


def bisect_night(plan: NightlyPlan, store: Store, regressed: Sequence[tuple[PairVerdict, JobResult]],
                 progress: Progress) -> list[NightBisect]:
    """Bisect each confirmed regression's commit range; a bisect that cannot run is said, never the night's failure."""
    found = []
    for pair, job in regressed:
        try:
            found.append(_one(plan, store, pair, job, progress))
        except EtfarmError as exc:
            found.append(NightBisect(pair.device, pair.model_b, job.job.run_id, None, None, None,
                                     reason=f"cannot bisect: {one_line(str(exc))}"))
        except KeyboardInterrupt:  # the night's verdicts are decided: its pages are still written
            found.append(NightBisect(pair.device, pair.model_b, job.job.run_id, None, None, None, reason="interrupted"))
            progress(found[-1].note)
            break
        progress(found[-1].note)
    return found


def _one(plan: NightlyPlan, store: Store, pair: PairVerdict, job: JobResult, progress: Progress) -> NightBisect:
    model = next((m for m in job.job.models if m.name == pair.model_b), None)
    if model is None:
        raise EtfarmError(f"model {pair.model_b} is not in run {job.job.run_id}")
    spec = parse_model_spec(model.spec)
    root = repo_root(plan.repo or spec.source.parent, "repo")
    bad = night_repo_head(plan) if plan.repo is not None else _commit(model.git_commit)
    good = _baseline_commit(plan, store, pair)
    def said(culprit: str | None = None, reason: str = "") -> NightBisect:
        return NightBisect(pair.device, pair.model_b, job.job.run_id, good, bad, culprit, reason=reason,
                           subject=git(root, "log", "-1", "--format=%s", culprit).stdout.strip() if culprit else "")
    if good is None or bad is None:
        return said(reason="no commit recorded for " + ("the baseline" if good is None else "the night"))
    if good == bad:
        return said(reason=f"baseline and night ran the same commit {bad[:12]}: not a code change")
    count = git(root, "rev-list", "--first-parent", "--count", f"{good}..{bad}", check=False)
    if count.ok and count.stdout.strip() == "1":
        return said(bad, "the range holds this one commit")
    try:
        relative = spec.source.resolve().relative_to(root.resolve())
    except ValueError:
        return said(reason=f"{spec.source} is outside the repository {root}")
    inventory = load_inventory(plan.config)
    result = bisect(BisectJob(root, good, bad, f"{relative}:{spec.factory}", tuple(inventory.select([pair.device])),
                              model.backend, plan.options(),
                              VerdictSettings(threshold=plan.threshold, op_threshold=plan.op_threshold, center=plan.center),
                              out=plan.out / f"bisect-{job.job.run_id}-{pair.device}-{pair.model_b}", store=store.path,
                              config_file=inventory.path, resume=True, budget=plan.bisect_budget),
                    progress, Console(progress, progress))
    step = result.culprit_step
    # no culprit: why, with the commits it lies among ("budget ran out after 8 measured commit(s) (budget 8); ...")
    reason = "" if result.culprit else result.sentence.removeprefix("no culprit named: ")
    return NightBisect(pair.device, pair.model_b, job.job.run_id, good, bad,
                       result.culprit.sha if result.culprit else None, result.culprit.subject if result.culprit else "",
                       step.ratio if step else None, reason, len(result.measured),
                       result.search.reason is Reason.BUDGET, str(result.folder / "bisect.html"))


def _commit(recorded: str | None) -> str | None:
    """A recorded commit, without its `+dirty` mark (the file differed from it: the nearest commit still)."""
    return recorded.split("+", 1)[0] if recorded else None


def _baseline_commit(plan: NightlyPlan, store: Store, pair: PairVerdict) -> str | None:
    """The commit the baseline ran: its night's repo HEAD (with `repo:`), else its model's recorded commit."""
    run_id = pair.source_a.split("+", 1)[0]
    if not run_id or not store.has_job(run_id):
        return None
    if plan.repo is not None:
        folder = store.run_dir(run_id)
        night = read_night(Path(folder)) if folder else None
        return (night.repo_head or None) if night is not None else None
    job = store.job(run_id, samples=False)
    model = next((m for m in job.models if m.name == pair.model_a), None)
    return _commit(model.git_commit) if model else None
