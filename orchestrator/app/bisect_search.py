"""`etfarm bisect`'s search: which commit of a range first made the program slower, from probes of commits.

Pure logic over a probe (commit index -> `Step`), so the rule is tested on recorded outcomes and the
benchmark can simulate ranges of hundreds of commits. BAD is probed first: when it is not slower than GOOD
there is nothing to search (exit 1), when its probe cannot tell, nothing can be decided (exit 3). Then
the range between the last commit known good and the first known bad halves at each probe, as `git bisect`
does. A commit that cannot be judged (its export or run failed: `skipped`; its verdict stayed
`inconclusive` after every run allowed) is set aside like `git bisect skip`, and the probe moves to the
untried commit nearest the middle. When only set-aside commits separate good from bad, the culprit is one of
them and the search says which (exit 3). A budget of measured commits ends the search early, saying so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import ClassVar

from orchestrator.base.codec import Layout


class Outcome(StrEnum):
    SLOWER = "slower"  # regressed against GOOD: this commit or an earlier one is the culprit
    NOT_SLOWER = "not-slower"  # unchanged or improved: the culprit is later
    UNDECIDED = "inconclusive"  # could not tell, even with more runs
    SKIPPED = "skipped"  # failed to export or run


@dataclass(frozen=True)
class Step:
    """A commit probed: what its program did against GOOD's."""

    sha: str
    subject: str
    outcome: Outcome
    verdict: str  # the A/B verdict as the table prints it (regressed, unchanged, same program as ..., skipped)
    ratio: float | None = None  # the commit's program against GOOD's (B / A)
    ci_low: float | None = None
    ci_high: float | None = None
    measured: bool = False  # an A/B job ran for this step (not: a program already measured, or skipped)
    reason: str = ""  # why skipped, or whose measurement it reuses
    pte: str = ""  # sha256 of the commit's program
    page: str = ""  # its A/B page (the measured step's, for a reused one)
    run_ids: tuple[str, ...] = ()
    resumed: bool = False  # taken from the store (--resume), not measured in this bisect

    LAYOUT: ClassVar[Layout] = Layout(raw_floats=True)


class Reason(StrEnum):
    FOUND = "found"
    NO_REGRESSION = "no regression between good and bad"
    ALL_SKIPPED = "every candidate skipped"
    TOO_NOISY = "too noisy"
    BUDGET = "budget ran out"
    INTERRUPTED = "interrupted"


@dataclass(frozen=True)
class Search:
    """Where the search ended: the culprit's index (None: not named), why, the steps in probe order, and the
    commits the culprit lies among (indices, oldest first) when it could not be narrowed to one."""

    culprit: int | None
    reason: Reason
    steps: tuple[Step, ...]
    suspects: tuple[int, ...] = ()

    @property
    def exit_code(self) -> int:
        if self.culprit is not None:
            return 0
        return 1 if self.reason is Reason.NO_REGRESSION else 3


class Stop(Exception):
    """Raised by a probe when the bisect must end now (Ctrl-C stopped its job): the steps so far stand."""


def search(count: int, probe: Callable[[int], Step], *, budget: int | None = None,
           measured: Callable[[], int] | None = None) -> Search:
    """Bisect commits 0..count-1 (count-1 is BAD; GOOD is index -1). `budget`: at most that many commits
    measured (`measured()` counts them: reused programs and skips cost nothing)."""
    steps: list[Step] = []

    def ask(index: int) -> Step:
        steps.append(probe(index))
        return steps[-1]

    try:
        first = ask(count - 1)
        if first.outcome is Outcome.NOT_SLOWER:
            return Search(None, Reason.NO_REGRESSION, tuple(steps))
        if first.outcome is not Outcome.SLOWER:
            return Search(None, Reason.TOO_NOISY if first.outcome is Outcome.UNDECIDED else Reason.ALL_SKIPPED,
                          tuple(steps), (count - 1,))
        good, bad = -1, count - 1
        aside: dict[int, Outcome] = {}
        while bad - good > 1:
            index = _middle(good, bad, aside)
            if index is None:
                noisy = any(o is Outcome.UNDECIDED for o in aside.values())
                return Search(None, Reason.TOO_NOISY if noisy else Reason.ALL_SKIPPED, tuple(steps),
                              tuple(range(good + 1, bad + 1)))
            if budget is not None and measured is not None and measured() >= budget:
                return Search(None, Reason.BUDGET, tuple(steps), tuple(range(good + 1, bad + 1)))
            step = ask(index)
            if step.outcome is Outcome.SLOWER:
                bad = index
            elif step.outcome is Outcome.NOT_SLOWER:
                good = index
            else:
                aside[index] = step.outcome
        return Search(bad, Reason.FOUND, tuple(steps))
    except Stop:
        return Search(None, Reason.INTERRUPTED, tuple(steps))


def _middle(good: int, bad: int, aside: dict[int, Outcome]) -> int | None:
    """The untried commit strictly between `good` and `bad` nearest the middle (the earlier on a tie)."""
    middle = (good + bad) / 2
    left = [i for i in range(good + 1, bad) if i not in aside]
    return min(left, key=lambda i: (abs(i - middle), i)) if left else None
