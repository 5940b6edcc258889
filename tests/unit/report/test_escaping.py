"""Names are the user's: in every format, a hostile model, device, module or op name is shown, never obeyed.

Issue 21 item 4. A property test (hypothesis) over names built from the characters that make markup
(HTML tags and entities, Markdown emphasis, links, code spans, table pipes, headings and list markers),
control characters (terminal escape sequences, newlines) and anything else unicode offers. For each
name, a run whose module and op carry it (its device and model too when it is a plain name: the
manifest refuses any other device or model name, base/codec.py) is reported in every format:
- HTML: parsed back, the page has only the elements and attributes etfarm writes, and the name is
  its text;
- Markdown: rendered by a CommonMark + GFM tables renderer (markdown-it, raw HTML allowed, as GitHub
  summaries are), no element comes out of the name, every table row keeps its cells, and the name
  is the rendered text;
- CSV and JSON: read back, the name is exactly the name;
- terminal: no control character but the line breaks etfarm writes, and each table keeps its lines.
"""

from __future__ import annotations

import csv
import io
import json
import re
from html.parser import HTMLParser
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orchestrator.profiles.stat_rows import read_stats_csv
from orchestrator.report.builders.report import build_report
from orchestrator.report.escape import visible
from orchestrator.report.page.sections import run_page
from orchestrator.report.render.export import render_csv, render_json
from orchestrator.report.render.html import render_html
from orchestrator.report.render.markdown import render_markdown
from orchestrator.report.terminal.summary import summary, wall_clock_lines
from orchestrator.results.model import load_manifest
from orchestrator.results.record import RunRecord
from tests.helpers.synthetic_run import make_run_dir

HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "a|b", "**bold**", "_x_", "`tick`",
           "[link](javascript:alert(1))", "![i](http://e/x.png)", "&lt;b&gt;", "# heading", "1. item", "- item",
           "> quote", "\x1b[2J\x1b[31mred", "line\nbreak", "tab\there", "\\*escaped\\*", "~~strike~~", "$x$",
           "<!-- c -->", "a\rb", "\x00nul", "<details>"]
MARKUP = st.sampled_from(list("<>&|*_`[]()!#-+=~$\\\"'\n\r\t\x1b\x00 ./;:") + ["<script>", "</td>", "&amp;", "**"])
NAMES = st.one_of(st.sampled_from(HOSTILE),
                  st.lists(st.one_of(MARKUP, st.text(min_size=1, max_size=3)), min_size=1, max_size=8).map("".join))

HTML_TAGS = {"html", "head", "meta", "link", "title", "style", "body", "main", "header", "h1", "h2", "h3", "h4", "div",
             "nav", "a", "section", "p", "table", "thead", "tbody", "tr", "th", "td", "b", "span", "ul", "li", "details",
             "summary", "figure", "figcaption"}
MD_TAGS = {"h2", "h3", "h4", "p", "strong", "em", "code", "table", "thead", "tbody", "tr", "th", "td", "ul", "li", "a",
           "details", "summary"}


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []
        self.rows: list[int] = []  # cells per table row
        self._cells = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))
        if tag == "tr":
            self._cells = 0
        elif tag in ("td", "th"):
            self._cells += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "tr":
            self.rows.append(self._cells)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parsed(markup: str) -> Elements:
    parser = Elements()
    parser.feed(markup)
    parser.close()
    return parser


def plain_name(name: str, fallback: str) -> str:
    """The name as a device or model name when the manifest takes it, else a plain one that is still Markdown
    emphasis (`_x_`)."""
    return name if PLAIN.match(name) else fallback


PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")  # base/codec.py's device and model names


def run_with(tmp: Path, name: str) -> Path:
    root = tmp / f"run-{abs(hash(name))}"
    return make_run_dir(root, devices=(plain_name(name, "d_x_"), "plain"), models=(plain_name(name, "m_x_"),),
                        module=name, op=name, runs=3, iterations=5)


def strings(value: object) -> list[str]:
    """Every string in a JSON document."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings(v)]
    return []


def flat(text: str) -> str:
    return " ".join(text.split())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=NAMES)
def test_every_format_shows_a_hostile_name_as_text(tmp_path: Path, name: str) -> None:
    run = run_with(tmp_path, name)
    report = build_report(RunRecord(run))
    page = run_page(report)
    shown = flat(visible(name))

    html = parsed(render_html(page))
    assert {tag for tag, _ in html.tags} <= HTML_TAGS
    assert not any(key.startswith("on") for _, attrs in html.tags for key, _ in attrs)
    links = [value for _, attrs in html.tags for key, value in attrs if key in ("href", "src")]
    assert all(v == "data:," or (v and ":" not in v) for v in links), links  # the favicon stopper, else in-page links
    assert shown in flat("".join(html.text))

    from markdown_it import MarkdownIt

    rendered = parsed(MarkdownIt("commonmark", {"html": True}).enable("table").render(render_markdown(page)))
    assert {tag for tag, _ in rendered.tags} <= MD_TAGS, name
    assert not any(key in ("href", "src") and value and ":" in value for _, attrs in rendered.tags for key, value in attrs)
    widths = [n for n in rendered.rows]
    assert all(n >= 2 for n in widths)  # no row collapsed into one cell
    assert shown in flat("".join(rendered.text)), name

    device, model = plain_name(name, "d_x_"), plain_name(name, "m_x_")
    rows = list(csv.DictReader(io.StringIO(render_csv(report), newline="")))
    assert {r["device"] for r in rows} == {device, "plain"} and {r["model"] for r in rows} == {model}
    data = json.loads(render_json(report))
    assert data["devices"] == [device, "plain"] and data["models"][0]["name"] == model
    assert name in strings(data)  # the op and its module, exactly

    job = load_manifest(run)
    terminal = "\n".join([summary(read_stats_csv(run / "stats.csv")), *wall_clock_lines(job)])
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", terminal)
    assert visible(name[:20]) in terminal  # in the op tables (names clipped at 40 characters)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=NAMES)
def test_the_ab_page_shows_a_hostile_name_as_text(tmp_path: Path, name: str) -> None:
    """The same for the A/B page (verdicts, structure diff, trust, B's report), HTML and Markdown."""
    from markdown_it import MarkdownIt

    from orchestrator.report.builders.comparison import comparison_view
    from orchestrator.report.page.comparison import comparison_page
    from orchestrator.verdicts.compare import compare_jobs

    device, model = plain_name(name, "d_x_"), plain_name(name, "m_x_")
    a = make_run_dir(tmp_path / f"a-{abs(hash(name))}", devices=(device,), models=(model,), module=name, op=name, runs=3,
                     iterations=5, run_id="20261122-000000-aaaa")
    b = make_run_dir(tmp_path / f"b-{abs(hash(name))}", devices=(device,), models=(model,), module=name + "2", op=name,
                     runs=3, iterations=5, run_id="20261122-000001-bbbb", seed=1)
    comparison = compare_jobs(RunRecord(a), RunRecord(b), per_op=False)
    page = comparison_page(comparison_view(comparison, [build_report(RunRecord(b))], f"A/B {name}", tmp_path))
    shown = flat(visible(name))
    html = parsed(render_html(page))
    assert {tag for tag, _ in html.tags} <= HTML_TAGS and shown in flat("".join(html.text))
    rendered = parsed(MarkdownIt("commonmark", {"html": True}).enable("table").render(render_markdown(page)))
    assert {tag for tag, _ in rendered.tags} <= MD_TAGS and shown in flat("".join(rendered.text))
