"""`etfarm publish --out DIR`: the store as a static site, written incrementally and atomically.

DIR/index.html (every series), nights.html, regressions.html, series/<slug>.html (a page per series), assets/
(plotly.js, the style sheet, the series pages' script: shared, written once), data/series/<slug>.js (a series'
points as columns: what its page draws, and what the next publish appends to) and manifest.json (what was written
from which store state: each run's token and series, each series' summary for the index).

Incremental: only runs that are new or changed in the store (or whose verdict files changed) are read; the indexes
are rewritten every time from the summaries; a series' data and page only when one of its runs was read now or
left the store (or its page is missing). Atomic: the whole store is read before anything is written, and every file
is written to a temporary sibling and renamed, so a store that cannot be read leaves DIR as it was, and a reader
never sees a torn page.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from orchestrator.base.cache import cannot_write_in, write_bytes_atomic
from orchestrator.base.errors import DataError, UsageError
from orchestrator.base.ids import is_id
from orchestrator.report.render.html import CSS, render_html
from orchestrator.results.night_marks import NightMark
from orchestrator.store import open_store, store_path
from orchestrator.verdicts.likeness import SeriesKey

from . import assets
from .collect import NIGHTS_DIR, ReadRun, StampedJob, read_points, stored_runs
from .model import Night, Point, SeriesData, Summary
from .pages import INDEX, NIGHTS, REGRESSIONS, index_page, nights_page, regressions_page
from .series import SERIES_DATA, SeriesIndex, data_from_script, data_script, merge, ordered, summarize
from .series_page import series_page
from .target import SITE_MANIFEST, refusal, site_manifest

FORMAT = 5  # of the manifest and the kept series (5: energy and the delegate's memory): another is read as nothing kept


@dataclass(frozen=True)
class Published:
    out: Path
    series: int
    runs: int
    read: int  # runs read from the store now (the others were kept from the last publish)
    written: tuple[str, ...]  # files written, relative to `out`

    def describe(self) -> str:
        pages = sum(1 for w in self.written if w.endswith(".html"))
        return (f"published {self.series} series from {self.runs} stored runs ({self.read} read now) to "
                f"{self.out / INDEX}: {pages} pages written")


@dataclass(frozen=True)
class _Reading:
    """Everything a publish writes from, read before anything is written."""

    runs: dict[str, dict[str, Any]]  # run id -> what the manifest keeps of it (token, started, night, series)
    read: int
    summaries: dict[str, Summary]  # every series, by slug
    changed: dict[str, SeriesData]  # the series whose columns changed now
    gone: set[str]  # slugs of series left with no point


class _Stale(Exception):
    """What an earlier publish kept cannot be read back: read everything from the store again."""


def publish(out: Path, store: Path | None = None) -> Published:
    out = Path(out).expanduser()
    where = store_path(store).resolve()  # the site's manifest names its store wherever publish runs from
    _check_out(out, where)
    manifest = _manifest(out)
    try:
        reading = _read_store(where, out, manifest)
    except _Stale:
        manifest = {}
        reading = _read_store(where, out, manifest)
    if not (out / SITE_MANIFEST).is_file():  # a new site: marked as this store's at once, so a publish cut short can resume
        _write(out, SITE_MANIFEST, json.dumps({"format": FORMAT, "store": str(where), "runs": {}, "series": {}}).encode())
    files = _pages(out, reading, str(where))
    files.update({f"{SERIES_DATA}/{name}.js": data_script(data).encode() for name, data in reading.changed.items()})
    if manifest.get("plotly") != _plotly_version() or not (out / assets.PLOTLY).is_file():
        files[assets.PLOTLY] = assets.plotly_js()
    files[assets.STYLE], files[assets.SERIES_SCRIPT] = CSS.encode(), assets.SERIES_JS.encode()
    for name, data in files.items():
        _write(out, name, data)
    for name in reading.gone:
        (out / SERIES_DATA / f"{name}.js").unlink(missing_ok=True)
        (out / "series" / f"{name}.html").unlink(missing_ok=True)
    _write(out, SITE_MANIFEST, json.dumps({
        "format": FORMAT, "store": str(where), "published": datetime.now(UTC).isoformat(timespec="seconds"),
        "plotly": _plotly_version(), "runs": reading.runs,
        "series": {name: s.to_json() for name, s in reading.summaries.items()}}, separators=(",", ":")).encode())
    return Published(out, len(reading.summaries), len(reading.runs), reading.read, tuple(sorted(files)))


def _check_out(out: Path, store: Path) -> None:
    """DIR is new, empty or this store's site, and a directory we can write in (made if missing): one line naming it
    otherwise (exit 2)."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot create it ({exc.strerror or exc})") from None
    if not out.is_dir():
        raise UsageError(f"--out {out}: not a directory")
    unwritable = cannot_write_in(out)  # first: a full or read-only disk is the reason to give, whatever DIR holds
    if unwritable is not None:
        raise UsageError(f"--out {out}: cannot write in it ({unwritable})")
    refused = refusal(out, store)
    if refused is not None:
        raise UsageError(f"--out {out}: {refused}")


def _read_store(where: Path, out: Path, manifest: Mapping[str, Any]) -> _Reading:
    """The store's runs (none when there is no store yet: reading never creates one) merged into what the last publish
    kept; a store that cannot be read is one line naming it."""
    if not where.exists():
        return _merge(out, manifest, [], [])
    try:
        with open_store(where) as opened:
            runs = stored_runs(opened)
            kept = manifest.get("runs", {})
            fresh = [r for r in runs if kept.get(r.run_id, {}).get("token") != r.token]
            return _merge(out, manifest, runs, read_points(opened, fresh))
    except (sqlite3.Error, DataError, OSError) as exc:
        raise UsageError(f"the results store {where}: cannot read it ({str(exc).removeprefix(f'{where}: ')})") from None


def _merge(out: Path, manifest: Mapping[str, Any], runs: list[StampedJob], read: list[ReadRun]) -> _Reading:
    """The series after the runs read now: their points added, the runs read again or gone dropped."""
    kept_runs: dict[str, dict[str, Any]] = dict(manifest.get("runs", {}))
    try:
        summaries = {name: Summary.from_json(raw) for name, raw in manifest.get("series", {}).items()}
    except (KeyError, TypeError, ValueError) as exc:
        raise _Stale() from exc
    index = SeriesIndex(s.key for s in summaries.values())
    present = {r.run_id for r in runs}
    dropped = {r.run.run_id for r in read} | (set(kept_runs) - present)
    touched: dict[str, list[Point]] = {name: [] for run_id in dropped for name in kept_runs.get(run_id, {}).get("series", ())}
    keys = {s.slug: s.key for s in summaries.values()}
    for found in read:
        for point in found.points:
            key = SeriesKey(point.row.device, point.row.model, point.settings)
            name = index.slug_of(key)
            keys.setdefault(name, key)
            touched.setdefault(name, []).append(point)
        kept_runs[found.run.run_id] = {"token": found.run.token, "started": found.run.started,
                                       "night": _night_json(found.night),
                                       "series": sorted({index.slug_of(SeriesKey(p.row.device, p.row.model, p.settings))
                                                         for p in found.points})}
    changed, gone = {}, set()
    for name, points in touched.items():
        old = _kept_series(out, keys[name], name) if name in summaries else None
        data = merge(keys[name], name, old, points, dropped, "series")
        if len(data):
            changed[name], summaries[name] = data, summarize(data)
        else:
            gone.add(name)
            summaries.pop(name, None)
    for name, summary in summaries.items():  # a page someone deleted is drawn again from what was kept
        if name not in changed and not (out / "series" / f"{name}.html").is_file():
            changed[name] = _kept_series(out, summary.key, name)
    return _Reading({run_id: kept_runs[run_id] for run_id in (r.run_id for r in runs)}, len(read), summaries, changed,
                    gone)


def _kept_series(out: Path, key: SeriesKey, name: str) -> SeriesData:
    try:
        return data_from_script(key, (out / SERIES_DATA / f"{name}.js").read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise _Stale() from exc


def _night_json(night: NightMark | None) -> list[Any] | None:
    return None if night is None else [night.night_id, night.page, dict(night.verdicts)]


def _nights(runs: Mapping[str, Mapping[str, Any]]) -> list[Night]:
    """The nights of `etfarm nightly` in the store (runs that left a night.json), newest first."""
    found: dict[str, Night] = {}
    for run_id, run in runs.items():
        if not run.get("night"):
            continue
        night_id, page, verdicts = run["night"]
        if not is_id(night_id):  # the site's manifest is a file too: its ids name files (nights/<id>.html)
            continue
        known = found.get(night_id)
        found[night_id] = Night(night_id, min(known.started, run["started"]) if known else run["started"],
                                (*known.runs, run_id) if known else (run_id,), page, verdicts)
    return sorted(found.values(), key=lambda n: (n.started, n.night_id), reverse=True)


_NIGHT_PAGE_MAX_BYTES = 64 << 20  # a night's page is a few hundred kB; a larger file is not one


def _night_pages(out: Path, nights: list[Night]) -> tuple[list[Night], dict[str, bytes]]:
    """The nights with their page as the site's copy (nights/<id>.html), and the copies to write: a night's page
    lives in its plan's report folder, wherever that is; the site links only to what is inside it. A page since
    deleted keeps its earlier copy; a night whose page was never copied links nowhere."""
    linked, copies = [], {}
    for night in nights:
        name = f"{NIGHTS_DIR}/{night.night_id}.html"
        data = _page_bytes(night.page)
        if data is not None and (not (out / name).is_file() or (out / name).read_bytes() != data):
            copies[name] = data
        has_copy = data is not None or (out / name).is_file()
        linked.append(replace(night, page=name if has_copy else None))
    return linked, copies


def _page_bytes(page: str | None) -> bytes | None:
    try:
        path = Path(page) if page else None
        if path is None or not path.is_file() or path.stat().st_size > _NIGHT_PAGE_MAX_BYTES:
            return None
        return path.read_bytes()
    except OSError:
        return None


def _pages(out: Path, reading: _Reading, store: str) -> dict[str, bytes]:
    """The indexes, and the page of every series that changed now (or whose page was missing), each built as a report
    page and written by the report's HTML renderer."""
    summaries = ordered(reading.summaries.values())
    nights, copies = _night_pages(out, _nights(reading.runs))
    files = {INDEX: render_html(index_page(summaries, store, len(reading.runs))).encode(),
             NIGHTS: render_html(nights_page(nights, ".")).encode(), **copies,
             REGRESSIONS: render_html(regressions_page(summaries, str(out))).encode()}
    for summary in summaries:
        data = reading.changed.get(summary.slug)
        if data is not None:
            page = series_page(data, summary, [s.key for s in summaries])
            files[f"series/{summary.slug}.html"] = render_html(page).encode()
    return files


def _manifest(out: Path) -> dict[str, Any]:
    data = site_manifest(out)
    return data if data.get("format") == FORMAT else {}


def _write(out: Path, name: str, data: bytes) -> None:
    try:
        write_bytes_atomic(out / name, data, durable=False)  # the store is what lasts: the site is made from it
    except OSError as exc:
        raise UsageError(f"--out {out}: cannot write {name} ({exc.strerror or exc})") from None


def _plotly_version() -> str:
    from importlib.metadata import version

    return version("plotly")
