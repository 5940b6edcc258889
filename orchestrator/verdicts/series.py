"""Judge the series, not only the neighbour (issue 32): a night against a reference an accepted drift cannot move.

A nightly compares each night with its last good run. A model that slows 2.5 % a night passes every night
that way (each night is judged against the one before, which had itself passed), and nights alternating
between two models inflated a floor computed from consecutive runs. So each (device, model, settings)
series (likeness.SeriesKey) of good stored runs is also judged as a whole, oldest first, with the night:

- its level per job is the verdict statistic of the job (statistics.run_median: the fast-state level);
- change points: ruptures PELT on the log levels of the good jobs before the night (changes.segments:
  penalty from the series' own noise, segments of at least two jobs); the night joins the last segment, so
  one noisy night is never a change point: a change needs two good jobs on its far side;
- the reference: the segment before the drift the night is part of, where a drift is the trailing run of
  change points that all go the same way (one +2.5 % step a night is found as a few steps up: the
  reference stays before the first), or, with no change point, every good job of the window. A plan may pin
  the reference to a run instead (`reference: RUN`, a release's run). A passing night never moves it:
  a drift has to be accepted by pinning a later run (or a fix brings the level back);
- the verdict: the night's job against the pooled reference jobs, and the jobs since the drift began
  (the night included) pooled against them: a sustained shift. Either `regressed` makes the pair
  regressed (compare.PairVerdict.regressed), with the change points (runs, commits) the drift built up over;
- the noise floor (noise.estimate_replicate_floor): jobs are replicates of each other when they ran the
  same model content (its hash) between two change points; real changes never widen it.

The store-facing half (which runs are the series) is baseline.py's `series_history`; this module works on
`SeriesPoint`s in memory, so benchmarks/bench_series.py simulates nights through the same code.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from orchestrator.base.codec import SKIP, Layout
from orchestrator.base.words import counted
from orchestrator.verdicts.compare import PairVerdict, Side, compare_sides
from orchestrator.verdicts.device_states import DeviceStates
from orchestrator.verdicts.noise import NoiseFloor, estimate_replicate_floor
from orchestrator.verdicts.sides import pool
from orchestrator.verdicts.statistics import Estimate, Verdict, VerdictSettings, run_median
from orchestrator.verdicts.trust import Judged, state_step

WINDOW = 30  # newest good jobs of a series judged with the night


@dataclass(frozen=True)
class SeriesPoint:
    """One good job of a series (or the night under judgement): who it is and its runs."""

    run_id: str
    started: str
    git_commit: str | None
    content_hash: str | None  # the model file's content: jobs of one content between change points are replicates
    side: Side


@dataclass(frozen=True)
class Step:
    """A change point of the series: the first job at a new level."""

    run_id: str
    started: str
    git_commit: str | None
    ratio: float  # the level after / the level before

    def describe(self) -> str:
        return f"{self.run_id}" + (f" (commit {self.git_commit[:12]})" if self.git_commit else "") + f" {self.ratio:.3f}x"

    LAYOUT: ClassVar[Layout] = Layout(raw_floats=True)


@dataclass(frozen=True)
class SeriesPair:
    """What a series verdict says of a pair it judged (the night, or the drift sustained): its verdict and size."""

    verdict: Verdict
    estimate: Estimate | None
    threshold: float
    source_a: str
    source_b: str

    @classmethod
    def of(cls, pair: PairVerdict | None) -> SeriesPair | None:
        return None if pair is None else cls(pair.verdict, pair.estimate, pair.threshold, pair.source_a, pair.source_b)


@dataclass(frozen=True)
class SeriesVerdict:
    """The night against the series' reference."""

    reference: str  # in words: which jobs the reference is
    reference_runs: tuple[str, ...]
    night: PairVerdict = field(metadata=SKIP)  # the night's job against the pooled reference (written as a SeriesPair)
    sustained: PairVerdict | None = field(metadata=SKIP)  # the jobs since the drift began, the night included, against it
    steps: tuple[Step, ...]  # the change points the drift built up over, oldest first
    points: int  # jobs of the series judged (the night included)
    left_out: tuple[Any, ...] = ()  # series_clean.LeftOutNight: stored nights with too few clean executions
    # a regression the night's interleaved confirmation against the reference's program did not show, in words: the
    # device's level moved between separate jobs, not the model's (the series then cannot judge: inconclusive)
    overruled: str = ""

    LAYOUT: ClassVar[Layout] = Layout(
        derived=("verdict", "regressed", ("night", "night_pair"), ("sustained", "sustained_pair"), ("text", "describe")),
        order=("verdict", "regressed", "reference", "reference_runs", "points", "night", "sustained"))

    @property
    def night_pair(self) -> SeriesPair | None:
        return SeriesPair.of(self.night)

    @property
    def sustained_pair(self) -> SeriesPair | None:
        return SeriesPair.of(self.sustained)

    @property
    def measured_regressed(self) -> bool:
        """What the series' own numbers say, overruled or not."""
        return self.night.regressed or (self.sustained is not None and self.sustained.regressed)

    @property
    def regressed(self) -> bool:
        return self.measured_regressed and not self.overruled

    @property
    def verdict(self) -> Verdict:
        if self.overruled and self.measured_regressed:
            return Verdict.INCONCLUSIVE
        if self.regressed:
            return Verdict.REGRESSED
        return self.night.verdict

    def describe(self) -> str:
        est = (self.sustained if self.sustained is not None and self.sustained.regressed else self.night).estimate
        size = f" {est.ratio_and_interval}" if est is not None else ""
        built = f"; built up over {', '.join(s.describe() for s in self.steps)}" if self.steps else ""
        left = (f"; left out: {', '.join(n.describe() for n in self.left_out)}") if self.left_out else ""
        over = f" (measured regressed; {self.overruled})" if self.overruled and self.measured_regressed else ""
        return f"{self.verdict.value}{over}{size} against {self.reference}{built}{left}"



def levels(points: Sequence[SeriesPoint], center: str) -> list[float]:
    """Each job's log level (the verdict statistic of its runs); NaN when it has none."""
    out = []
    for p in points:
        value = run_median(p.side.e2e, center) if p.side.runs else math.nan
        out.append(math.log(value) if value > 0 else math.nan)
    return out


def replicate_floor(history: Sequence[SeriesPoint], center: str) -> NoiseFloor:
    """The series' job-to-job noise from its replicate jobs (same content between change points)."""
    logs = levels(history, center)
    kept = [k for k, v in enumerate(logs) if math.isfinite(v)]
    bounds = _bounds([logs[k] for k in kept])
    segment = {k: next(j for j in range(len(bounds) - 1) if bounds[j] <= i < bounds[j + 1]) for i, k in enumerate(kept)}
    groups = [(history[k].content_hash, segment[k]) for k in kept]
    return estimate_replicate_floor([math.exp(logs[k]) for k in kept], groups)


def judge(history: Sequence[SeriesPoint], night: SeriesPoint, settings: VerdictSettings,
          noise: NoiseFloor | None = None, pinned: SeriesPoint | None = None) -> SeriesVerdict | None:
    """The night against the series' reference (module docstring); None with no usable history."""
    usable = [p for p, v in zip(history, levels(history, settings.center), strict=True) if math.isfinite(v)]
    if pinned is not None:
        night_pair = compare_sides(pinned.side, night.side, settings, per_op=False, noise=noise)
        return SeriesVerdict(f"the pinned run {pinned.run_id}", (pinned.run_id,), night_pair, None, (),
                             len(usable) + 1)
    if not usable:
        return None
    series = [*usable, night]
    logs = levels(usable, settings.center)
    bounds = _bounds(logs)  # the history's own structure: the night joins its last segment, never makes a change
    steps = [Step(usable[b].run_id, usable[b].started, usable[b].git_commit,
                  math.exp(_median(logs[b:bounds[k + 1]]) - _median(logs[bounds[k - 1]:b])))
             for k, b in enumerate(bounds[:-1]) if k > 0]
    drift = _trailing_drift(steps)
    start = bounds[len(steps) - len(drift) + 1] if drift else len(usable)  # first job of the drift
    ref_from = bounds[len(steps) - len(drift)] if drift else 0
    reference = usable[ref_from:start] if drift else usable
    ref_side = pool(p.side for p in reference)
    ids = tuple(p.run_id for p in reference)
    night_pair = compare_sides(ref_side, night.side, settings, per_op=False, noise=noise)
    sustained = None
    if drift and len(series) - start >= 2:
        sustained = compare_sides(ref_side, pool(p.side for p in series[start:]), settings, per_op=False, noise=noise)
    where = (f"the level before run {series[start].run_id} ({counted(len(reference), 'job')})" if drift
             else f"the series' level ({counted(len(reference), 'job')}, no change point)")
    return SeriesVerdict(where, ids, replace(night_pair, source_a="+".join(ids)), sustained, tuple(drift), len(series))


def improvement_held(found: SeriesVerdict, states: DeviceStates | None, threshold: float) -> SeriesVerdict:
    """`found` with its night's `improved` held back as `inconclusive` (naming the states) when a whole job in another
    of the device's speed states could make it (trust.state_step). A series' `regressed` is left: the night confirms
    it interleaved against the reference's program. Nothing confirms an improvement: live on the speed-state VM a
    night's series read `improved 0.703x` of an unchanged model against a reference that had landed one state up."""
    night = found.night
    if night.verdict is not Verdict.IMPROVED or night.estimate is None:
        return found
    held = state_step(Judged(night.verdict, night.detectable, night.blind), night.estimate, threshold, states)
    if held.verdict is night.verdict:
        return found
    return replace(found, night=replace(night, verdict=held.verdict, blind=held.blind, states=states))


def _trailing_drift(steps: Sequence[Step]) -> list[Step]:
    """The last change points that all go the same way as the last one (a drift built up in steps)."""
    out: list[Step] = []
    for step in reversed(steps):
        if out and (step.ratio > 1.0) != (out[0].ratio > 1.0):
            break
        out.insert(0, step)
    return out


def _bounds(logs: Sequence[float]) -> list[int]:
    from orchestrator.verdicts.changes import segments

    return segments(list(logs))[0] if logs else [0, 0]


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    n = len(ordered)
    return (ordered[(n - 1) // 2] + ordered[n // 2]) / 2.0
