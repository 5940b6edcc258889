"""`etfarm nightly --plan FILE`: run a plan, store it, compare each (device, model) with its baseline.

The plan is read by nightly_plan.py (example in configs/nightly.yaml). Models with different
backends run as one job per backend. Each job is recorded in the results store; its verdicts are written beside it
(DIR/verdicts.json), which is what makes a regressed night never the next night's baseline (and one that could
not judge its pair not while a judged one is near: baseline.py).
The first night has no baseline: its pairs are `new`, it passes and becomes the baseline.

A night measures everything it can. The plan itself is checked before anything runs (keys, values, model
specs that resolve to files, unique names, backends, devices, a named baseline): a bad plan is a usage error
(exit 2). What only running a model's code can show (its import or factory raises, its lowering fails, its
program cannot be loaded) is that model's failure: each model is exported and its program checked on its
own before its job, and one that fails is left out of the job, its (device, model) pairs `no-data` with the
exporter's reason in one line (`ModelFailure`); the other models run and are judged. With export recipes
(`recipe:`), each recipe of a model is a configuration of its own: a recipe that cannot export the model is
that configuration's `ModelFailure` (the job leaves it out too, run/engine/sweep.py `NotExported`), its other
configurations run.

Exit code (`NightlyOutcome.exit_code`): 130 when Ctrl-C or SIGTERM stopped a job (what finished is
recorded as `interrupted`, which is never a baseline, and no verdict is computed from it); else 1 a
regression, wrong outputs or an accuracy drop (verdicts/accuracy.py); else 3 when some device or model
could not be measured (no-data: a device that failed, a model or configuration that could not be
exported); else 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from orchestrator.app.ab import ab_comparison, pool_until_confident, starting_side
from orchestrator.app.baseline import (
    LAST_GOOD,
    device_states_finder,
    named_finder,
    series_history,
    series_point,
)
from orchestrator.app.confirm_ab import (
    baseline_finder,
    confirmation_finder,
    interleaved_groups,
    job_specs,
    series_references,
    without_baseline,
)
from orchestrator.app.nightly_jobs import (
    JobRunner,
    ModelFailure,
    exportable,
    farm_runner,
    host_runner,
    new_dir,
    plan_job_specs,
    record_job,
)
from orchestrator.app.nightly_plan import NightlyPlan
from orchestrator.artifacts.modelspec import ModelSpec, parse_model_spec
from orchestrator.base.cache import cache_dir
from orchestrator.base.errors import (
    EXIT_INTERRUPTED,
)
from orchestrator.base.progress import Progress
from orchestrator.results.model import BASELINE_SUFFIX
from orchestrator.results.record import RunRecord
from orchestrator.run.engine.job import JobResult
from orchestrator.run.rundir import new_run_id
from orchestrator.run.schedule import RunOrder
from orchestrator.store import Store
from orchestrator.store.ingest import job_record
from orchestrator.verdicts.compare import Comparison, PairVerdict, compare_against
from orchestrator.verdicts.confirmation import Confirmation, suspected
from orchestrator.verdicts.recorded import record_verdicts
from orchestrator.verdicts.series import SeriesPoint, improvement_held, judge, replicate_floor
from orchestrator.verdicts.series_clean import LeftOutNight, clean_enough
from orchestrator.verdicts.statistics import Verdict

EXIT_NIGHTLY_UNMEASURED = 3


@dataclass(frozen=True)
class NightlyOutcome:
    plan: NightlyPlan
    night_id: str  # the first job's run id (a fresh one when no model could be exported): the night's page name
    jobs: tuple[JobResult, ...]
    comparison: Comparison
    notes: tuple[str, ...] = field(default_factory=tuple)
    confirmations: tuple[Confirmation, ...] = ()
    interrupted: bool = False  # Ctrl-C or SIGTERM stopped a job: no verdicts from partial data (exit 130)
    failures: tuple[ModelFailure, ...] = ()  # models that could not be exported: their pairs are no-data
    bisects: tuple[Any, ...] = ()  # plan `bisect: true`: what each confirmed regression's bisect found (app/bisect_night.py)

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return EXIT_INTERRUPTED
        c = self.comparison
        if c.regressed or c.verification_failed or c.accuracy_dropped or c.memory_grew:
            return 1
        # 3 also when a pair was measured but could not be judged (trust.py): a blind night is never green
        return EXIT_NIGHTLY_UNMEASURED if self.comparison.no_data or self.comparison.unjudged else 0


Bisector = Callable[[NightlyPlan, Store, Sequence[tuple[PairVerdict, JobResult]], Progress], Sequence[Any]]


def run_nightly(plan: NightlyPlan, store: Store, progress: Progress, config: Path | None = None,
                farm: Any = None, bisector: Bisector | None = None) -> NightlyOutcome:
    """Run every model of the plan on its devices (a job per backend), store, compare, record verdicts.
    `farm` (farm.client.FarmOptions): run the jobs on the Dask farm, the devices being its workers'.

    Confirmation (`confirm: true`, the default): a whole job can land in a slow state (every process
    of it slower; measured ~1 job in 10 on a loaded host, benchmarks/README.md), and one job cannot
    tell that from a regression. So the pairs a night finds regressed (or its job could not judge) run again at
    once, the baseline's program and the new one A B B A in one job, more such jobs pooled while inconclusive
    (confirm_ab.py; a regressed one alone when that program is gone); that verdict is the night's for them. A pair
    whose series said regressed is confirmed against the program from before the series' step, so a step of the
    device's own level between separate jobs is not the model's.

    `bisector` (plan `bisect: true`; the CLI passes app/bisect_night.py's): called once with the confirmed
    regressions (every regression when `confirm: false`), and their jobs; what it returns is the night's
    `bisects`, each with a `note` for the page."""
    if plan.baseline != LAST_GOOD:
        named_finder(store, plan.baseline)  # a baseline that names nothing is refused before any job runs
    if plan.reference:
        named_finder(store, plan.reference, "reference")  # so is a pinned reference
    run, own_runtimes = farm_runner(plan, farm, progress) if farm is not None else host_runner(plan, config, progress)
    jobs: list[JobResult] = []
    failures: list[ModelFailure] = []
    for backend, planned in plan_job_specs(plan).items():
        specs, lost = exportable(planned, backend, own_runtimes, progress, plan.options())
        failures += lost
        if not specs:
            continue
        plan.out.mkdir(parents=True, exist_ok=True)
        jobs.append(run(specs, backend, *new_dir(plan.out), list(plan.devices)))
        record_job(store, jobs[-1])
        if jobs[-1].interrupted:
            return _interrupted(plan, jobs)
    pairs, first_pairs, notes = [], [], []
    again_jobs: list[JobResult] = []
    confirmations: list[Confirmation] = []
    for result in jobs:
        histories = _Histories(store, result.job)
        part = _compare(plan, store, result, histories)
        notes.append(f"run {result.job.run_id}: {result.rundir.root}")
        suspects = [p for p in part.pairs if suspected(p)]  # regressed, or its own job could not judge it
        first_pairs += part.pairs  # what the night's own jobs found (a bisect starts from their baselines)
        if suspects and plan.confirm:
            confirming = _confirm(plan, store, run, result, suspects, progress)
            again_jobs += [again for again, _, _ in confirming]
            if any(again.interrupted for again, _, _ in confirming):
                return _interrupted(plan, (*jobs, *again_jobs))
            second = {key: (again, how, p) for again, found, how in confirming for key, p in found.items()}
            for pair in (p for p in suspects if (p.device, p.model_b) in second):
                again, how, found = second[(pair.device, pair.model_b)]
                found = _series_again(plan, store, again, histories, pair, found)
                second[(pair.device, pair.model_b)] = (again, how, found)
                confirmations.append(Confirmation(pair.device, pair.model_b, result.job.run_id, again.job.run_id,
                                                  found.regressed if found is not None else pair.regressed,
                                                  (found or pair).verdict.value, how,
                                                  "regressed" if pair.regressed else f"not judged ({pair.unjudged_reason})"))
                notes.append(confirmations[-1].note)
            settled = replace(part, pairs=tuple(_settled(p, second.get((p.device, p.model_b), (None, None, None))[2])
                                                for p in part.pairs))
            # the night's own job records what the interleaved job settled of a load (a regressed pair stays so)
            record_verdicts(result.rundir.root, replace(settled, pairs=tuple(
                p if p.regressed else s for p, s in zip(part.pairs, settled.pairs, strict=True))))
            part = settled
        pairs += part.pairs
    pairs += [p for failure in failures for p in failure.pairs(plan.devices)]
    notes += [failure.note for failure in failures]
    bisects = tuple(bisector(plan, store, _confirmed(plan, jobs, first_pairs, confirmations), progress)) \
        if plan.bisect and bisector is not None else ()
    notes += [b.note for b in bisects]
    ids = "+".join(j.job.run_id for j in (*jobs, *again_jobs)) or "nothing measured"
    return NightlyOutcome(plan, _night_id(jobs), (*jobs, *again_jobs),
                          Comparison(plan.baseline, ids, plan.settings, tuple(pairs)), tuple(notes),
                          tuple(confirmations), failures=tuple(failures), bisects=bisects)


def _series_again(plan: NightlyPlan, store: Store, again: JobResult, histories: _Histories, pair: PairVerdict,
                  found: PairVerdict | None) -> PairVerdict | None:
    """The confirmation's pair with the series judged again, on the confirmation's own runs of tonight's program
    against the history the night was judged against (and its noise floor), for the page. The interleaved verdict
    stands: a series spans separate jobs, whose device level can move between them, and a series that said regressed
    was confirmed against the program from before its step (confirm_ab.confirmation_finder). A pair judged with a
    series of its own already (a confirmation of the model alone, `_compare`d) is kept."""
    if found is None or found.series is not None:
        return found
    found = replace(found, noise=pair.noise)
    series = _judge_series(plan, store, again, histories, found).series
    if series is not None and series.regressed and not found.regressed:
        est = found.estimate
        size = f" {est.ratio_and_interval}" if est is not None else ""
        series = replace(series, overruled=f"the device's level, not the model's: tonight's program A B B A with the "
                                           f"program from before the step said {found.verdict.value}{size}")
    return replace(found, series=series)


def _settled(pair: PairVerdict, found: PairVerdict | None) -> PairVerdict:
    """The night's pair after its interleaved confirmation: that job's verdict, with its series judged again (tonight's
    program measured again, against the same history), else the series and LLM metrics of the night's own job (a
    confirmation that could not judge its series)."""
    return pair if found is None else replace(found, series=found.series or pair.series,
                                              metrics=found.metrics or pair.metrics)


def _confirmed(plan: NightlyPlan, jobs: Sequence[JobResult], pairs: Sequence[PairVerdict],
               confirmations: Sequence[Confirmation]) -> list[tuple[PairVerdict, JobResult]]:
    """The night's regressed pairs that a second job confirmed (all regressed ones without `confirm`), with the
    job that found each."""
    found = []
    for job in jobs:
        names = {m.name for m in job.job.models}
        for pair in pairs:
            held = any(c.confirmed and c.first_run == job.job.run_id and (c.device, c.model) == (pair.device, pair.model_b)
                       for c in confirmations)
            if pair.model_b in names and (held if plan.confirm else pair.regressed):
                found.append((pair, job))
    return found


def _night_id(jobs: Sequence[JobResult]) -> str:
    return jobs[0].job.run_id if jobs else new_run_id()


def _interrupted(plan: NightlyPlan, jobs: Sequence[JobResult]) -> NightlyOutcome:
    """Ctrl-C or SIGTERM stopped a job: what finished is recorded (marked interrupted, never a baseline),
    no verdict is computed from the partial data."""
    ids = "+".join(j.job.run_id for j in jobs)
    notes = tuple(f"run {j.job.run_id}: {j.rundir.root}" + (" (interrupted)" if j.interrupted else "") for j in jobs)
    return NightlyOutcome(plan, _night_id(jobs), tuple(jobs), Comparison(plan.baseline, ids, plan.settings, ()), notes,
                          interrupted=True)


def _compare(plan: NightlyPlan, store: Store, result: JobResult, histories: _Histories) -> Comparison:
    """A night's job against its baselines; its verdicts are recorded beside it (a regressed job is never
    a later baseline, confirmed or not: an outlier job is no baseline either)."""
    finder = baseline_finder(plan.baseline, store, result.job)
    noise = (lambda d, m: replicate_floor(histories(d, m), plan.center)) if plan.noise_floor is None else None
    # the night and its last good are separate jobs: a change a whole job in another speed state could make is not
    # judged from them (trust.state_step) but sent to the interleaved confirmation, as any pair not judged is
    part = compare_against(RunRecord(result.rundir.root), finder, plan.settings, a_label=plan.baseline, noise=noise,
                           states=device_states_finder(store))
    part = replace(part, pairs=tuple(_judge_series(plan, store, result, histories, pair) for pair in part.pairs))
    record_verdicts(result.rundir.root, part)
    return part


class _Histories:
    """Each (device, model)'s series history for one job, read from the store once."""

    def __init__(self, store: Store, job: Any) -> None:
        self.store, self.job = store, job
        self.found: dict[tuple[str, str], list[SeriesPoint]] = {}
        self.left_out: dict[tuple[str, str], tuple[LeftOutNight, ...]] = {}

    def __call__(self, device: str, model: str) -> list[SeriesPoint]:
        if (device, model) not in self.found:  # nights with too few clean executions stand out of the series
            self.found[(device, model)], self.left_out[(device, model)] = clean_enough(
                series_history(self.store, self.job, device, model))
        return self.found[(device, model)]


def _judge_series(plan: NightlyPlan, store: Store, result: JobResult, histories: _Histories,
                  pair: PairVerdict) -> PairVerdict:
    """The pair with its series verdict (series.py): the night against the series' reference, or the plan's
    pinned one. Pairs without a measurement or whose sides ran with other settings are left as they are."""
    if pair.estimate is None or pair.verdict in (Verdict.NO_DATA, Verdict.NEW, Verdict.SETTINGS_DIFFER):
        return pair
    night = series_point(RunRecord(result.rundir.root, result.job), pair.device, pair.model_b)
    pinned = _pinned(store, plan.reference, pair.device, pair.model_b) if plan.reference else None
    found = judge(histories(pair.device, pair.model_b), night, plan.settings, pair.noise, pinned)
    if found is None:
        return pair
    # the pair's states: the store's view the night's comparison read, with both its jobs (compare_against)
    found = replace(improvement_held(found, pair.states, plan.threshold),
                    left_out=histories.left_out.get((pair.device, pair.model_b), ()))
    if found.regressed and pair.verdict is not Verdict.REGRESSED:  # the night's verdict is the series' then
        return replace(pair, series=found, verdict=Verdict.REGRESSED,
                       reason=f"regressed against its series; against the last good run alone: {pair.verdict.value}")
    return replace(pair, series=found)


def _pinned(store: Store, ref: str, device: str, model: str) -> SeriesPoint | None:
    found = named_finder(store, ref, "reference")(device, model)
    assert found is not None  # a named run is found for every pair
    dev = found.job.device(device)
    return series_point(found, device, model) if dev is not None and dev.model(model) is not None else None


def _interleaved_job(plan: NightlyPlan, store: Store, run: JobRunner, backend: str, spec_a: ModelSpec, spec_b: ModelSpec,
                     devices: Sequence[str], k: int) -> JobResult:
    """The `k`-th interleaved job of a confirmation (jobs take turns to start with A or B), recorded without the
    baseline's program."""
    job = run(starting_side(spec_a, spec_b, k), backend, *new_dir(plan.out), list(devices), RunOrder.ABBA)
    kept, stats = without_baseline(job.recorded, job.stats, spec_a.name)
    store.record_job(job_record(kept, job.rundir.root, stats))
    return job


def _confirm(plan: NightlyPlan, store: Store, run: JobRunner, result: JobResult, suspects: Sequence[PairVerdict],
             progress: Progress) -> list[tuple[JobResult, dict[tuple[str, str], PairVerdict | None], str]]:
    """The suspected pairs measured again (each job recorded), each pair's second verdict (None: not in that job) and
    how: interleaved with the baseline's program, a job per program (confirm_ab.py), else the model alone."""
    progress(f"run {result.job.run_id}: {', '.join(sorted(f'{p.device} {p.model}' for p in suspects))}: confirming")
    references = series_references(suspects)
    finder = confirmation_finder(plan.baseline, store, result.job, references)
    groups, alone, why = interleaved_groups(finder, suspects, plan.options(), cache_dir("exports"))
    before_step = set(references.values())
    done = []
    for (model, pte, baseline_run), devices in groups.items():
        spec_b, = job_specs(result, {model})
        spec_a = parse_model_spec(str(pte), f"{model}{BASELINE_SUFFIX}")
        whose = "the series' reference" if baseline_run in before_step else "the baseline"
        progress(f"confirming {model} on {', '.join(devices)}: A B B A with {whose}'s program (run {baseline_run})")
        interleaved = partial(_interleaved_job, plan, store, run, result.job.config.backend, spec_a, spec_b)
        agains = [interleaved(devices, 0)]
        if agains[0].interrupted:
            return [*done, (agains[0], {}, "interrupted")]
        found = ab_comparison(agains, devices, spec_a.name, spec_b.name, plan.settings)
        # pooled while inconclusive, as run --ab is, up to the plan's confirm_max_runs a side: one job of 10-20 runs a
        # side often cannot tell 5 % on a busy host
        found = pool_until_confident(agains, found, plan.settings, plan.confirm_max_runs, plan.runs, interleaved,
                                     progress, device_states_finder(store))
        again = agains[0]
        for job in agains:  # a confirmed regression is never a later baseline, nor is a job pooled into it
            record_verdicts(job.rundir.root, found)
        pooled = f", {len(agains)} jobs pooled" if len(agains) > 1 else ""
        how = f"interleaved A B B A with {whose}'s program from run {baseline_run}{pooled}"
        root = again.rundir.root  # both sides' run directory, for the page's structure diff and links
        done.append((again, {(p.device, model): replace(p, dir_a=root, dir_b=root) for p in found.pairs}, how))
        done += [(more, {}, how) for more in agains[1:]]
        if agains[-1].interrupted:
            return done
    for note in why:
        progress(note)
    alone = [p for p in alone if p.regressed]  # a fresh job alone cannot settle a different load: left as it is
    if alone:
        devices = list(dict.fromkeys(p.device for p in alone))
        again = run(job_specs(result, {p.model_b for p in alone}), result.job.config.backend, *new_dir(plan.out), devices)
        record_job(store, again)
        second = {(p.device, p.model_b): p for p in _compare(plan, store, again, _Histories(store, again.job)).pairs}
        done.append((again, {(p.device, p.model_b): second.get((p.device, p.model_b)) for p in alone},
                     "alone: " + "; ".join(why)))
    return done


