"""What a device's stored jobs show of its speed states: how far apart whole processes of one program have run.

Why (issue 37; benchmarks/README.md "Live on the second VM"): on some machines a runner process settles for its
life in one of a few speed states (the testbed's MLP at 1.4x and 2x, tiny_cnn on the second VM at 1.1-2.1x), and
now and then a whole job lands in a slower one. No statistic of one job a side can tell such a job from a slower
program: its runs agree with each other, its load, CPU share and a timed probe look like any other job's. Beside
a BLAS neighbour 2 of 60 `compare` pairs of identical tiny_cnn jobs read `regressed 1.405x`. What can tell is the
device's past: if its jobs have shown processes of one program running up to `span` apart, a change between two
separate jobs that a state step could make is not a change anyone can claim from them (trust.state_step).

Method: each stored job of the model on the device (its series: the model's name), newest first up to WINDOW, gives
its traced process runs' medians; states are the device's and the program's together (the MLP's are not tiny_cnn's).
A job whose runs split into states (states.splits: two runs or more at least 1.2x above a fastest state of two runs
or more) shows them; its span is the ratio of its slowest state holding two runs or more to its fastest. One such
job is enough (the pair's own two sides count too: a state step needs no second witness to make a false alarm);
the span is the largest seen. Measured on the noise corpora (tiny_cnn, five environments): on the first VM no
separate job split (0 of 70), while the sides of interleaved jobs beside a BLAS or bursty neighbour did (20 of 80,
spans 1.54-1.68x); on the second VM 54 of 150 sides split, spans up to 2.07x.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from orchestrator.base.codec import SKIP, named
from orchestrator.verdicts.states import SPLIT, splits, states_of

WINDOW = 60  # the newest stored jobs of a (device, model) that are read
MIN_SPLIT_JOBS = 1  # jobs whose runs split before a (device, model) is said to have speed states


@dataclass(frozen=True)
class DeviceStates:
    """A (device, model)'s speed states as its jobs showed them: `split` of `seen` jobs split, up to `span` apart."""

    device: str
    span: float = 1.0  # the largest ratio between a job's slowest state (two runs or more) and its fastest
    split: int = field(default=0, metadata=named("jobs_split"))
    seen: int = field(default=0, metadata=named("jobs_seen"))
    jobs: tuple[str, ...] = field(default=(), metadata=SKIP)  # the jobs seen: one seen again is not counted twice

    @classmethod
    def nothing_seen(cls, device: str) -> DeviceStates:
        """Nothing known yet of the device's states (no store): a pair's own runs may still show them."""
        return cls(device)

    def describe(self) -> str:
        return (f"{self.device} has run whole processes of this model up to {self.span:.2f}x apart "
                f"(speed states in {self.split} of {self.seen} jobs)")


def state_span(medians: Sequence[float]) -> float | None:
    """The span of one job's process runs of a model when they split into states (module docstring), else None."""
    if not splits(medians):
        return None
    found = states_of(medians)
    if found is None:
        return None
    held = [level for level, count in zip(found.levels, found.counts, strict=True) if count >= 2]
    span = math.exp(max(held) - found.levels[0])
    return span if span >= math.exp(SPLIT) else None  # the runs that split were states of one run each


def device_states(known: DeviceStates, jobs: Iterable[tuple[str, Sequence[float]]]) -> DeviceStates:
    """`known` with what more jobs show: (job, its process runs' medians) each, a job already seen counted once."""
    span, split, looked = known.span, known.split, list(known.jobs)
    for job, medians in jobs:
        if job in looked:
            continue
        looked.append(job)
        found = state_span(medians)
        if found is not None:
            span, split = max(span, found), split + 1
    return DeviceStates(known.device, span, split, known.seen + len(looked) - len(known.jobs), tuple(looked))


def has_states(states: DeviceStates) -> bool:
    return states.split >= MIN_SPLIT_JOBS
