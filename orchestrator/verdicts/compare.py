"""Verdicts between two sets of process runs, per (device, model), end to end and per op.

A `Side` is what one half of a comparison measured for one model on one device: its process
runs (end-to-end samples from the results model, `ProcessRun.execute_ms` of the traced runs)
and their per-op samples: from the samples file the job wrote (results/samples.py), from each run's ETDump
where a run directory has none (`profiles.analysis_core.collect_samples`, numpy only: op_samples.py), or
given in memory (`OpSamples`). Sides come from run directories (`side_from_job`),
possibly pooled over several jobs (`pool`), so `compare A B`, `run --ab` (two models of one job)
and `nightly` share one path. Every op of a pair is estimated in one batch (statistics.estimate_many).

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

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from orchestrator.artifacts.generation import LlmRunFigures
from orchestrator.errors import EXIT_OK, Blame, DataError, UsageError, one_line
from orchestrator.results.accuracy import Accuracy
from orchestrator.results.footprint import ModelMemory
from orchestrator.results.model import (
    Job,
    ModelResult,
    ModelStatus,
    ProcessRun,
    VerificationStatus,
    load_manifest,
)
from orchestrator.run.rundir import SAMPLES
from orchestrator.run.runner_contract import ETDUMP_NAME
from orchestrator.verdicts.accuracy import AccuracyVerdict, accuracy_verdict
from orchestrator.verdicts.below import BelowThreshold, below_threshold
from orchestrator.verdicts.figures import SideFigures, side_figures
from orchestrator.verdicts.likeness import (
    IncompleteSide,
    SettingDifference,
    Settings,
    model_settings,
    setting_differences,
    side_gap,
    unjudged,
)
from orchestrator.verdicts.llm_metrics import MetricVerdict, metric_verdicts
from orchestrator.verdicts.locate import SideIdentities, located, ops_where, side_identities
from orchestrator.verdicts.memory import MemoryVerdict, memory_verdict
from orchestrator.verdicts.noise import NoiseFinder, NoiseFloor
from orchestrator.verdicts.op_samples import OpKey, OpSamples, joined, read_op_samples, recorded_op_samples
from orchestrator.verdicts.paired import estimate, estimate_many  # statistics', or paired by round (center "paired")
from orchestrator.verdicts.statistics import (
    Estimate,
    Verdict,
    VerdictSettings,
    adjust_p_values,
    decide,
    statistic_name,
)
from orchestrator.verdicts.trust import Judged, Load, judged, settle_command, widened

EXIT_REGRESSION = 1
EXIT_UNJUDGED = 3  # measured, but some pair could not be judged (too noisy, or its sides under different load)
DEFAULT_SETTINGS = VerdictSettings()


@dataclass(frozen=True)
class SideRun:
    """One traced process run: its end-to-end samples and its ETDump (absolute path, if any)."""

    label: str
    execute_ms: tuple[float, ...]
    etdump: Path | None
    llm: LlmRunFigures | None = None  # an LLM's generations: TTFT and decode verdicts (llm_metrics.py)
    clean: tuple[bool, ...] | None = None  # per execution of the run: it waited for no CPU (None: not measured)
    dropped: int = 0  # executions left out of `execute_ms` as contended
    samples_file: Path | None = None  # its run directory's samples file (results/samples.py), when it has one


@dataclass(frozen=True)
class Side:
    """One model on one device, over one or more jobs; `missing` says why there is no data."""

    source: str  # run id(s), for people
    device: str
    model: str
    runs: tuple[SideRun, ...] = ()
    missing: str | None = None
    blame: Blame | None = None
    verification: VerificationStatus | None = None
    op_samples: OpSamples | None = None  # per-op samples in memory; None: read from the runs' ETDumps
    settings: Settings = ()  # what it ran with (likeness.py); () unknown: compared with anything
    incomplete: str | None = None  # why the side is not whole (an interrupted job, a partial model), if it is not
    accuracy: Accuracy | None = None  # a recipe's outputs against the fp32 eager model (verdicts/accuracy.py)
    identities: SideIdentities = ()  # each event's op identity, from its run's stats.csv (op_samples.py keys)
    memory: ModelMemory | None = None  # memory by owner and the peak RSS (verdicts/memory.py)
    program: str | None = None  # the program it ran (its .pte in the run directory, else the spec): `run --ab` settles

    @property
    def e2e(self) -> list[tuple[float, ...]]:
        return [r.execute_ms for r in self.runs]

    @property
    def load(self) -> Load | None:
        """How contended its executions were (trust.py); None when no run measured it (an old manifest)."""
        measured = [r for r in self.runs if r.clean is not None]
        if not measured:
            return None
        return Load(sum(r.clean.count(False) for r in measured if r.clean), sum(len(r.clean or ()) for r in measured))

    @property
    def dropped(self) -> int:
        return sum(r.dropped for r in self.runs)


def side_from_job(root: str | Path, job: Job, device: str, model: str, labels: Sequence[str] | None = None) -> Side:
    """The traced runs of `model` on `device` in the job at `root` (optionally only `labels`)."""
    root = Path(root)
    dev = job.device(device)
    if dev is None:
        return Side(job.run_id, device, model, missing=f"device {device} is not in run {job.run_id}", blame=Blame.USAGE)
    result = dev.model(model)
    if result is None or result.status is ModelStatus.FAILED or not result.traced_runs:
        why = (result.error if result and result.error else None) or dev.error or "no process run completed"
        blame = (result.blame if result and result.blame else None) or dev.blame or Blame.INFRASTRUCTURE
        return Side(job.run_id, device, model, missing=why, blame=blame)
    # no execution of the model clean: every one is kept, as its reported figures keep them (results.py)
    every = not any(r.clean_execute_ms for r in result.traced_runs)
    runs = tuple(_side_run(root, r, every) for r in result.traced_runs if labels is None or r.label in labels)
    return Side(job.run_id, device, model, runs, verification=_verification(result),
                settings=model_settings(job, model, device), incomplete=side_gap(job, device, model),
                accuracy=result.accuracy, identities=side_identities(root, device, model), memory=result.memory,
                program=_program(root, job, model))


def _side_run(root: Path, run: ProcessRun, every: bool = False) -> SideRun:
    """A process run as verdicts use it: its clean executions only when the runner measured contention
    (results/contention.py: `ProcessRun.clean`); every execution of a run recorded before that, or (`every`) of a model
    none of whose executions was clean."""
    etdump = next((root / a for a in run.artifacts if Path(a).name == ETDUMP_NAME), None)
    etdump = etdump if etdump is not None and etdump.is_file() else None
    recorded = root / SAMPLES if (root / SAMPLES).is_file() else None
    if every or run.contention is None or not run.contention.wait_ms:  # every execution counts, none is dropped
        return SideRun(run.label, run.execute_ms, etdump, run.llm, samples_file=recorded)
    kept = run.clean_execute_ms
    return SideRun(run.label, kept, etdump, run.llm, run.clean, len(run.execute_ms) - len(kept), recorded)


def _program(root: Path, job: Job, model: str) -> str | None:
    """The program a side ran, for the command that settles it: its .pte kept in the run directory, else its spec."""
    found = job.model_artifacts(model)
    if found is None:
        return None
    pte = root / found.pte if found.pte else None
    return str(pte) if pte is not None and pte.is_file() else found.spec


def _verification(result: ModelResult) -> VerificationStatus | None:
    return result.verification.status if result.verification else None


def pool(sides: Iterable[Side]) -> Side:
    """One side from several jobs of the same device and model: their runs together."""
    sides = list(sides)
    with_data = [s for s in sides if s.missing is None]
    first = sides[0]
    if not with_data:
        return first
    fail = any(s.verification is VerificationStatus.FAIL for s in with_data)
    gaps = [s.incomplete if len(sides) == 1 else f"{s.source}: {s.incomplete}" for s in with_data if s.incomplete]
    return Side("+".join(s.source for s in sides), first.device, first.model,
                tuple(r for s in with_data for r in s.runs),
                verification=VerificationStatus.FAIL if fail else with_data[-1].verification,
                settings=with_data[0].settings, incomplete="; ".join(gaps) or None, accuracy=with_data[-1].accuracy,
                identities=with_data[-1].identities, memory=with_data[-1].memory, program=with_data[-1].program)


@dataclass(frozen=True)
class OpVerdict:
    event_block: str
    event_index: int
    event_name: str
    verdict: Verdict
    estimate: Estimate
    p_adjusted: float
    module_path: str = ""  # where the op is in the user's model (B's stats.csv; '' when unknown or the model itself)
    source_line: str = ""
    op: str = ""  # the op's identity, as people read it (`features.3 convolution`): what both sides were joined by
    op_basis: str = ""  # how much the identity knows (op_identity.py: model, delegate, event)
    detectable: float = math.nan  # the smallest change its samples could detect (trust.py)
    blind: str | None = None  # why it could not be judged, when inconclusive (trust.py)

    def to_dict(self) -> dict[str, Any]:
        return {"event_block": self.event_block, "event_index": self.event_index, "event_name": self.event_name,
                "op": self.op, "op_basis": self.op_basis, "verdict": self.verdict.value, "p_adjusted": self.p_adjusted,
                "module_path": self.module_path, "source_line": self.source_line, "detectable": _finite(self.detectable),
                "could_not_judge": self.blind, **self.estimate.to_dict()}


def _finite(value: float) -> float | None:
    return None if math.isnan(value) else value


@dataclass(frozen=True)
class PairVerdict:
    """B against A for one device: end to end, then per op."""

    device: str
    model_a: str
    model_b: str
    verdict: Verdict
    estimate: Estimate | None = None
    threshold: float = 0.0
    op_threshold: float = 0.0
    ops: tuple[OpVerdict, ...] = ()
    ops_skipped: int = 0  # events too fast to time (median 0) or missing on one side
    reason: str | None = None  # why there is no data
    blame: Blame | None = None
    verification_failed: bool = False  # B's outputs did not match the reference
    source_a: str = ""  # run id(s) of A and B
    source_b: str = ""
    noise: NoiseFloor | None = None  # the noise floor behind `threshold`/`op_threshold`, and whence
    dir_a: Path | None = None  # the run directories compared (for the structure diff and links; not serialised)
    dir_b: Path | None = None
    metrics: tuple[MetricVerdict, ...] = ()  # an LLM's TTFT and decode tokens/s (llm_metrics.py)
    differences: tuple[SettingDifference, ...] = ()  # settings A and B ran with differently: verdict settings-differ
    incomplete: tuple[IncompleteSide, ...] = ()  # sides that are not whole (interrupted, partial)
    below: BelowThreshold | None = None  # a confident change end to end under the threshold (not a regression)
    series: Any = None  # series.SeriesVerdict: the night against its series' reference (nightly only)
    accuracy: AccuracyVerdict | None = None  # B's accuracy against A's (a recipe's), judged on its own
    memory: MemoryVerdict | None = None  # B's peak RSS against A's (verdicts/memory.py), judged on its own
    detectable: float = math.nan  # the smallest change end to end its samples could detect (trust.py)
    blind: str | None = None  # why it could not judge, when inconclusive ("too noisy: could see >= 14 %")
    settle: str | None = None  # the command that would settle it (`etfarm run --ab ...`), when inconclusive
    loads: tuple[Load | None, Load | None] = (None, None)  # A's and B's contention (None: not measured)
    dropped: tuple[int, int] = (0, 0)  # contended executions left out of A's and B's statistics
    figures: tuple[SideFigures | None, SideFigures | None] = (None, None)  # A's and B's p50 and trimmed mean

    @property
    def unjudged(self) -> bool:
        """Measured, yet not judged: end to end inconclusive (the night or compare exits 3 unless something regressed)."""
        return self.verdict is Verdict.INCONCLUSIVE

    @property
    def accuracy_dropped(self) -> bool:
        return self.accuracy is not None and self.accuracy.dropped

    @property
    def memory_grew(self) -> bool:
        return self.memory is not None and self.memory.grew

    @property
    def model(self) -> str:
        return self.model_b if self.model_a == self.model_b else f"{self.model_a} -> {self.model_b}"

    @property
    def regressed_ops(self) -> tuple[OpVerdict, ...]:
        return tuple(o for o in self.ops if o.verdict is Verdict.REGRESSED)

    @property
    def regressed(self) -> bool:
        """A regression end to end, in any op or in an LLM metric (never for a pair without data)."""
        return (self.verdict is Verdict.REGRESSED or bool(self.regressed_ops)
                or any(m.verdict is Verdict.REGRESSED for m in self.metrics)
                or (self.series is not None and self.series.regressed))

    def to_dict(self) -> dict[str, Any]:
        return {"device": self.device, "model_a": self.model_a, "model_b": self.model_b, "verdict": self.verdict.value,
                "estimate": self.estimate.to_dict() if self.estimate else None, "threshold": self.threshold,
                "op_threshold": self.op_threshold, "regressed": self.regressed, "ops_skipped": self.ops_skipped,
                "reason": self.reason, "blame": self.blame.value if self.blame else None,
                "verification_failed": self.verification_failed, "source_a": self.source_a,
                "source_b": self.source_b, "noise_floor": self.noise.to_dict() if self.noise else None,
                "metrics": [m.to_dict() for m in self.metrics],
                "settings_differ": [d.to_dict() for d in self.differences],
                "incomplete": [i.to_dict() for i in self.incomplete],
                "below_threshold": self.below.to_dict() if self.below else None,
                "series": self.series.to_dict() if self.series is not None else None, "ops": [o.to_dict() for o in self.ops],
                "accuracy": self.accuracy.to_dict() if self.accuracy else None, "accuracy_dropped": self.accuracy_dropped,
                "memory": self.memory.to_dict() if self.memory else None, "memory_grew": self.memory_grew,
                "detectable": _finite(self.detectable), "could_not_judge": self.blind, "settle": self.settle,
                "contention": {"a": self.loads[0].to_dict() if self.loads[0] else None,
                               "b": self.loads[1].to_dict() if self.loads[1] else None,
                               "dropped_a": self.dropped[0], "dropped_b": self.dropped[1]},
                "figures": {"a": self.figures[0].to_dict() if self.figures[0] else None,
                            "b": self.figures[1].to_dict() if self.figures[1] else None}}


@dataclass(frozen=True)
class Comparison:
    """Every pair's verdict, B against A, with the settings that made them."""

    a: str
    b: str
    settings: VerdictSettings
    pairs: tuple[PairVerdict, ...] = field(default_factory=tuple)

    @property
    def regressed(self) -> bool:
        return any(p.regressed for p in self.pairs)

    @property
    def verification_failed(self) -> bool:
        return any(p.verification_failed for p in self.pairs)

    @property
    def accuracy_dropped(self) -> bool:
        return any(p.accuracy_dropped for p in self.pairs)

    @property
    def memory_grew(self) -> bool:
        return any(p.memory_grew for p in self.pairs)

    @property
    def no_data(self) -> tuple[PairVerdict, ...]:
        return tuple(p for p in self.pairs if p.verdict is Verdict.NO_DATA)

    @property
    def complete(self) -> bool:
        """Every pair was measured (no `no-data`)."""
        return not self.no_data

    @property
    def inconclusive(self) -> bool:
        return any(p.verdict is Verdict.INCONCLUSIVE for p in self.pairs)

    @property
    def unjudged(self) -> tuple[PairVerdict, ...]:
        """Pairs measured but not judged (inconclusive end to end): the comparison cannot say "no regression"."""
        return tuple(p for p in self.pairs if p.unjudged)

    @property
    def exit_code(self) -> int:
        """1 a regression (or B's outputs wrong, its accuracy dropped or its memory grew); else 3 when a pair could not
        be judged (inconclusive: trust.py says why); else 0."""
        if self.regressed or self.verification_failed or self.accuracy_dropped or self.memory_grew:
            return EXIT_REGRESSION
        return EXIT_UNJUDGED if self.unjudged else EXIT_OK

    @property
    def headline(self) -> str:
        """One line: what the comparison found; never "no regression" over a pair it could not judge."""
        regressed = sum(1 for p in self.pairs if p.regressed)
        blind = len(self.unjudged)
        parts = [f"{regressed} regressed"] if regressed else []
        parts += [f"could not judge {blind} of {len(self.pairs)} pair(s)"] if blind else []
        return "; ".join(parts) if parts else "no regression"

    def to_dict(self) -> dict[str, Any]:
        return {"a": self.a, "b": self.b, "settings": self.settings.to_dict(),
                # what each estimate's median_a_ms / median_b_ms is (not a report's p50: an estimator of its own)
                "statistic": statistic_name(self.settings.center), "regressed": self.regressed,
                "headline": self.headline, "could_not_judge": len(self.unjudged),
                "accuracy_dropped": self.accuracy_dropped, "memory_grew": self.memory_grew, "exit_code": self.exit_code,
                "pairs": [p.to_dict() for p in self.pairs]}


def compare_sides(a: Side, b: Side, settings: VerdictSettings = DEFAULT_SETTINGS, per_op: bool = True,
                  noise: NoiseFloor | None = None) -> PairVerdict:
    """The verdict of B against A (see statistics.py for the method).

    `noise`: this pair's noise floor (e.g. from stored history); it replaces `settings.noise_floor`.
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
    est = estimate(a.e2e, b.e2e, confidence=settings.confidence, resamples=settings.resamples, seed=settings.seed,
                   center=settings.center)
    if est is None:
        return PairVerdict(verdict=Verdict.NO_DATA, reason="no end-to-end samples", blame=Blame.INFRASTRUCTURE, **base)
    separate = settings.job_shift > 0 and _separate_jobs(a, b, noise)
    est = widened(est, settings.confidence, settings.job_shift) if separate else est
    # Sides of one interleaved job (run --ab, a night's confirmation) ran under the same load by construction:
    # shares that differ there are the programs' (a longer execution is preempted more often), not the load's,
    # and the rule that sends a pair to `run --ab` must not refuse run --ab's own verdict.
    loads = (a.load, b.load) if a.source != b.source else (None, None)
    trust = judged(decide(est, est.p_value, threshold, settings.alpha, settings.threshold), est,
                   settings.threshold, settings.alpha, settings.confidence, loads, settings.noise_floor)
    verdict = trust.verdict
    try:
        ops, skipped = _op_verdicts(a, b, settings, op_threshold, loads, separate) if per_op else ((), 0)
    except DataError as exc:  # a corrupt or foreign ETDump: this pair has no data, the others keep their verdicts
        return PairVerdict(verdict=Verdict.NO_DATA, reason=f"per-op samples unreadable: {one_line(str(exc))}",
                           blame=Blame.DATA, **base)
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
                       accuracy=accuracy, memory=memory, **base, **_trust_fields(trust, a, b))


def _separate_jobs(a: Side, b: Side, noise: NoiseFloor | None) -> bool:
    """Sides from separate jobs (not one interleaved job) with no measured job-to-job floor: with
    `settings.job_shift` (compare's default: trust.JOB_SHIFT_SD) their intervals carry that job-level shift."""
    return a.source != b.source and (noise is None or noise.floor is None)


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
    a_samples, b_samples = joined(_per_op_runs(a), _per_op_runs(b))
    a_ops, b_ops = a_samples.ops, b_samples.ops
    keys = [k for k in b_ops if k in a_ops]
    skipped = len(set(a_ops) ^ set(b_ops))
    estimates: list[tuple[OpKey, Estimate]] = []
    found = estimate_many([(a_ops[key][1], b_ops[key][1]) for key in keys], confidence=settings.confidence,
                          resamples=settings.resamples, seed=settings.seed, center=settings.center)
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
                             op_basis=key[1].basis, detectable=trust.detectable, blind=trust.blind))
    return tuple(ops), skipped


def _tick(*sides: Sequence[Any]) -> float:
    """The op's timer tick as its samples show it: the smallest step between distinct sample values (0: none)."""
    import numpy as np

    values = [np.asarray(r, dtype=np.float64) for runs in sides for r in runs if len(r)]
    found = np.unique(np.round(np.concatenate(values), 9)) if values else np.array([])
    steps = np.diff(found)
    return float(steps[steps > 0].min()) if steps.size and (steps > 0).any() else 0.0


@lru_cache(maxsize=128)  # a side is compared many times in benchmarks and --until-confident rounds
def _per_op_runs(side: Side) -> OpSamples:
    """(event_block, op identity) -> (event_index, one array of samples per run), operators only."""
    if side.op_samples is not None:
        return side.op_samples
    if side.runs and all(r.samples_file is not None for r in side.runs):
        found = recorded_op_samples([(r.samples_file, r.label) for r in side.runs if r.samples_file is not None],
                                    side.device, side.model, dict(side.identities))
        if found is not None:
            return clean_ops(found, [r.clean for r in side.runs])
    # A run directory written before samples.npz (or a model whose samples it lacks): the runs' ETDumps, read again.
    traced = [r for r in side.runs if r.etdump is not None]
    found = read_op_samples([r.etdump for r in traced], dict(side.identities)) if traced else OpSamples({})
    return clean_ops(found, [r.clean for r in traced])


def clean_ops(found: OpSamples, masks: Sequence[tuple[bool, ...] | None]) -> OpSamples:
    """Each op's samples of the clean executions only, run by run, where the run's mask lines up with the op's
    samples (one per execution); an op that runs several times per execution keeps every sample."""
    if not any(m is not None and not all(m) for m in masks):
        return found
    import numpy as np

    ops = {}
    for key, (index, runs) in found.ops.items():
        kept = [r[np.asarray(m)] if m is not None and len(m) == len(r) else r
                for r, m in zip(runs, list(masks) + [None] * (len(runs) - len(masks)), strict=False)]
        ops[key] = (index, kept)
    return OpSamples(ops, found.names)


Baseline = tuple[Path, Job]  # a run directory and its results model
BaselineFinder = Callable[[str, str], "Baseline | None"]  # (device, model) -> the run to compare with


def compare_jobs(a_dir: str | Path, b_dir: str | Path, settings: VerdictSettings = DEFAULT_SETTINGS,
                 per_op: bool = True) -> Comparison:
    """Every (device, model) of B against the same (device, model) of A, matched by name (some must match)."""
    job_a = load_manifest(a_dir)
    check_common(Path(a_dir), job_a, Path(b_dir), load_manifest(b_dir))
    return compare_against(b_dir, lambda device, model: (Path(a_dir), job_a), settings, per_op, a_label=job_a.run_id)


def compare_against(b_dir: str | Path, baseline: BaselineFinder, settings: VerdictSettings = DEFAULT_SETTINGS,
                    per_op: bool = True, a_label: str = "baseline", noise: NoiseFinder | None = None) -> Comparison:
    """Every (device, model) of the run at `b_dir` against the run `baseline(device, model)` names.

    A pair whose baseline does not hold that (device, model) at all is `new` (it becomes the
    baseline); one whose baseline or B side failed is `no-data`. `noise(device, model)`, when
    given, is each measured pair's noise floor (baseline.history_noise_finder)."""
    job_b = load_manifest(b_dir)
    where = ops_where(Path(b_dir))
    pairs = []
    for device in job_b.devices:
        for model in [m.name for m in device.models] or list(_job_model_names(job_b)):
            side_b = side_from_job(b_dir, job_b, device.name, model)
            found = baseline(device.name, model)
            if side_b.missing is None and (found is None or not _holds(found[1], device.name, model)):
                pairs.append(PairVerdict(device.name, model, model, Verdict.NEW, source_b=job_b.run_id,
                                         reason="no baseline yet: this run becomes it",
                                         verification_failed=side_b.verification is VerificationStatus.FAIL,
                                         dir_b=Path(b_dir)))  # its page's trust notes come from B's run
                continue
            side_a = (side_from_job(found[0], found[1], device.name, model) if found is not None
                      else Side(a_label, device.name, model, missing="no baseline", blame=Blame.USAGE))
            measured = side_a.missing is None and side_b.missing is None
            floor = noise(device.name, model) if noise is not None and measured else None
            pair = compare_sides(side_a, side_b, settings, per_op, floor)
            pairs.append(replace(pair, dir_a=Path(found[0]) if found is not None else None, dir_b=Path(b_dir),
                                 ops=located(pair.ops, where.get((device.name, model), {}))))
    return Comparison(a_label, job_b.run_id, settings, tuple(pairs))



def check_common(a_dir: Path, job_a: Job, b_dir: Path, job_b: Job) -> None:
    """A named A and B must share some (device, model): else every pair would be `new` (exit 0), an answer to a
    question nobody asked. A usage error naming both sides."""
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
