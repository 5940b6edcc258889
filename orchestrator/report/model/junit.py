"""A comparison as a CI test report: a suite per device, a case per (device, model) verdict and per op that regressed.

Filled by report/builders/junit.py from a verdicts.Comparison (its data objects, never its statistics);
report/render/junit.py writes it as JUnit XML, which CI test reporters read.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Outcome(StrEnum):
    PASSED = "passed"
    FAILED = "failed"  # regressed, wrong outputs or accuracy dropped
    SKIPPED = "skipped"  # could not be judged: no data, no baseline yet, inconclusive, settings differ


@dataclass(frozen=True)
class Case:
    name: str  # the model, or `model: op` for an op that regressed
    classname: str  # etfarm.<device>
    outcome: Outcome
    kind: str = ""  # the failure's or skip's type: regressed, accuracy-dropped, wrong-results, no-data, ...
    message: str = ""  # one line
    detail: str = ""  # the failure's text
    properties: tuple[tuple[str, str], ...] = ()  # verdict, ratio, interval, p-value, threshold, runs


@dataclass(frozen=True)
class Suite:
    name: str  # the device
    cases: tuple[Case, ...]
    properties: tuple[tuple[str, str], ...] = ()

    def count(self, outcome: Outcome) -> int:
        return sum(1 for c in self.cases if c.outcome is outcome)


@dataclass(frozen=True)
class TestReport:
    name: str  # "etfarm compare A -> B"
    suites: tuple[Suite, ...]
