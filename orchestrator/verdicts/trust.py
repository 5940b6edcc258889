"""What a verdict could have seen, and when it must not judge (issue 37, items 3 and 4).

Every estimate has a smallest change its samples could have detected: the change a two-sided test at `alpha`
would find with 80 % power, read from the estimate's own interval (its width is the standard error the method
measured, process runs as the unit, whatever the statistic): in log space, se = width / (2 z(confidence)) and
the detectable change is exp(se (z(1 - alpha/2) + z(0.80))) - 1. A pass needs that change to be within the
threshold: a comparison too noisy to see a change of the threshold's size is `inconclusive` ("too noisy: could
see >= 14 %"), never `unchanged`.

Sides measured under materially different contention (the share of executions that waited for a CPU, from the
runner's run-queue wait: results/contention.py) are `inconclusive` whatever their ratio, regressed and improved
included: the difference may be the load's. Materially different: the shares differ by at least
LOAD_POINTS (absolute) AND one is at least LOAD_FACTOR times the other (3 % against 41 % is; 40 % against 48 %
is not). Sides without contention data (manifests before it was measured) are judged as before.

Between separate jobs, an op's verdict stands only where the end-to-end verdict does: a pair that could not be
judged end to end (too noisy, speed states that may not match, a floor too large) holds back its ops' `regressed`
and `improved` as `inconclusive` (`held_back`; the op keeps what its own samples said in `held`). Why: a job moves
its ops further than itself. On a second noise corpus (2026-11-28, a new VM whose processes settle in a fast state
or one 1.9x slower), a job wholly in the slow state beside a BLAS neighbour ran tiny_cnn 1.66x slower end to end
and its max_pool2d 2.3x slower; each op's runs agreed, so its own interval was narrow ([1.99, 2.71]), and 5 of 30
`compare` pairs of identical jobs were `regressed` on an op alone while their end-to-end verdicts said they could
not judge. One interleaved job (`run --ab`, a night's confirmation) has no job between its sides: nothing is held.

Between separate jobs on a device whose jobs of this model have shown speed states (device_states.py), a `regressed`
or `improved` that a whole job landing in another state could make (the interval reaches within the device's
span, plus the threshold) is `inconclusive` (`state_step`): no statistic of one job a side tells such a job from a
changed program (beside a BLAS neighbour on the second VM, 2 of 60 `compare` pairs of identical jobs read
`regressed 1.405x`). A change beyond the span stands, and so does `unchanged`: for a change to read as none, a real
change would have to be cancelled exactly by a state step.

An `inconclusive` pair says how to settle it (`settle_command`): `etfarm run --ab A B` runs both programs
interleaved on one device in one job (A B B A ...), so both sides see the same load.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from statistics import NormalDist
from typing import Any, ClassVar, TypeVar

from orchestrator.base.codec import Layout
from orchestrator.verdicts.device_states import DeviceStates, has_states
from orchestrator.verdicts.statistics import Estimate, Verdict

POWER = 0.80
# Two separate jobs (not interleaved) each land at their own level: the machine's load, heat and placement move a
# whole job. On the noise corpus the standard deviation of the job statistic between identical jobs was 1.3-5.4 %
# (benchmarks/README.md "Trust"), beyond what either job's process runs show; unseen, it made 10 % of compare pairs
# of identical jobs `regressed`. With no measured job-to-job floor (history), a comparison of separate jobs adds
# this much per side to its interval, in quadrature: what `compare` cannot know, it does not claim. `etfarm compare`
# and the nightly set it (VerdictSettings.job_shift; a night's series with a measured replicate floor uses that
# instead: beside a BLAS neighbour a night's series of 2 jobs said `regressed 1.083x` of an unchanged model without
# it); `run --ab` and a night's interleaved confirmation (one job) need none.
JOB_SHIFT_SD = 0.05
# A job-to-job noise floor this large (issue 37 saw an automatic floor climb to 75-108 % on a loaded host) leaves a
# pass meaningless: replicate jobs of one program differ by half again. Such a pair is not judged (only a change
# beyond the floor, which cleared the raised bar, stands).
BLIND_FLOOR = 0.50
LOAD_POINTS = 0.10  # contended shares at least 10 points apart ...
LOAD_FACTOR = 2.0  # ... and one at least twice the other: "measurably different contention"


@dataclass(frozen=True)
class Load:
    """How contended one side's executions were: `contended` of `measured` waited for a CPU (clean: none did)."""

    contended: int
    measured: int

    @property
    def share(self) -> float:
        return self.contended / self.measured if self.measured else 0.0

    LAYOUT: ClassVar[Layout] = Layout(derived=("share",))


@dataclass(frozen=True)
class Judged:
    """A verdict after the trust rules: the verdict, the detectable change, and why it could not judge."""

    verdict: Verdict
    detectable: float  # the smallest relative change these samples could detect (0.14: 14 %); nan: unknown
    blind: str | None = None  # why the pair could not be judged ("too noisy: could see >= 14 %"), else None


def detectable_change(est: Estimate | None, alpha: float, confidence: float) -> float:
    """The smallest relative change (either way) these samples could detect at `alpha` with 80 % power; nan when the
    estimate has no finite interval."""
    if est is None or not (est.ci_low > 0 and est.ci_high > 0) or math.isnan(est.ci_low + est.ci_high):
        return math.nan
    normal = NormalDist()
    se = (math.log(est.ci_high) - math.log(est.ci_low)) / (2 * normal.inv_cdf(0.5 + confidence / 2))
    return math.exp(se * (normal.inv_cdf(1 - alpha / 2) + normal.inv_cdf(POWER))) - 1


def widened(est: Estimate | None, confidence: float, sd: float = JOB_SHIFT_SD) -> Estimate | None:
    """`est` with each side's job-level shift (`sd`, log scale) added to its interval in quadrature."""
    if est is None or not (est.ci_low > 0 and est.ci_high > 0 and est.ratio > 0):
        return est
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    extra = (z * sd) ** 2 * 2
    low = est.ratio * math.exp(-math.sqrt(math.log(est.ratio / est.ci_low) ** 2 + extra))
    high = est.ratio * math.exp(math.sqrt(math.log(est.ci_high / est.ratio) ** 2 + extra))
    return replace(est, ci_low=min(low, est.ci_low), ci_high=max(high, est.ci_high))


def loads_differ(a: Load | None, b: Load | None) -> bool:
    """Whether the sides ran under measurably different contention (module docstring)."""
    if a is None or b is None or not a.measured or not b.measured:
        return False
    low, high = sorted((a.share, b.share))
    return high - low >= LOAD_POINTS and high >= LOAD_FACTOR * low


def describe_loads(a: Load, b: Load) -> str:
    return (f"measured under different load: A {a.share:.0%} of executions contended, "
            f"B {b.share:.0%}")


def judged(verdict: Verdict, est: Estimate | None, threshold: float, alpha: float, confidence: float,
           loads: tuple[Load | None, Load | None] = (None, None), floor: float = 0.0) -> Judged:
    """`verdict` (statistics.decide's) under the trust rules: different load first, then a pass too noisy to be one.
    A regression or improvement whose interval clears the threshold stands however noisy the samples: it was seen."""
    detectable = detectable_change(est, alpha, confidence)
    if verdict not in (Verdict.REGRESSED, Verdict.IMPROVED, Verdict.UNCHANGED, Verdict.INCONCLUSIVE):
        return Judged(verdict, detectable)
    if loads_differ(*loads):
        return Judged(Verdict.INCONCLUSIVE, detectable, describe_loads(*loads))  # type: ignore[arg-type]
    if floor >= BLIND_FLOOR and verdict in (Verdict.UNCHANGED, Verdict.INCONCLUSIVE):
        return Judged(Verdict.INCONCLUSIVE, detectable, f"replicate jobs differ by up to {floor:.0%} (the noise floor): "
                      "cannot judge a change below that")
    too_noisy = not detectable <= threshold  # nan (no interval) is too noisy too
    if verdict is Verdict.UNCHANGED and too_noisy:
        return Judged(Verdict.INCONCLUSIVE, detectable, f"too noisy: could see >= {_percent(detectable)}")
    if verdict is Verdict.INCONCLUSIVE:
        why = (f"too noisy: could see >= {_percent(detectable)}" if too_noisy
               else f"near the {threshold:.0%} threshold (could see >= {_percent(detectable)})")
        return Judged(verdict, detectable, why)
    return Judged(verdict, detectable)


def state_step(trust: Judged, est: Estimate | None, threshold: float, states: DeviceStates | None) -> Judged:
    """`trust` between separate jobs on a device with speed states (module docstring): a change a whole job in
    another state could make is `inconclusive`, naming the states; anything else stands."""
    if est is None or trust.verdict not in (Verdict.REGRESSED, Verdict.IMPROVED) or not within_states(est, threshold,
                                                                                                       states):
        return trust
    assert states is not None  # within_states says so
    return Judged(Verdict.INCONCLUSIVE, trust.detectable,
                  f"{trust.verdict.value} {est.ratio:.3f}x, but {states.describe()}: a whole job in another state "
                  f"reads as a change within {_state_reach(states, threshold):.2f}x")


def within_states(est: Estimate, threshold: float, states: DeviceStates | None) -> bool:
    """Whether a whole job (or one side of a job) landing in another of the device's speed states could make `est`:
    its interval reaches within the states' span, plus the threshold."""
    if states is None or not has_states(states):
        return False
    reach = _state_reach(states, threshold)
    return not (est.ci_low > reach or est.ci_high < 1 / reach)


def _state_reach(states: DeviceStates, threshold: float) -> float:
    """The largest ratio a whole job in another of the device's speed states can make, plus the threshold."""
    return states.span * (1 + threshold)


def _percent(value: float) -> str:
    if math.isnan(value):
        return "nothing (no interval)"
    return f"{value:.0%}" if value >= 0.095 else f"{value:.1%}"


def settle_command(spec_a: str | None, spec_b: str | None, device: str, runs: int = 20) -> str:
    """The command that would settle an inconclusive pair: both programs interleaved on the device in one job."""
    import shlex

    a = shlex.quote(spec_a) if spec_a else "A.pte"
    b = shlex.quote(spec_b) if spec_b else "B.pte"
    return f"etfarm run --ab {a} {b} --devices {shlex.quote(device)} --runs {runs} --until-confident"


Op = TypeVar("Op", bound=Any)  # pair_verdicts.OpVerdict (which imports this module)


def held_back(op: Op, why: str | None) -> Op:
    """An op of separate jobs whose end-to-end verdict could not judge them (module docstring): a change it found is
    `inconclusive`, with what its samples said kept in `held`; other verdicts stand."""
    if op.verdict not in (Verdict.REGRESSED, Verdict.IMPROVED):
        return op
    return replace(op, verdict=Verdict.INCONCLUSIVE, held=op.verdict,
                   blind=f"{op.verdict.value} {op.estimate.ratio:.3f}x on its own, but the jobs could not be judged "
                         f"end to end ({why or 'inconclusive'}): a job moves an op further than itself")
