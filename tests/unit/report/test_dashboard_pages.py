"""The dashboard's pages are report pages (issue 36 item 3): built as page/blocks data (index, nights, regressions,
series pages) and written by the report's one HTML renderer, so every name a user chose goes through its one
escaping rule (escape.html_text), in text and in the attributes the index's filters read."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest

from orchestrator.report.dashboard.assets import INDEX_JS
from orchestrator.report.dashboard.model import SeriesData, Summary
from orchestrator.report.dashboard.pages import index_page, regressions_page
from orchestrator.report.dashboard.series import SERIES_DATA, data_from_script, ordered
from orchestrator.report.dashboard.series_page import series_page
from orchestrator.report.dashboard.site import SITE_MANIFEST, publish
from orchestrator.report.escape import html_text
from orchestrator.report.page.blocks import (
    Filters,
    Page,
    Row,
    ScriptChart,
    ScriptData,
    Section,
    Span,
    Table,
    inline_chart,
    text,
)
from orchestrator.report.render.html import render_html
from orchestrator.report.render.markdown import render_markdown
from orchestrator.report.render.trend_line import trend_line
from orchestrator.store import open_store
from tests.helpers.synthetic_store import Nights, record_nights

# markup, an attribute breaker, and a terminal escape (html_text shows it as `\x1b`: the renderer's rule, not html.escape's)
HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(1)>\x1b[31m'
PLAN = Nights(3, devices=("pixel8", "rpi5"), models=(HOSTILE, "mlp"), steps={("rpi5", HOSTILE, "xnnpack"): (2, 1.6)})
# what the renderer writes: the report's elements, the dashboard's filters and scripts, the trend lines' SVG
TAGS = {"html", "head", "meta", "link", "title", "body", "main", "header", "h1", "h2", "div", "nav", "a", "section", "p",
        "table", "thead", "tbody", "tr", "th", "td", "b", "span", "ul", "li", "label", "select", "option", "script",
        "svg", "polyline", "circle"}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dashboard")
    with open_store(root / "s.db") as store:
        record_nights(store, root / "runs", PLAN)
    publish(root / "site", root / "s.db")
    return root / "site"


def summaries(site: Path) -> list[Summary]:
    manifest = json.loads((site / SITE_MANIFEST).read_text())
    return ordered(Summary.from_json(raw) for raw in manifest["series"].values())


def series_data(site: Path, summary: Summary) -> SeriesData:
    return data_from_script(summary.key, (site / SERIES_DATA / f"{summary.slug}.js").read_text())


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []  # the text inside each <script> element
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        (self.scripts if self._in_script else self.text).append(data)


def parsed(markup: str) -> Elements:
    parser = Elements()
    parser.feed(markup)
    parser.close()
    return parser


def test_each_page_the_site_writes_is_its_page_of_blocks_written_by_the_report_renderer(site: Path) -> None:
    series = summaries(site)
    index = index_page(series, str(site.parent / "s.db"), 4)
    assert isinstance(index, Page) and all(isinstance(s, Section) for s in index.sections)
    (table,) = [b for s in index.sections for b in s.blocks if isinstance(b, Table) and b.anchor == "series"]
    assert all(isinstance(r, Row) for r in table.rows)  # rows that carry the keys the filters choose by
    assert [dict(r.data)["model"] for r in table.rows if not r.group] == [s.key.model for s in series]  # type: ignore[union-attr]
    assert (site / "index.html").read_text() == render_html(index)
    assert (site / "regressions.html").read_text() == render_html(regressions_page(series, str(site)))
    for summary in series:
        page = series_page(series_data(site, summary), summary, [s.key for s in series])
        charts = [b.anchor for s in page.sections for b in s.blocks if isinstance(b, ScriptChart)]
        assert charts[:2] == ["latency", "load"] and "llm" not in charts
        assert (site / "series" / f"{summary.slug}.html").read_text() == render_html(page)


def test_a_hostile_model_name_is_text_on_every_page_through_the_renderers_one_escape(site: Path) -> None:
    shown = html_text(HOSTILE)  # `&lt;script&gt;...` with the escape character written `\x1b`
    pages = {p.relative_to(site).as_posix(): p.read_text() for p in site.rglob("*.html") if p.parent.name != "nights"}
    assert len([p for p in pages if p.startswith("series/")]) == 4
    for name, markup in pages.items():
        html = parsed(markup)
        assert {tag for tag, _ in html.tags} <= TAGS, name
        assert not any(key.startswith("on") for _, attrs in html.tags for key in attrs), name
        links = [v for _, attrs in html.tags for k, v in attrs.items() if k in ("href", "src")]
        assert all(v == "data:," or (v and ":" not in v) for v in links), (name, links)
        assert all(s in (INDEX_JS,) or s.startswith("[") for s in html.scripts), name  # ours, or JSON data
        if name in ("index.html", "regressions.html") or name.startswith("series/script-alert"):  # the pages naming it
            assert shown in markup and HOSTILE.replace("\x1b", "\\x1b") in "".join(html.text), name
    index = parsed(pages["index.html"])
    assert HOSTILE.replace("\x1b", "\\x1b") in [a.get("data-model") for tag, a in index.tags if tag == "tr"]


def test_a_link_a_page_may_not_hold_is_its_label_alone(site: Path) -> None:
    """The series' data is a file of the site: a `javascript:` link someone wrote into it is shown as the run's id."""
    summary = next(s for s in summaries(site) if s.regressions)
    data = series_data(site, summary)
    tampered = replace(data, columns={**data.columns, "link": ["javascript:alert(1)"] * len(data)})
    bad = [replace(r, link="javascript:alert(1)") for r in summary.regressions]
    markup = render_html(series_page(tampered, replace(summary, regressions=tuple(bad))))
    assert "javascript" not in markup
    assert all(f"<td>{run}</td>" in markup for run in data.columns["run"])


def test_the_renderer_writes_the_dashboards_blocks(tmp_path: Path) -> None:
    trend = trend_line("t", [1.0, 3.0, 2.0], [False, True, False])
    assert trend is not None
    table = Table(("Model", "p50"), (
        Row((text("cnn on rpi5"),), (("group", "cnn on rpi5"),), group=True),
        Row((text("<b>cnn</b>"), text("2.0", inline_chart(trend))), (("model", '"><b>'),))), numeric=(False, True),
        anchor="series")
    page = Page("t", text("shown: ", Span("1", anchor="shown")), (Section((), blocks=(Filters(("model",)), table)),
                                                                  Section(text("Latency"), blocks=(ScriptChart("lat"),))),
                heading="h", site=(("Series", "index.html"),), stylesheet="assets/x.css",
                scripts=(ScriptData("d", ["</script><!--"]),))
    markup = render_html(page)
    assert '<tr class="group" data-group="cnn on rpi5"><th colspan="2">cnn on rpi5</th></tr>' in markup
    assert '<tr data-model="&quot;&gt;&lt;b&gt;"><td>&lt;b&gt;cnn&lt;/b&gt;</td><td class="n">2.0<svg' in markup
    assert '<select data-filter="model">' in markup and '<div class="chart" id="lat"></div>' in markup
    assert '<table id="series">' in markup
    assert '<span id="shown">1</span>' in markup and "<title>t</title>" in markup and "<h1>h</h1>" in markup
    assert '<link rel="stylesheet" href="assets/x.css">' in markup and "<style>" not in markup
    data = re.search(r'<script type="application/json" id="d">(.*?)</script>', markup)
    assert data is not None and json.loads(data.group(1)) == ["</script><!--"] and "<" not in data.group(1)
    markdown = render_markdown(page)  # the same page in Markdown: no script, so no filters and no plotly box
    assert "select" not in markdown and "lat" not in markdown and "**cnn on rpi5**" in markdown
    assert "trend of 3 nights" in markdown


def test_the_trend_line_spans_the_cell_and_marks_regressed_nights() -> None:
    trend = trend_line("t", [1.0, 3.0, 2.0], [False, True, False])
    assert trend is not None and trend.title == "trend of 3 nights"
    found = re.search(r'points="([^"]+)"', trend.svg)
    assert found is not None
    xy = [tuple(map(float, p.split(","))) for p in found.group(1).split()]
    assert [x for x, _ in xy] == [2.0, 60.0, 118.0]  # first to last across the 120 px cell, 2 px in
    assert xy[1][1] == 2.0 and xy[0][1] == 22.0 and xy[2][1] == 12.0  # the highest p50 on top, the lowest at the bottom
    assert re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', trend.svg) == [("60.0", "2.0")]  # the regressed night
    assert trend_line("t", [], []) is None


def test_publishing_imports_nothing_heavy(tmp_path: Path) -> None:
    probe = ("import sys\nfrom pathlib import Path\nfrom orchestrator.report.dashboard.site import publish\n"
             "from orchestrator.store import open_store\nfrom tests.helpers.synthetic_store import Nights, record_nights\n"
             f"root = Path({str(tmp_path)!r})\n"
             "with open_store(root / 's.db') as store:\n    record_nights(store, root / 'runs', Nights(2))\n"
             "publish(root / 'site', root / 's.db')\n"
             "print('HEAVY', sorted({m.split('.')[0] for m in sys.modules} & "
             "{'torch', 'executorch', 'pandas', 'matplotlib', 'scipy', 'jinja2', 'dask'}))\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                            cwd=Path(__file__).parents[3])
    assert result.returncode == 0, result.stderr
    assert "HEAVY []" in result.stdout and (tmp_path / "site" / "index.html").is_file()
