"""The site's index, nights and regressions pages: static HTML, every name escaped (report/escape.py), the
index's filters a small inline script, its trend lines inline SVG (no chart library needed for 100 rows)."""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Sequence
from urllib.parse import quote

from orchestrator.report.escape import html_text
from orchestrator.report.formats import fmt_ms, ratio
from orchestrator.verdicts.likeness import UNKNOWN, SeriesKey

from .assets import INDEX_JS, STYLE
from .matrix import index_matrix
from .model import Night, Summary
from .model import utc as when

INDEX, NIGHTS, REGRESSIONS = "index.html", "nights.html", "regressions.html"
SPARK_POINTS = 60  # the newest points a row's trend line draws


def shell(title: str, body: str, depth: int = 0, scripts: Sequence[str] = ()) -> str:
    """A page of the site; `depth`: how far below DIR it is (series/ pages are 1), for the shared assets."""
    up = "../" * depth
    tags = "".join(f'<script src="{up}{s}"></script>' if s.endswith(".js") else f"<script>{s}</script>" for s in scripts)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html_text(title)}</title>'
            f'<link rel="stylesheet" href="{up}{STYLE}"></head><body>'
            f'<nav><a href="{up}{INDEX}">Series</a><a href="{up}{NIGHTS}">Nights</a>'
            f'<a href="{up}{REGRESSIONS}">Regressions</a></nav>{body}{tags}</body></html>\n')


def latency(latest: tuple[float, float | None, float | None] | None) -> str:
    """A p50 with the range of its process runs' medians."""
    if latest is None:
        return "-"
    p50, low, high = latest
    spread = f" [{fmt_ms(low)}, {fmt_ms(high)}]" if low is not None and high is not None else ""
    return f"{fmt_ms(p50)} ms{spread}"


def verdict_badge(verdict: str | None, regressed: bool = False, confirmed: bool | None = None) -> str:
    if verdict is None:
        return '<span class="verdict">-</span>'
    mark = ' <span class="confirmed">confirmed</span>' if regressed and confirmed else ""
    return f'<span class="verdict {html_text(verdict)}">{html_text(verdict)}</span>{mark}'


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


def sparkline(summary: Summary) -> str:
    """The newest points' p50 as a small SVG line; regressions red."""
    values = summary.trend
    if not values:
        return ""
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    xy = [(2 + 116 * k / max(len(values) - 1, 1), 22 - 20 * (v - low) / span) for k, v in enumerate(values)]
    dots = "".join(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="#c0392b"/>'
                   for (x, y), bad in zip(xy, summary.trend_regressed, strict=True) if bad)
    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in xy)
    return (f'<svg class="spark" width="120" height="24" viewBox="0 0 120 24" role="img" '
            f'aria-label="trend of {len(values)} nights"><polyline fill="none" stroke="#2c3e50" stroke-width="1.2" '
            f'points="{line}"/>{dots}</svg>')


def index_page(series: Sequence[Summary], store: str, runs: int) -> str:
    if not series:
        body = (f"<h1>etfarm dashboard</h1><p class=\"empty\">No stored runs: the store {html_text(store)} holds "
                "nothing to publish yet (`etfarm run` and `etfarm nightly` record runs into it).</p>")
        return shell("etfarm dashboard: empty store", body)
    filters = "".join(f'<label>{k} <select data-filter="{k}"><option value="">all</option></select></label>'
                      for k in ("device", "model", "backend", "verdict"))
    groups: dict[str, list[Summary]] = {}  # by model and device, in the order of their most recently moved series
    for s in series:
        groups.setdefault(f"{s.key.model} on {s.key.device}", []).append(s)
    rows = []
    for name, members in groups.items():
        rows.append(f'<tr class="group" data-group="{html_text(name)}"><th colspan="8">{html_text(name)}</th></tr>')
        rows += [_index_row(s, name, [m.key for m in members]) for s in members]
    body = (f"<h1>etfarm dashboard</h1><p>{len(series)} series from {runs} stored runs in {html_text(store)}; "
            f"<span id=\"shown\">{len(series)}</span> shown, the most recently moved first.</p>{index_matrix(series)}"
            f'<p class="filters">{filters}</p><table id="series"><thead><tr><th>Model</th><th>Device</th>'
            "<th>Configuration</th><th>Trend</th><th>Latest p50 [runs' range]</th><th>Latest verdict</th>"
            f"<th>Change points</th><th>Moved</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")
    return shell("etfarm dashboard", body, scripts=[INDEX_JS])


def _index_row(s: Summary, group: str, siblings: Sequence[SeriesKey]) -> str:
    shown = "; ".join(f"{ratio(c.ratio)} at {c.commits}" for c in s.changes[-3:])
    more = f" (+{len(s.changes) - 3} earlier)" if len(s.changes) > 3 else ""
    attrs = " ".join(f'data-{k}="{html_text(v)}"' for k, v in (
        ("series", s.slug), ("group", group), ("device", s.key.device), ("model", s.key.model),
        ("backend", s.backend), ("verdict", s.verdict or "-")))
    return (f"<tr {attrs}><td><a href=\"series/{s.slug}.html\">{html_text(s.key.model)}</a></td>"
            f"<td>{html_text(s.key.device)}</td><td>{html_text(configuration(s.key, siblings))}</td><td>{sparkline(s)}</td>"
            f'<td class="num">{latency(s.latest)}</td>'
            f"<td>{verdict_badge(s.verdict, s.verdict_regressed, s.verdict_confirmed)}</td>"
            f"<td>{html_text(shown + more) or '-'}</td><td>{html_text(when(s.moved)) if s.moved else '-'}</td></tr>")


def nights_page(nights: Sequence[Night], out: str) -> str:
    if not nights:
        return shell("etfarm nights", "<h1>Nights</h1><p class=\"empty\">No nightly runs in the store yet.</p>")
    rows = "".join(
        f"<tr><td>{html_text(when(n.started))}</td><td>{_page_link(n.page, out, n.night_id)}</td>"
        f"<td>{html_text(', '.join(f'{count} {v}' for v, count in sorted(n.verdicts.items())) or '-')}</td>"
        f"<td>{html_text(' '.join(n.runs))}</td></tr>" for n in nights)
    body = (f"<h1>Nights</h1><p>{len(nights)} nights, newest first.</p><table><thead><tr><th>Started (UTC)</th>"
            f"<th>Night</th><th>Verdicts</th><th>Runs</th></tr></thead><tbody>{rows}</tbody></table>")
    return shell("etfarm nights", body)


def _culprit(sha: str) -> str:
    """The commit a night's bisect named (etfarm bisect), under the range it searched."""
    return f"<br>culprit <code>{html_text(sha[:12])}</code>" if sha else ""


def regressions_page(series: Sequence[Summary], out: str) -> str:
    found = sorted(((s, r) for s in series for r in s.regressions), key=lambda sr: (sr[1].started, sr[1].run_id),
                   reverse=True)
    if not found:
        return shell("etfarm regressions", "<h1>Regressions</h1><p class=\"empty\">No night found a regression.</p>")
    rows = "".join(
        f"<tr><td>{html_text(when(r.started))}</td>"
        f"<td><a href=\"series/{s.slug}.html\">{html_text(f'{s.key.model} on {s.key.device}')}</a> "
        f"{html_text(configuration(s.key, [x.key for x in series]))}</td>"
        f'<td class="num">{ratio(r.ratio)}</td><td>{confirmation(r.confirmed)}</td>'
        f"<td>{html_text(r.commits)}{_culprit(r.culprit)}</td>"
        f"<td>{_link(r.link.removeprefix('../'), r.run_id) if r.link.startswith('../') else html_text(r.run_id)}</td>"
        "</tr>" for s, r in found)
    body = (f"<h1>Regressions</h1><p>{len(found)} regressions found by nights, newest first.</p><table><thead><tr>"
            "<th>When (UTC)</th><th>Series</th><th>How much</th><th>Confirmed</th><th>Between commits</th><th>Run</th>"
            f"</tr></thead><tbody>{rows}</tbody></table>")
    return shell("etfarm regressions", body)


def confirmation(confirmed: bool | None) -> str:
    return {True: '<span class="confirmed">confirmed</span>', False: "not confirmed"}.get(confirmed, "not run again")  # type: ignore[arg-type]


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


def _page_link(page: str | None, out: str, text: str) -> str:
    return _link(page_href(page, out), text)


def _link(href: str, text: str) -> str:
    return f'<a href="{html_text(href)}">{html_text(text)}</a>' if href else html_text(text)
