"""A series' page (DIR/series/<slug>.html): one template, its data as JSON drawn by the shared script
(assets.SERIES_SCRIPT) with the shared plotly.js; the same facts as text too (what regressed, where it changed, every
night), so the page says them without a script."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from orchestrator.report.escape import html_text
from orchestrator.report.formats import fmt_kib, fmt_ms, fmt_rate, ratio

from .assets import PLOTLY, SERIES_SCRIPT
from .model import Point, Series
from .pages import commit, commits, configuration, latency, page_href, shell, verdict_badge, when

TOP_LAYER_LINES = 6  # layer trends drawn: those that cost most in the newest night, then those that moved most
TABLE_NIGHTS = 200  # the newest nights listed as text (the charts draw all)


def series_page(series: Series, series_dir: str) -> str:
    """The page; `series_dir` is where it is written (links to night pages are relative to it)."""
    data = chart_data(series, series_dir)
    charts = [("latency", "Latency (p50 per night)")]
    charts += [(k, t) for k, t in (("load", "Load time"), ("memory", "Peak memory and PSS"),
                                   ("llm", "LLM: time to first token and decode rate")) if data[k]]
    charts += [("layers", "Top layers (p50)")] if data["layers"] else []
    divs = "".join(f'<h2>{title}</h2><div class="chart" id="{key}"></div>' for key, title in charts)
    key = series.key
    body = (f"<h1>{html_text(key.model)} on {html_text(key.device)}</h1>"
            f"<p>{html_text(configuration(series))}. Latest p50 {latency(series.latest)}; latest verdict "
            f"{verdict_badge(series.verdict)}. Click a point to open its night's page; drag to zoom.</p>"
            f"{_regressions(series, series_dir)}{_changes(series)}{divs}{_table(series, series_dir)}"
            f'<script type="application/json" id="series-data">{_script_json(data)}</script>')
    return shell(f"{key.model} on {key.device}", body, depth=1, scripts=[PLOTLY, SERIES_SCRIPT])


def chart_data(series: Series, series_dir: str) -> dict[str, Any]:
    """The page's numbers, one array per figure aligned with `x` (a night's start, UTC)."""
    points = series.measured
    rows = [p.row for p in points]
    intervals = [p.interval for p in points]
    load = [r.load_ms for r in rows]
    rss = [r.peak_rss_kb / 1024 if r.peak_rss_kb is not None else None for r in rows]
    pss = [r.pss_kb / 1024 if r.pss_kb is not None else None for r in rows]
    ttft, tps = [r.ttft_ms for r in rows], [r.decode_tokens_per_s for r in rows]
    return {
        "points": {"x": [when(r.started) for r in rows], "run": [r.run_id for r in rows],
                   "commit": [commit(r.git_commit) for r in rows], "link": [page_href(p.page, series_dir) for p in points],
                   "p50": [r.p50_ms for r in rows],
                   "lo_err": [r.p50_ms - i[0] if i and r.p50_ms is not None else 0 for r, i in zip(rows, intervals, strict=True)],
                   "hi_err": [i[1] - r.p50_ms if i and r.p50_ms is not None else 0 for r, i in zip(rows, intervals, strict=True)],
                   "flagged": [r.flagged > 0 for r in rows], "regressed": [p.regressed for p in points],
                   "confirmed": [p.regressed and bool(p.confirmed) for p in points],
                   "load": load, "rss_mib": rss, "pss_mib": pss, "ttft": ttft, "tps": tps},
        "changes": [{"x": when(c.started), "label": f"{ratio(c.ratio)} {commits(series.commit_before(c.run_id), c.git_commit)}"}
                    for c in series.changes],
        "load": _any(load), "memory": _any(rss) or _any(pss), "llm": _any(ttft) or _any(tps),
        "layers": top_layers(points),
    }


def top_layers(points: Sequence[Point]) -> list[dict[str, Any]]:
    """The layers that cost most in the newest night, then those that moved most (newest / oldest p50)."""
    if not points:
        return []
    per_night = [dict(p.row.layers) for p in points]
    names = list(dict.fromkeys(n for night in per_night for n in night))
    first = {n: next(night[n] for night in per_night if n in night) for n in names}
    last = {n: next(night[n] for night in reversed(per_night) if n in night) for n in names}
    costly = sorted(per_night[-1], key=lambda n: -per_night[-1][n])[:TOP_LAYER_LINES // 2]
    moved = sorted((n for n in names if n not in costly and first[n] > 0),
                   key=lambda n: -abs(last[n] / first[n] - 1))[:TOP_LAYER_LINES - len(costly)]
    return [{"name": n, "values": [night.get(n) for night in per_night]} for n in (*costly, *moved)]


def _regressions(series: Series, series_dir: str) -> str:
    found = [p for p in series.points if p.regressed]
    if not found:
        return "<h2>Regressions</h2><p>None found by a night.</p>"
    items = "".join(
        f"<li>{_night_link(p, series_dir)} ({html_text(when(p.row.started))}, commit "
        f"{html_text(commits(series.commit_before(p.row.run_id), p.row.git_commit))}): regressed "
        f"{ratio(p.mark.ratio if p.mark else None)}, "
        + ('<span class="confirmed">confirmed regression</span>' if p.confirmed else
           ("not confirmed" if p.confirmed is False else "not run again")) + "</li>" for p in reversed(found))
    return f"<h2>Regressions</h2><ul>{items}</ul>"


def _changes(series: Series) -> str:
    if not series.changes:
        return "<h2>Change points</h2><p>None over the series.</p>"
    items = "".join(f"<li>{html_text(when(c.started))}: {fmt_ms(c.before_ms)} ms to {fmt_ms(c.after_ms)} ms "
                    f"({ratio(c.ratio)}), first at run {html_text(c.run_id)}, commits "
                    f"{html_text(commits(series.commit_before(c.run_id), c.git_commit))}</li>" for c in series.changes)
    return f"<h2>Change points</h2><ul>{items}</ul>"


def _table(series: Series, series_dir: str) -> str:
    shown = series.points[-TABLE_NIGHTS:][::-1]
    rows = "".join(
        f"<tr><td>{html_text(when(p.row.started))}</td><td>{_night_link(p, series_dir)}</td>"
        f"<td>{html_text(commit(p.row.git_commit))}</td>"
        f"<td class=\"num\">{latency(p) if p.row.p50_ms is not None else html_text(p.row.status)}</td>"
        f"<td>{verdict_badge(p)}{' (confirmation run)' if p.confirms else ''}"
        f"{' interfered' if p.row.flagged else ''}</td><td class=\"num\">{fmt_ms(p.row.load_ms)}</td>"
        f"<td class=\"num\">{fmt_kib(p.row.peak_rss_kb)}</td><td class=\"num\">{fmt_kib(p.row.pss_kb)}</td>"
        f"<td class=\"num\">{fmt_ms(p.row.ttft_ms)}</td><td class=\"num\">{fmt_rate(p.row.decode_tokens_per_s)}</td></tr>"
        for p in shown)
    older = f"<p class=\"muted\">{len(series.points) - len(shown)} older nights in the charts.</p>" \
        if len(series.points) > len(shown) else ""
    return ("<h2>Nights</h2><table><thead><tr><th>Started (UTC)</th><th>Run</th><th>Commit</th><th>p50 [runs' range]</th>"
            "<th>Verdict</th><th>Load ms</th><th>Peak RSS</th><th>PSS</th><th>TTFT ms</th><th>tokens/s</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>{older}")


def _night_link(point: Point, series_dir: str) -> str:
    href = page_href(point.page, series_dir)
    text = html_text(point.row.run_id)
    return f'<a href="{html_text(href)}">{text}</a>' if href else text


def _any(values: Sequence[float | None]) -> bool:
    return any(v is not None for v in values)


def _script_json(data: dict[str, Any]) -> str:
    """JSON inside a <script>: no `</` can close it early (a model named `</script>` stays text)."""
    return json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
