"""A series' page (DIR/series/<slug>.html), built as a report page (report/page/blocks.py) that site.py writes with
the report's HTML renderer: its charts drawn by the shared script (assets.SERIES_JS) with the shared plotly.js from
the series' data script (DIR/data/series/<slug>.js, series.data_script); the same facts as text too (what regressed,
where it changed, the newest nights), so the page says them without a script."""

from __future__ import annotations

from collections.abc import Sequence

from orchestrator.report.formats import fmt_kib, fmt_ms, fmt_rate, ratio
from orchestrator.report.page.blocks import (
    Block,
    Bullets,
    Page,
    Paragraph,
    Script,
    ScriptChart,
    ScriptData,
    Section,
    Table,
    Text,
    badge,
    link_or_label,
    muted,
    text,
)
from orchestrator.verdicts.likeness import SeriesKey

from .assets import PLOTLY, SERIES_SCRIPT, TOP_LAYER_LINES
from .model import SeriesData, Summary
from .pages import configuration, confirmation, latency, site_page, verdict_text
from .series import CHANGE_WINDOW, SERIES_DATA

TABLE_NIGHTS = 30  # the newest nights listed as text (the charts draw all)
NIGHT_COLUMNS = ("Started (UTC)", "Run", "Commit", "p50 [runs' range]", "Verdict", "Load ms", "Peak RSS", "PSS",
                 "TTFT ms", "tokens/s")


def series_page(data: SeriesData, summary: Summary, siblings: Sequence[SeriesKey] = ()) -> Page:
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
    marks = [{"x": x.started, "label": f"{ratio(x.ratio)} {x.commits}"} for x in summary.changes]
    key = data.key
    meta = text(f"{configuration(key, siblings)}. Latest p50 {latency(summary.latest)}; latest verdict ",
                verdict_text(summary.verdict, summary.verdict_regressed, summary.verdict_confirmed),
                ". Click a point to open its night's page; drag to zoom.")
    sections = [_regressions(summary), _changes(summary),
                *(Section(text(title), blocks=(ScriptChart(chart),)) for chart, title in charts), _nights(data)]
    return site_page(f"{key.model} on {key.device}", sections, meta, depth=1, scripts=[
        ScriptData("series-changes", marks), Script(src=f"../{PLOTLY}"), Script(src=f"../{SERIES_DATA}/{data.slug}.js"),
        Script(src=f"../{SERIES_SCRIPT}")])


def _regressions(summary: Summary) -> Section:
    if not summary.regressions:
        return Section(text("Regressions"), blocks=(Paragraph(text("None found by a night.")),))
    items = tuple(
        text(link_or_label(r.run_id, r.link), f" ({r.started}, commit {r.commits}): regressed {ratio(r.ratio)}, ",
             text(badge("confirmed regression", "bad")) if r.confirmed else confirmation(r.confirmed))
        for r in reversed(summary.regressions))
    return Section(text("Regressions"), blocks=(Bullets(items),))


def _changes(summary: Summary) -> Section:
    if not summary.changes:
        return Section(text("Change points"), blocks=(Paragraph(text(f"None over the newest {CHANGE_WINDOW} nights.")),))
    items = tuple(text(f"{x.started}: {fmt_ms(x.before_ms)} ms to {fmt_ms(x.after_ms)} ms ({ratio(x.ratio)}), first at "
                       f"run {x.run_id}, commits {x.commits}") for x in summary.changes)
    return Section(text("Change points"), blocks=(Paragraph(text(muted(f"Over the newest {CHANGE_WINDOW} nights."))),
                                                  Bullets(items)))


def _nights(data: SeriesData) -> Section:
    c = data.columns
    shown = list(range(len(data)))[-TABLE_NIGHTS:][::-1]

    def verdict(k: int) -> Text:
        return text(verdict_text(c["verdict"][k], bool(c["regressed"][k]), c["confirmed"][k]),
                    " (confirmation run)" if c["confirms"][k] else "", " interfered" if c["flagged"][k] else "")

    rows = tuple(
        (text(c["started"][k]), text(link_or_label(c["run"][k], c["link"][k])), text(c["commit"][k] or "-"),
         text(latency((c["p50"][k], c["lo"][k], c["hi"][k])) if c["p50"][k] is not None else c["status"][k]),
         verdict(k), text(fmt_ms(c["load"][k])), text(fmt_kib(c["rss"][k])), text(fmt_kib(c["pss"][k])),
         text(fmt_ms(c["ttft"][k])), text(fmt_rate(c["tps"][k])))
        for k in shown)
    blocks: list[Block] = [Table(NIGHT_COLUMNS, rows, numeric=(False, False, False, True, False, True, True, True, True, True))]
    if len(data) > len(shown):
        blocks.append(Paragraph(text(muted(f"{len(data) - len(shown)} older nights in the charts."))))
    return Section(text("Nights"), blocks=tuple(blocks))
