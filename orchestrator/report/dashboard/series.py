"""Points into series (likeness.SeriesKey: a setting a run did not record matches any value), a series' columns
updated by the runs read now, and what the index says of it: its change points over its newest CHANGE_WINDOW
nights (changes.find_changes: the rule `history --changes` uses), its regressions, its newest verdict."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence

from orchestrator.report.escape import script_json
from orchestrator.store.history import HistoryPoint
from orchestrator.verdicts.changes import find_changes
from orchestrator.verdicts.likeness import SeriesKey

from .model import COLUMNS, Change, Point, Regression, SeriesData, Summary
from .pages import page_href

# Change points are looked for over a series' newest nights (eight months of them): what a reader of the dashboard
# asks about, and what keeps a night's publish of 100 series of 1,000 nights within seconds (PELT costs ~n^1.5).
CHANGE_WINDOW = 250
SERIES_DATA = "data/series"  # a series' columns: DIR/data/series/<slug>.js
TREND_POINTS = 60  # the newest p50s of the index's trend line


def slug(key: SeriesKey) -> str:
    """A file name for the series: readable, and unique by a hash of the whole key."""
    digest = hashlib.sha256(repr((key.device, key.model, key.settings)).encode()).hexdigest()[:10]
    readable = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{key.model}-{key.device}-{dict(key.settings).get('backend', '')}")
    return f"{readable.strip('-')[:80]}-{digest}"


class SeriesIndex:
    """Which series a point belongs to: the first known key it matches, else a new series."""

    def __init__(self, known: Iterable[SeriesKey]) -> None:
        self._by_pair: dict[tuple[str, str], list[tuple[SeriesKey, str]]] = {}
        for key in known:
            self.slug_of(key)

    def slug_of(self, key: SeriesKey) -> str:
        same = self._by_pair.setdefault((key.device, key.model), [])
        found = next((s for known, s in same if known.matches(key)), None)
        if found is None:
            found = slug(key)
            same.append((key, found))
        return found

    def key_of(self, wanted: str) -> SeriesKey:
        return next(k for same in self._by_pair.values() for k, s in same if s == wanted)


def merge(key: SeriesKey, series_slug: str, old: SeriesData | None, new: Sequence[Point], drop: set[str],
          series_dir: str) -> SeriesData:
    """The series' columns: the old ones without the runs in `drop` (read again, or gone from the store), with the
    new points, oldest first; `series_dir` is where the series' page is (its links to night pages start there)."""
    names = list(old.layer_names) if old is not None else []
    added = sorted((p.values(page_href(p.page, series_dir), names) for p in new), key=lambda r: (r[1], r[0]))
    columns = {c: list(old.columns[c]) for c in COLUMNS} if old is not None else {c: [] for c in COLUMNS}
    newest = (columns["started"][-1], columns["run"][-1]) if columns["run"] else None
    if drop.isdisjoint(columns["run"]) and (newest is None or not added or (added[0][1], added[0][0]) > newest):
        for k, c in enumerate(COLUMNS):  # a night's new points after the old ones: appended, column by column
            columns[c].extend(r[k] for r in added)
        return SeriesData(key, series_slug, columns, tuple(names))
    rows = [r for r in zip(*(columns[c] for c in COLUMNS), strict=True) if r[0] not in drop] + added
    rows.sort(key=lambda r: (r[1], r[0]))
    return SeriesData(key, series_slug, {c: [r[k] for r in rows] for k, c in enumerate(COLUMNS)}, tuple(names))


def summarize(data: SeriesData) -> Summary:
    c = data.columns
    measured = [k for k, p50 in enumerate(c["p50"]) if p50 is not None]
    newest = measured[-1] if measured else None
    judged = next((k for k in reversed(range(len(data))) if c["verdict"][k] is not None and c["confirms"][k] is None),
                  None)
    # a night confirmed by a second job has that job's ratio as its verdict, as its page and the terminal say it
    second = {c["confirms"][k]: c["ratio"][k] for k in range(len(data)) if c["confirms"][k] and c["ratio"][k] is not None}
    regressions = tuple(Regression(c["started"][k], c["run"][k], second.get(c["run"][k], c["ratio"][k]), c["confirmed"][k],
                                   commits(data.commit_before(c["run"][k]), c["commit"][k]), c["link"][k] or "",
                                   c["culprit"][k] or "")
                        for k in range(len(data)) if c["regressed"][k])
    found = changes(data, measured[-CHANGE_WINDOW:])
    trend = measured[-TREND_POINTS:]
    return Summary(
        data.key, data.slug, len(data), (c["p50"][newest], c["lo"][newest], c["hi"][newest]) if newest is not None else None,
        c["verdict"][judged] if judged is not None else None, bool(judged is not None and c["regressed"][judged]),
        c["confirmed"][judged] if judged is not None else None, found, regressions,
        tuple(c["p50"][k] for k in trend), tuple(bool(c["regressed"][k]) for k in trend),
        max([x.started for x in found] + [r.started for r in regressions], default=""))


def changes(data: SeriesData, rows: Sequence[int]) -> tuple[Change, ...]:
    """The series' change points over the given rows (interfered nights are left out there, as `history` does)."""
    c = data.columns
    points = [HistoryPoint(c["run"][k], c["started"][k], data.key.device, data.key.model, c["status"][k], c["p50"][k],
                           None, c["commit"][k], flagged=c["flagged"][k]) for k in rows]
    found = find_changes(points)
    return tuple(Change(x.started, x.run_id, x.before_ms, x.after_ms, commits(data.commit_before(x.run_id), x.git_commit))
                 for s in found for x in s.changes)


def commit(value: str | None) -> str:
    return value[:12] if value else "-"


def commits(before: str | None, after: str | None) -> str:
    """The commit range a change came in: `abc..def`, or the one commit known."""
    return f"{commit(before)}..{commit(after)}" if before and after and before != after else commit(after)


def ordered(summaries: Iterable[Summary]) -> list[Summary]:
    """The index's order: a series whose newest verdict regressed first, then the most recently moved."""
    return sorted(summaries, key=lambda s: (not s.verdict_regressed, _descending(s.moved), s.key.model, s.key.device,
                                            s.slug))


def _descending(text: str) -> str:
    """A key that sorts ISO times newest first ("" — never moved — last)."""
    return "".join(chr(0x10FFFF - ord(ch)) for ch in text) if text else "\U0010ffff"


_DATA_START, _DATA_END = "window.etfarmSeries = ", ";\n"


def data_script(data: SeriesData) -> str:
    """The series' columns as the script its page loads (DIR/data/series/<slug>.js: a page opened from the file system
    may load a script, not fetch JSON), and what the next publish reads back (`data_from_script`)."""
    return _DATA_START + script_json({"slug": data.slug, "layer_names": list(data.layer_names),
                                      "columns": {c: list(data.columns[c]) for c in COLUMNS}}) + _DATA_END


def data_from_script(key: SeriesKey, text: str) -> SeriesData:
    """Columns kept by an earlier publish (a shape error is the caller's: it reads the series' runs again)."""
    if not text.startswith(_DATA_START) or not text.endswith(_DATA_END):
        raise ValueError("not the dashboard's series data")
    raw = json.loads(text[len(_DATA_START):-len(_DATA_END)])
    columns = raw["columns"]
    if set(columns) != set(COLUMNS) or len({len(v) for v in columns.values()}) != 1:
        raise ValueError("not the dashboard's columns")
    return SeriesData(key, raw["slug"], columns, tuple(raw["layer_names"]))
