"""A series' page (DIR/series/<slug>.html): one template; its charts drawn by the shared script (assets.SERIES_JS)
with the shared plotly.js from the series' data script (DIR/data/series/<slug>.js, series.data_script); the same
facts as text too (what regressed, where it changed, the newest nights), so the page says them without a script."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from orchestrator.report.escape import html_text
from orchestrator.report.formats import fmt_kib, fmt_ms, fmt_rate, ratio
from orchestrator.verdicts.likeness import SeriesKey

from .assets import PLOTLY, SERIES_SCRIPT, TOP_LAYER_LINES
from .model import SeriesData, Summary
from .pages import configuration, confirmation, latency, shell, verdict_badge
from .series import CHANGE_WINDOW, SERIES_DATA

TABLE_NIGHTS = 30  # the newest nights listed as text (the charts draw all)


def series_page(data: SeriesData, summary: Summary, siblings: Sequence[SeriesKey] = ()) -> str:
    """The page: the facts as text, the charts drawn by the shared script from the series' data script."""
    c = data.columns
    present = {name: any(v is not None for v in c[name])
               for name in ("load", "rss", "pss", "ttft", "tps", "uj", "delegate")}
    charts = [("latency", "Latency (p50 per night)")]
    charts += [(k, t) for k, t, shown in (
        ("load", "Load time", present["load"]), ("memory", "Peak memory, PSS, the delegate's", present["rss"] or present["pss"]),
        ("energy", "Energy per inference (above idle)", present["uj"]),
        ("llm", "LLM: time to first token and decode rate", present["ttft"] or present["tps"]),
        ("layers", f"Top layers (p50): the {TOP_LAYER_LINES} that cost most or moved most", bool(data.layer_names)))
        if shown]
    divs = "".join(f'<h2>{title}</h2><div class="chart" id="{key}"></div>' for key, title in charts)
    marks = [{"x": x.started, "label": f"{ratio(x.ratio)} {x.commits}"} for x in summary.changes]
    key = data.key
    body = (f"<h1>{html_text(key.model)} on {html_text(key.device)}</h1>"
            f"<p>{html_text(configuration(key, siblings))}. Latest p50 {latency(summary.latest)}; latest verdict "
            f"{verdict_badge(summary.verdict, summary.verdict_regressed, summary.verdict_confirmed)}. "
            "Click a point to open its night's page; drag to zoom.</p>"
            f"{_regressions(summary)}{_changes(summary)}{divs}{_table(data)}"
            f'<script type="application/json" id="series-changes">{_script_json(marks)}</script>')
    return shell(f"{key.model} on {key.device}", body, depth=1,
                 scripts=[PLOTLY, f"{SERIES_DATA}/{data.slug}.js", SERIES_SCRIPT])


def _regressions(summary: Summary) -> str:
    if not summary.regressions:
        return "<h2>Regressions</h2><p>None found by a night.</p>"
    items = "".join(
        f"<li>{_night_link(r.run_id, r.link)} ({html_text(r.started)}, commit {html_text(r.commits)}): "
        f"regressed {ratio(r.ratio)}, "
        + ('<span class="confirmed">confirmed regression</span>' if r.confirmed else confirmation(r.confirmed)) + "</li>"
        for r in reversed(summary.regressions))
    return f"<h2>Regressions</h2><ul>{items}</ul>"


def _changes(summary: Summary) -> str:
    if not summary.changes:
        return f"<h2>Change points</h2><p>None over the newest {CHANGE_WINDOW} nights.</p>"
    items = "".join(f"<li>{html_text(x.started)}: {fmt_ms(x.before_ms)} ms to {fmt_ms(x.after_ms)} ms "
                    f"({ratio(x.ratio)}), first at run {html_text(x.run_id)}, commits {html_text(x.commits)}</li>"
                    for x in summary.changes)
    return f"<h2>Change points</h2><p class=\"muted\">Over the newest {CHANGE_WINDOW} nights.</p><ul>{items}</ul>"


def _table(data: SeriesData) -> str:
    c = data.columns
    shown = list(range(len(data)))[-TABLE_NIGHTS:][::-1]
    p50 = [latency((c["p50"][k], c["lo"][k], c["hi"][k])) if c["p50"][k] is not None else html_text(c["status"][k])
           for k in shown]
    rows = "".join(
        f"<tr><td>{html_text(c['started'][k])}</td><td>{_night_link(c['run'][k], c['link'][k])}</td>"
        f"<td>{html_text(c['commit'][k] or '-')}</td><td class=\"num\">{p50[n]}</td>"
        f"<td>{verdict_badge(c['verdict'][k], bool(c['regressed'][k]), c['confirmed'][k]) if c['verdict'][k] else '-'}"
        f"{' (confirmation run)' if c['confirms'][k] else ''}{' interfered' if c['flagged'][k] else ''}</td>"
        f"<td class=\"num\">{fmt_ms(c['load'][k])}</td><td class=\"num\">{fmt_kib(c['rss'][k])}</td>"
        f"<td class=\"num\">{fmt_kib(c['pss'][k])}</td><td class=\"num\">{fmt_ms(c['ttft'][k])}</td>"
        f"<td class=\"num\">{fmt_rate(c['tps'][k])}</td></tr>" for n, k in enumerate(shown))
    older = f"<p class=\"muted\">{len(data) - len(shown)} older nights in the charts.</p>" if len(data) > len(shown) else ""
    return ("<h2>Nights</h2><table><thead><tr><th>Started (UTC)</th><th>Run</th><th>Commit</th><th>p50 [runs' range]</th>"
            "<th>Verdict</th><th>Load ms</th><th>Peak RSS</th><th>PSS</th><th>TTFT ms</th><th>tokens/s</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>{older}")


def _night_link(run_id: str, href: str | None) -> str:
    return f'<a href="{html_text(href)}">{html_text(run_id)}</a>' if href else html_text(run_id)


def _script_json(data: Any) -> str:
    """JSON inside a <script>: no `</` can close it early (a model named `</script>` stays text)."""
    return json.dumps(data, separators=(",", ":")).replace("</", "<\\/")
