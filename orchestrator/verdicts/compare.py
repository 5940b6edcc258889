"""Verdicts between two sets of process runs, per (device, model), end to end and per op.

Each pair's sides are `Side`s (sides.py); the verdicts are `PairVerdict`s in a `Comparison` (pair_verdicts.py).
Every op of a pair is estimated in one batch (statistics.estimate_many).

Per op, events are matched by block and op identity (profiles/op_identity.py, from each side's stats.csv: the
same layer lines up even when B has more layers than A or B's CPU names its kernels otherwise; index and
name shown are B's); framework events (Method::init / load / execute) are left to the end-to-end verdict,
and events whose median is zero on either side (below the timer's resolution) are skipped and counted.
Per-op p-values are adjusted together (Benjamini-Hochberg) within one (device, model) pair.

A pair whose side has no data (the device failed, the model failed, no runs; ETDumps that cannot be read)
gets the verdict `no-data` with the reason and who is to blame, never a regression; other pairs still get
theirs. Sides that ran with different settings (likeness.py) are compared and the differences named, but
their verdicts are `settings-differ`, never regressed or improved; a side that is not whole (an interrupted
job, a partial model) is named beside its pair. Per-op verdicts carry where the op is in the user's model (B's
stats.csv). Renderers only print these objects (report/terminal/verdicts.py, report/page/comparison.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from orchestrator.base.errors import Blame, DataError, UsageError, one_line
from orchestrator.results.model import Job, VerificationStatus
from orchestrator.results.record import RunRecord
from orchestrator.verdicts.accuracy import accuracy_verdict
from orchestrator.verdicts.below import below_threshold
from orchestrator.verdicts.device_states import DeviceStates, device_states
from orchestrator.verdicts.estimates import run_medians
from orchestrator.verdicts.figures import side_figures
from orchestrator.verdicts.likeness import IncompleteSide, setting_differences, unjudged
from orchestrator.verdicts.llm_metrics import metric_verdicts
from orchestrator.verdicts.locate import located, ops_where
from orchestrator.verdicts.memory import memory_verdict
from orchestrator.verdicts.noise import NoiseFinder, NoiseFloor
from orchestrator.verdicts.op_samples import OpKey, joined
from orchestrator.verdicts.pair_verdicts import Comparison, OpVerdict, PairVerdict
from orchestrator.verdicts.paired import estimate, estimate_many  # statistics', or paired by round (center "paired")
from orchestrator.verdicts.sides import Side, per_op_runs, side_from_job
from orchestrator.verdicts.statistics import (
    Estimate,
    Verdict,
    VerdictSettings,
    adjust_p_values,
    decide,
)
from orchestrator.verdicts.trust import Judged, Load, held_back, judged, settle_command, state_step, widened

DEFAULT_SETTINGS = VerdictSettings()

def compare_sides(a: Side, b: Side, settings: VerdictSettings = DEFAULT_SETTINGS, per_op: bool = True,
                  noise: NoiseFloor | None = None, states: DeviceStates | None = None) -> PairVerdict:
    """The verdict of B against A (see statistics.py for the method).

    `noise`: this pair's noise floor (e.g. from stored history); it replaces `settings.noise_floor`.
    `states`: what the device's stored jobs of the model showed of its speed states (device_states.py;
    `DeviceStates.nothing_seen` without a store); with the sides' own runs, it holds back a change between separate
    jobs that a state step could make (trust.state_step). None: that rule is not applied (run --ab's interleaved
    jobs, a series, which pools every state).
    The end-to-end floor widens the per-op threshold too: a job-level shift (processes landing in
    a slower state) slows every op of the process alike, so per-op ratios carry it as well.

    Sides that ran with different settings (likeness.py) get `settings-differ` instead of regressed or improved,
    end to end, per op and per LLM metric (the end-to-end verdict whatever the outcome): the ratio is the
    settings', not a regression."""
    if noise is None and settings.noise_floor:
        noise = NoiseFloor(settings.noise_floor, auto=False)
    if noise is not None:
        settings = replace(settings, noise_floor=noise.value)
    threshold, op_threshold = settings.effective(settings.threshold), settings.effective(settings.op_threshold)
    base: dict[str, Any] = {"device": b.device, "model_a": a.model, "model_b": b.model, "threshold": threshold,
                            "op_threshold": op_threshold, "verification_failed": b.verification is VerificationStatus.FAIL,
                            "source_a": a.source, "source_b": b.source, "noise": noise,
                            "differences": setting_differences(a.settings, b.settings),
                            "incomplete": tuple(IncompleteSide(which, side.source, side.incomplete)
                                                for side, which in ((a, "A"), (b, "B")) if side.incomplete)}
    for side, which in ((b, "B"), (a, "A")):  # the run under test first: its failure is the news
        if side.missing is not None:
            return PairVerdict(verdict=Verdict.NO_DATA, reason=f"{which} ({side.source}): {side.missing}",
                               blame=side.blame, **base)
    together = one_job(a, b)
    est = estimate(a.e2e, b.e2e, confidence=settings.confidence, resamples=settings.resamples, seed=settings.seed,
                   center=settings.center, interleaved=together)
    if est is None:
        return PairVerdict(verdict=Verdict.NO_DATA, reason="no end-to-end samples", blame=Blame.INFRASTRUCTURE, **base)
    separate = settings.job_shift > 0 and _separate_jobs(a, b, noise)
    est = widened(est, settings.confidence, settings.job_shift) if separate else est
    # Sides of one interleaved job (run --ab, a night's confirmation) ran under the same load by construction:
    # shares that differ there are the programs' (a longer execution is preempted more often), not the load's,
    # and the rule that sends a pair to `run --ab` must not refuse run --ab's own verdict.
    loads = (None, None) if together else (a.load, b.load)
    trust = judged(decide(est, est.p_value, threshold, settings.alpha, settings.threshold), est,
                   settings.threshold, settings.alpha, settings.confidence, loads, settings.noise_floor)
    stepped = states is not None and not together  # separate jobs, measured floor or not: none covers a state
    if stepped:
        states = device_states(states, ((a.source, run_medians(a.e2e)), (b.source, run_medians(b.e2e))))
        trust = state_step(trust, est, threshold, states)
    verdict = trust.verdict
    try:
        ops, skipped = _op_verdicts(a, b, settings, op_threshold, loads, separate) if per_op else ((), 0)
    except DataError as exc:  # a corrupt or foreign ETDump: this pair has no data, the others keep their verdicts
        return PairVerdict(verdict=Verdict.NO_DATA, reason=f"per-op samples unreadable: {one_line(str(exc))}",
                           blame=Blame.DATA, **base)
    if (separate or stepped) and trust.verdict is Verdict.INCONCLUSIVE:  # the job-level doubt holds for every op (trust.py)
        ops = tuple(held_back(o, trust.blind) for o in ops)
    metrics = metric_verdicts([r.llm for r in a.runs], [r.llm for r in b.runs], settings, threshold)
    accuracy = accuracy_verdict(a.accuracy, b.accuracy)
    memory = memory_verdict(a.memory, b.memory, settings.memory_threshold)
    if base["differences"]:
        trust = Judged(Verdict.SETTINGS_DIFFER, trust.detectable)  # the settings' ratio: nothing to settle
        verdict = Verdict.SETTINGS_DIFFER
        ops = tuple(replace(o, verdict=unjudged(o.verdict)) for o in ops)
        metrics = tuple(replace(m, verdict=unjudged(m.verdict)) for m in metrics)
        accuracy = memory = None  # another recipe's accuracy and memory are the recipe's, not a change
    below = below_threshold(est, est.p_value, verdict, threshold, settings.alpha)
    return PairVerdict(verdict=verdict, estimate=est, ops=ops, ops_skipped=skipped, metrics=metrics, below=below,
                       accuracy=accuracy, memory=memory, states=states if stepped else None, **base,
                       **_trust_fields(trust, a, b))


def one_job(a: Side, b: Side) -> bool:
    """Whether both sides ran in the same job(s), taking turns (run --ab and a night's confirmation run A B B A;
    pooled, both sides name the same jobs): what struck one side's runs struck the other's."""
    return a.source == b.source


def _separate_jobs(a: Side, b: Side, noise: NoiseFloor | None) -> bool:
    """Sides from separate jobs (not one interleaved job) with no measured job-to-job floor: with
    `settings.job_shift` (compare's default: trust.JOB_SHIFT_SD) their intervals carry that job-level shift."""
    return not one_job(a, b) and (noise is None or noise.floor is None)


def _trust_fields(trust: Judged, a: Side, b: Side) -> dict[str, Any]:
    """What the pair could see, how contended each side was, and (inconclusive) the command that settles it."""
    # the same program on both sides (an A/A) has nothing for `run --ab` to settle, and it refuses one spec twice
    unlike = a.program is None or a.program != b.program
    settle = settle_command(a.program, b.program, b.device) if trust.verdict is Verdict.INCONCLUSIVE and unlike else None
    return {"detectable": trust.detectable, "blind": trust.blind, "settle": settle, "loads": (a.load, b.load),
            "dropped": (a.dropped, b.dropped), "figures": (side_figures(a.e2e), side_figures(b.e2e))}


def _op_verdicts(a: Side, b: Side, settings: VerdictSettings, threshold: float,
                 loads: tuple[Load | None, Load | None] = (None, None),
                 separate: bool = False) -> tuple[tuple[OpVerdict, ...], int]:
    """Every op under the end-to-end verdict's protections: process runs as the unit, p-values adjusted together
    (Benjamini-Hochberg), the threshold, the detectable change and the sides' contention (trust.py)."""
    a_samples, b_samples = joined(per_op_runs(a), per_op_runs(b))
    a_ops, b_ops = a_samples.ops, b_samples.ops
    keys = [k for k in b_ops if k in a_ops]
    skipped = len(set(a_ops) ^ set(b_ops))
    estimates: list[tuple[OpKey, Estimate]] = []
    found = estimate_many([(a_ops[key][1], b_ops[key][1]) for key in keys], confidence=settings.confidence,
                          resamples=settings.resamples, seed=settings.seed, center=settings.center)
    # Not `interleaved` here: an op's run medians cluster for reasons other than the process's speed state (its
    # cache, its timer ticks), and those clusters need not be shared between the sides of one job. On the second VM
    # beside a slow job, 3 of 24 pooled interleaved A/A pairs read a max-pool `regressed 1.22x` (A 47 runs fast +
    # 22 at 1.59x, B's 70 all at 1.22x) once the hypergeometric prior replaced MISSED_FAST for ops.
    for key, est in zip(keys, found, strict=True):
        if est is None or est.median_b_ms <= 0:
            skipped += 1
            continue
        estimates.append((key, widened(est, settings.confidence, settings.job_shift) if separate else est))
    adjusted = adjust_p_values([e.p_value for _, e in estimates])
    ops = []
    for (key, est), p in zip(estimates, adjusted, strict=False):
        # a change of less than two ticks of the op's timer is below what the timer can tell (a 5-tick op: 40 %)
        resolution = 2 * _tick(a_ops[key][1], b_ops[key][1]) / est.median_a_ms
        trust = judged(decide(est, p, max(threshold, resolution), settings.alpha, settings.op_threshold), est,
                       max(settings.op_threshold, resolution), settings.alpha, settings.confidence, loads)
        ops.append(OpVerdict(key[0], b_ops[key][0], b_samples.name(key), trust.verdict, est, p, op=key[1].label,
                             op_basis=key[1].basis, detectable=trust.detectable, blind=trust.blind,
                             figures=(side_figures(a_ops[key][1]), side_figures(b_ops[key][1]))))
    return tuple(ops), skipped


def _tick(*sides: Sequence[Any]) -> float:
    """The op's timer tick as its samples show it: the smallest step between distinct sample values (0: none)."""
    import numpy as np

    values = [np.asarray(r, dtype=np.float64) for runs in sides for r in runs if len(r)]
    found = np.unique(np.round(np.concatenate(values), 9)) if values else np.array([])
    steps = np.diff(found)
    return float(steps[steps > 0].min()) if steps.size and (steps > 0).any() else 0.0

BaselineFinder = Callable[[str, str], "RunRecord | None"]  # (device, model) -> the run to compare with
StatesFinder = Callable[[str, str], DeviceStates]  # (device, model) -> what its stored jobs showed of speed states


def compare_jobs(a: RunRecord, b: RunRecord, settings: VerdictSettings = DEFAULT_SETTINGS,
                 per_op: bool = True, states: StatesFinder | None = None) -> Comparison:
    """Every (device, model) of B against the same (device, model) of A, matched by name (some must match)."""
    check_common(a, b)
    return compare_against(b, lambda device, model: a, settings, per_op, a_label=a.job.run_id, states=states)


def compare_against(b: RunRecord, baseline: BaselineFinder, settings: VerdictSettings = DEFAULT_SETTINGS,
                    per_op: bool = True, a_label: str = "baseline", noise: NoiseFinder | None = None,
                    states: StatesFinder | None = None) -> Comparison:
    """Every (device, model) of the run `b` against the run `baseline(device, model)` names.

    A pair whose baseline does not hold that (device, model) at all is `new` (it becomes the
    baseline); one whose baseline or B side failed is `no-data`. `noise(device, model)`, when
    given, is each measured pair's noise floor (baseline.history_noise_finder); `states(device, model)` what the
    device's stored jobs of the model showed of its speed states (baseline.device_states_finder)."""
    job_b = b.job
    b_dir = b.root
    where = ops_where(b)
    pairs = []
    for device in job_b.devices:
        for model in [m.name for m in device.models] or list(_job_model_names(job_b)):
            side_b = side_from_job(b, device.name, model)
            found = baseline(device.name, model)
            if side_b.missing is None and (found is None or not _holds(found.job, device.name, model)):
                pairs.append(PairVerdict(device.name, model, model, Verdict.NEW, source_b=job_b.run_id,
                                         reason="no baseline yet: this run becomes it",
                                         verification_failed=side_b.verification is VerificationStatus.FAIL,
                                         dir_b=b_dir))  # its page's trust notes come from B's run
                continue
            side_a = (side_from_job(found, device.name, model) if found is not None
                      else Side(a_label, device.name, model, missing="no baseline", blame=Blame.USAGE))
            measured = side_a.missing is None and side_b.missing is None
            floor = noise(device.name, model) if noise is not None and measured else None
            seen = states(device.name, model) if states is not None and measured else None
            pair = compare_sides(side_a, side_b, settings, per_op, floor, seen)
            pairs.append(replace(pair, dir_a=found.root if found is not None else None, dir_b=b_dir,
                                 ops=located(pair.ops, where.get((device.name, model), {}))))
    return Comparison(a_label, job_b.run_id, settings, tuple(pairs))



def check_common(a: RunRecord, b: RunRecord) -> None:
    """A named A and B must share some (device, model): else every pair would be `new` (exit 0), an answer to a
    question nobody asked. A usage error naming both sides."""
    a_dir, job_a, b_dir, job_b = a.root, a.job, b.root, b.job
    wanted = [(d.name, m) for d in job_b.devices for m in [r.name for r in d.models] or list(_job_model_names(job_b))]
    if wanted and not any(_holds(job_a, device, model) for device, model in wanted):
        raise UsageError(f"A {job_a.run_id} ({_what(job_a)}, {a_dir}) and B {job_b.run_id} ({_what(job_b)}, {b_dir}) "
                         "have no (device, model) in common: compare runs of one model on one device")


def _what(job: Job) -> str:
    return f"{', '.join(_job_model_names(job)) or 'no model'} on {', '.join(d.name for d in job.devices) or 'no device'}"


def _holds(job: Job, device: str, model: str) -> bool:
    dev = job.device(device)
    return dev is not None and (dev.model(model) is not None or model in set(_job_model_names(job)))


def _job_model_names(job: Job) -> Iterable[str]:
    return (m.name for m in job.models)
