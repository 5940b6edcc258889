"""The runs' points gathered into series (likeness.SeriesKey: a setting a run did not record matches any value),
each with its change points (changes.find_changes: the rule `history --changes` uses), ordered as the index
shows them; and the nights and regressions of the store."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from orchestrator.store.history import HistoryPoint
from orchestrator.verdicts.changes import find_changes
from orchestrator.verdicts.likeness import SeriesKey

from .model import Night, Point, RunEntry, Series


@dataclass(frozen=True)
class Regression:
    """A point a night found regressed (its confirmation job's second verdict folded in)."""

    series: Series
    point: Point
    commit_before: str | None  # the commit of the series' point before it: the range the regression came in


def build_series(entries: Sequence[RunEntry]) -> list[Series]:
    """Every series of the runs, the most recently moved first (a regressed latest verdict before all)."""
    gathered: dict[tuple[str, str], list[tuple[SeriesKey, list[Point]]]] = {}
    for entry in entries:
        for point in entry.points:
            key = SeriesKey(point.row.device, point.row.model, point.settings)
            same = gathered.setdefault((key.device, key.model), [])
            found = next((points for known, points in same if known.matches(key)), None)
            if found is None:
                same.append((key, found := []))
            found.append(point)
    series = [(key, sorted(points, key=lambda p: (p.row.started, p.row.run_id)))
              for same in gathered.values() for key, points in same]
    slugs = {id(points): slug(key) for key, points in series}
    series_of = {(p.row.run_id, p.row.device, p.row.model): (("series", slugs[id(points)]),)
                 for _, points in series for p in points}
    changes = find_changes([_history_point(p) for _, points in series for p in points],
                           settings_of=lambda h: series_of[(h.run_id, h.device, h.model)])
    by_slug = {dict(c.settings)["series"]: c.changes for c in changes}
    out = [Series(key, slugs[id(points)], tuple(points), by_slug.get(slugs[id(points)], ())) for key, points in series]
    return sorted(out, key=_order)


def _history_point(point: Point) -> HistoryPoint:
    """The point as change detection reads it (interfered runs are left out there)."""
    row = point.row
    return HistoryPoint(row.run_id, row.started, row.device, row.model, row.status, row.p50_ms, None, row.git_commit,
                        backend=dict(point.settings).get("backend", ""), flagged=row.flagged)


def _order(series: Series) -> tuple[bool, str, str, str, str]:
    judged = series.verdict
    regressed = judged is not None and judged.regressed
    return (not regressed, _descending(series.moved), series.key.model, series.key.device, series.slug)


def _descending(text: str) -> str:
    """A key that sorts ISO times newest first ("" — never moved — last)."""
    return "".join(chr(0x10FFFF - ord(c)) for c in text) if text else "\U0010ffff"


def slug(key: SeriesKey) -> str:
    """A file name for the series: readable, and unique by a hash of the whole key."""
    digest = hashlib.sha256(repr((key.device, key.model, key.settings)).encode()).hexdigest()[:10]
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{key.model}-{key.device}-{dict(key.settings).get('backend', '')}")
    return f"{readable.strip('-')[:80]}-{digest}"


def regressions(series: Sequence[Series]) -> list[Regression]:
    """Every regression a night found, newest first."""
    found = [Regression(s, p, s.commit_before(p.row.run_id)) for s in series for p in s.points if p.regressed]
    return sorted(found, key=lambda r: (r.point.row.started, r.point.row.run_id), reverse=True)


def nights(entries: Sequence[RunEntry]) -> list[Night]:
    """The nights of `etfarm nightly` in the store (runs that left a night.json), newest first."""
    found: dict[str, Night] = {}
    for entry in entries:
        mark = entry.night
        if mark is None:
            continue
        known = found.get(mark.night_id)
        runs = (*known.runs, entry.run_id) if known is not None else (entry.run_id,)
        started = min(known.started, entry.started) if known is not None else entry.started
        found[mark.night_id] = Night(mark.night_id, started, runs, mark.page, mark.verdicts)
    return sorted(found.values(), key=lambda n: (n.started, n.night_id), reverse=True)
