"""The site's index, nights and regressions pages, built as report pages (report/page/blocks.py) that site.py writes
with the report's HTML renderer (report/render/html.py): one writer and one escaping rule for every name. The index's
filters are a small inline script over its rows' keys, its trend lines inline SVG (render/trend_line.py)."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Sequence
from urllib.parse import quote

from orchestrator.report.formats import fmt_ms, ratio
from orchestrator.report.page.blocks import (
    Filters,
    Page,
    Paragraph,
    Row,
    Script,
    ScriptData,
    Section,
    Span,
    Table,
    Text,
    badge,
    code,
    inline_chart,
    link,
    link_or_label,
    text,
    verdict_badge,
)
from orchestrator.report.render.trend_line import trend_line
from orchestrator.verdicts.likeness import UNKNOWN, SeriesKey

from .assets import INDEX_JS, STYLE
from .matrix import index_matrix
from .model import Night, Summary
from .model import utc as when

INDEX, NIGHTS, REGRESSIONS = "index.html", "nights.html", "regressions.html"
INDEX_COLUMNS = ("Model", "Device", "Configuration", "Trend", "Latest p50 [runs' range]", "Latest verdict",
                 "Change points", "Moved")
FILTERS = ("device", "model", "backend", "verdict")  # the index rows' keys its script filters by
CONFIRMED = badge("confirmed", "bad", "run again at once, the regression showed again")


def site_page(title: str, sections: Iterable[Section], meta: Text = (), heading: str = "", depth: int = 0,
              scripts: Sequence[Script | ScriptData] = ()) -> Page:
    """A page of the site; `depth`: how far below DIR it is (series/ pages are 1), for the shared assets and links."""
    up = "../" * depth
    return Page(title, meta, tuple(sections), heading=heading, stylesheet=up + STYLE, scripts=tuple(scripts),
                site=(("Series", up + INDEX), ("Nights", up + NIGHTS), ("Regressions", up + REGRESSIONS)))


def latency(latest: tuple[float, float | None, float | None] | None) -> str:
    """A p50 with the range of its process runs' medians."""
    if latest is None:
        return "-"
    p50, low, high = latest
    spread = f" [{fmt_ms(low)}, {fmt_ms(high)}]" if low is not None and high is not None else ""
    return f"{fmt_ms(p50)} ms{spread}"


def verdict_text(verdict: str | None, regressed: bool = False, confirmed: bool | None = None) -> Text:
    if verdict is None:
        return text("-")
    return text(verdict_badge(verdict), *((" ", CONFIRMED) if regressed and confirmed else ()))


def configuration(key: SeriesKey, siblings: Iterable[SeriesKey] = ()) -> str:
    """The settings that tell a series apart from its neighbours (defaults and unknowns left out); a setting left
    out as a rule (iterations, warmup, a default) is said when a sibling series of the same model and device
    differs in it, so two series never read as one ("iterations 20" beside "iterations 50")."""
    quiet = {("recipe", "-"), ("generation", "-"), ("numerics", "off"), ("threads", "default"), ("emulated", "no")}
    mine = dict(key.settings)
    differ = {k for other in siblings if (other.device, other.model) == (key.device, key.model)
              for k, v in other.settings if mine.get(k) != v}
    return ", ".join(f"{k} {v}" for k, v in key.settings if k in differ or (
        (k, v) not in quiet and v != UNKNOWN and k not in ("iterations", "warmup")))


def index_page(series: Sequence[Summary], store: str, runs: int) -> Page:
    if not series:
        return site_page("etfarm dashboard: empty store", [_said(text(
            f"No stored runs: the store {store} holds nothing to publish yet (", code("etfarm run"), " and ",
            code("etfarm nightly"), " record runs into it)."))], heading="etfarm dashboard")
    groups: dict[str, list[Summary]] = {}  # by model and device, in the order of their most recently moved series
    for s in series:
        groups.setdefault(f"{s.key.model} on {s.key.device}", []).append(s)
    rows: list[Row] = []
    for name, members in groups.items():
        rows.append(Row((text(name),), (("group", name),), group=True))
        rows += [_index_row(s, name, [m.key for m in members]) for s in members]
    meta = text(f"{len(series)} series from {runs} stored runs in {store}; ", Span(str(len(series)), anchor="shown"),
                " shown, the most recently moved first.")
    table = Table(INDEX_COLUMNS, tuple(rows), numeric=(False,) * 4 + (True,), anchor="series")
    matrix = index_matrix(series)
    return site_page("etfarm dashboard", [*((matrix,) if matrix else ()), Section((), blocks=(Filters(FILTERS), table))],
                     meta, scripts=[Script(code=INDEX_JS)])


def _index_row(s: Summary, group: str, siblings: Sequence[SeriesKey]) -> Row:
    shown = "; ".join(f"{ratio(c.ratio)} at {c.commits}" for c in s.changes[-3:])
    more = f" (+{len(s.changes) - 3} earlier)" if len(s.changes) > 3 else ""
    trend = trend_line(f"trend-{s.slug}", s.trend, s.trend_regressed)
    keys = (("series", s.slug), ("group", group), ("device", s.key.device), ("model", s.key.model),
            ("backend", s.backend), ("verdict", s.verdict or "-"))
    return Row((text(link(s.key.model, f"series/{s.slug}.html")), text(s.key.device), text(configuration(s.key, siblings)),
                text(inline_chart(trend)) if trend else (), text(latency(s.latest)),
                verdict_text(s.verdict, s.verdict_regressed, s.verdict_confirmed), text(shown + more or "-"),
                text(when(s.moved) if s.moved else "-")), keys)


def nights_page(nights: Sequence[Night], out: str) -> Page:
    if not nights:
        return site_page("etfarm nights", [_said(text("No nightly runs in the store yet."))], heading="Nights")
    rows = tuple((text(when(n.started)), text(link_or_label(n.night_id, page_href(n.page, out))),
                  text(", ".join(f"{count} {v}" for v, count in sorted(n.verdicts.items())) or "-"), text(" ".join(n.runs)))
                 for n in nights)
    table = Table(("Started (UTC)", "Night", "Verdicts", "Runs"), rows)
    return site_page("etfarm nights", [Section((), blocks=(table,))], text(f"{len(nights)} nights, newest first."),
                     heading="Nights")


def regressions_page(series: Sequence[Summary], out: str) -> Page:
    found = sorted(((s, r) for s in series for r in s.regressions), key=lambda sr: (sr[1].started, sr[1].run_id),
                   reverse=True)
    if not found:
        return site_page("etfarm regressions", [_said(text("No night found a regression."))], heading="Regressions")
    rows = tuple(
        (text(when(r.started)),
         text(link(f"{s.key.model} on {s.key.device}", f"series/{s.slug}.html"), " ",
              configuration(s.key, [x.key for x in series])),
         text(ratio(r.ratio)), confirmation(r.confirmed),
         text(r.commits, *(("; culprit ", code(r.culprit[:12])) if r.culprit else ())),  # the commit `bisect` named
         text(link_or_label(r.run_id, r.link.removeprefix("../") if r.link.startswith("../") else None)))
        for s, r in found)
    table = Table(("When (UTC)", "Series", "How much", "Confirmed", "Between commits", "Run"), rows,
                  numeric=(False, False, True))
    return site_page("etfarm regressions", [Section((), blocks=(table,))],
                     text(f"{len(found)} regressions found by nights, newest first."), heading="Regressions")


def _said(body: Text) -> Section:
    """What an empty page says, in the box a page's answer goes in."""
    return Section((), blocks=(Paragraph(body, tone="answer"),))


def confirmation(confirmed: bool | None) -> Text:
    return text(CONFIRMED if confirmed else "not confirmed" if confirmed is False else "not run again")


def page_href(page: str | None, start: str) -> str:
    """A link from the directory `start` to a night's page: relative, so the site opens from the file system."""
    if not page:
        return ""
    folder, name = os.path.split(page)
    return _relative_folder(folder, start) + quote(name)


@functools.lru_cache(maxsize=256)
def _relative_folder(folder: str, start: str) -> str:
    """`folder` from `start`, URL-quoted (a '#' or '?' in a folder name stays a path), with a trailing slash; a night's
    pages share a few folders, so this is worked out once per folder."""
    return quote(os.path.relpath(folder, start)) + "/"
