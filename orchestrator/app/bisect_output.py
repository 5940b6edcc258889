"""What `etfarm bisect` says: the terminal table of its steps, its JSON document, its HTML page.

The page is drawn by the report package's renderer (report/render/html.py, the one the A/B page uses): a
first paragraph that answers (the culprit, or why none is named), then a row per step linking that step's
A/B page. Every number is the candidate's program against GOOD's (B / A of the verdict statistic).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from orchestrator.app.bisect_range import Commit, CommitRange
from orchestrator.app.bisect_search import Reason, Search, Step
from orchestrator.base.cache import write_text_atomic
from orchestrator.base.codec import Layout
from orchestrator.report.formats import clip
from orchestrator.report.page.blocks import Page, Paragraph, Section, Table, badge, code, link, strong, text
from orchestrator.report.render.html import render_html
from orchestrator.report.terminal.table import format_table

BISECT_PAGE = "bisect.html"
BISECT_JSON = "bisect.json"
TONES = {"regressed": "bad", "inconclusive": "warn", "skipped": "warn", "improved": "good", "unchanged": "good"}


@dataclass(frozen=True)
class StepFigures:
    """A step's ratio and interval, as the bisect's document says them."""

    ratio: float
    ci_low: float | None
    ci_high: float | None

    LAYOUT: ClassVar[Layout] = Layout(raw_floats=True)

    @classmethod
    def of(cls, step: Step | None) -> StepFigures | None:
        return None if step is None or step.ratio is None else cls(step.ratio, step.ci_low, step.ci_high)


@dataclass(frozen=True)
class BisectDocument:
    """What `bisect --json` prints and DIR/bisect.json holds (`encode(result.document())`): the culprit (None: none
    named, and `reason` says why) against GOOD and its parent, the suspects and measured commits, every step."""

    culprit: str | None
    reason: str | None
    subject: str | None
    against_good: StepFigures | None
    against_parent: StepFigures | None
    parent: str | None
    suspects: tuple[str, ...]
    measured: tuple[str, ...]
    steps: tuple[Step, ...]
    good: str
    bad: str
    commits: int
    model: str
    repo: str
    budget: int | None
    budget_ran_out: bool


@dataclass(frozen=True)
class BisectResult:
    """A finished bisect: the range, the search, the culprit against its parent (None: none named, or the same
    numbers as against GOOD), what was measured, and whether a budget stopped it."""

    range: CommitRange
    model: str  # PATH.py:FACTORY as given
    search: Search
    measured: tuple[str, ...]
    against_parent: Step | None = None
    budget: int | None = None
    folder: Path = Path(".")  # where bisect.html, bisect.json and the steps' run directories are

    @property
    def culprit(self) -> Commit | None:
        return self.range.commits[self.search.culprit] if self.search.culprit is not None else None

    @property
    def culprit_step(self) -> Step | None:
        culprit = self.culprit
        return next((s for s in reversed(self.search.steps) if culprit and s.sha == culprit.sha), None)

    @property
    def parent(self) -> Commit:
        index = self.search.culprit or 0
        return self.range.commits[index - 1] if index > 0 else self.range.good

    @property
    def sentence(self) -> str:
        """One line: the culprit with its ratios, or why there is none."""
        culprit, step = self.culprit, self.culprit_step
        if culprit is not None and step is not None:
            parent = self.against_parent or step
            return (f"culprit {culprit.sha} ({clip(culprit.subject, 60)}): {interval(step)} against good "
                    f"{self.range.good.short}, {interval(parent)} against its parent {self.parent.short}")
        why = self.search.reason.value
        if self.search.reason is Reason.BUDGET:
            why += f" after {len(self.measured)} measured commit(s) (budget {self.budget})"
        suspects = [self.range.commits[i].short for i in self.search.suspects]
        return f"no culprit named: {why}" + (f"; it is one of {', '.join(suspects)}" if suspects else "")

    def document(self) -> BisectDocument:
        culprit, step, r = self.culprit, self.culprit_step, self.range
        return BisectDocument(
            culprit.sha if culprit else None, None if culprit else self.search.reason.value,
            culprit.subject if culprit else None, StepFigures.of(step), StepFigures.of(self.against_parent or step),
            self.parent.sha if culprit else None, tuple(r.commits[i].sha for i in self.search.suspects), self.measured,
            self.search.steps, r.good.sha, r.bad.sha, len(r.commits), self.model, str(r.root), self.budget,
            self.search.reason is Reason.BUDGET)


def interval(step: Step) -> str:
    if step.ratio is None:
        return "-"
    if step.ci_low is None or step.ci_high is None:
        return f"{step.ratio:.3f}x"
    return f"{step.ratio:.3f}x [{step.ci_low:.3f}, {step.ci_high:.3f}]"


def _how(step: Step) -> str:
    if step.resumed:
        return "from the store"
    return "measured" if step.measured else (step.reason or "-")


def steps_table(result: BisectResult) -> str:
    rows = [(s.sha[:12], clip(s.subject, 40), f"{s.ratio:.3f}x" if s.ratio is not None else "-",
             f"[{s.ci_low:.3f}, {s.ci_high:.3f}]" if s.ci_low is not None and s.ci_high is not None else "-",
             s.verdict, clip(_how(s), 60)) for s in result.search.steps]
    return format_table(("commit", "subject", "ratio", "interval", "verdict", "how"), rows, "llrlll")


def write_page(result: BisectResult, folder: Path) -> Path:
    """DIR/bisect.html: the answer, then the steps, each linking its A/B page."""
    target = folder / BISECT_PAGE
    rows = []
    for s in result.search.steps:
        page = Path(s.page) if s.page else None
        where = text(link("A/B page", os.path.relpath(page, folder))) if page is not None else text(_how(s))
        rows.append((text(code(s.sha[:12])), text(clip(s.subject, 60)), text(interval(s)),
                     text(badge(s.verdict, TONES.get(s.verdict, "info"), s.reason)), where))
    answer = Paragraph(text(strong(result.sentence)), tone="answer")
    r = result.range
    meta = text(f"{result.model} in {r.root}: good {r.good.short}, bad {r.bad.short}, {len(r.commits)} commit(s) on "
                f"the first-parent line, {len(result.measured)} measured")
    page = Page(f"etfarm bisect: {result.model}", meta, (
        Section(text("Culprit"), "culprit", (answer,), nav="Culprit"),
        Section(text("Steps"), "steps", (Table(("commit", "subject", "against good", "verdict", "A/B"), tuple(rows)),),
                nav="Steps"),
    ))
    write_text_atomic(target, render_html(page))
    return target
